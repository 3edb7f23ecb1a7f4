"""Report msg as a warning of this task (nothing when msg is empty); changes nothing.

The progress callback shows task warnings when they happen and repeats them in its closing
block, so a lifecycle notice is seen at the end of the run.
"""
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        message = str(self._task.args.get('msg') or '').strip()
        result.update(changed=False, msg=message or 'nothing to report')
        if message:
            result['warnings'] = [message]
        return result
