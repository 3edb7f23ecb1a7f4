#!/usr/bin/python
"""Test module: returns unchanged with one warning (the progress callback gathers it)."""
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={'message': {'type': 'str', 'required': True}}, supports_check_mode=True)
    module.warn(module.params['message'])
    module.exit_json(changed=False)


if __name__ == '__main__':
    main()
