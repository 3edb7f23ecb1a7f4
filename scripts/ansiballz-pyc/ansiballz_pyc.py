"""A bytecode cache for the Python that Ansible's module payloads import from their zip.

AnsiballZ runs every task's module from a zip of the module and the module_utils it needs,
and Python imports from a zip without reading or writing .pyc files: each task compiles
ansible.module_utils.basic and the rest again (ansible/ansible#36275). In the lab's guests,
under emulation, that was about a third of what a task costs.

install(DIRECTORY) makes zipimport keep the code object it compiles from a payload's source
(a path inside an `ansible_<module>_payload.zip`) in DIRECTORY, under the sha256 of the
interpreter's bytecode magic, the optimization level and the source, and load it from there
the next time. The code is what compile() makes of the same source, renamed to the file of
the payload that asked for it, so a traceback names the file the module ran from. Nothing
else is cached; a cache file that cannot be read or written is compiled around.

The lab's guest image loads it from a .pth file (scripts/vm/build-image.sh), and the test
suite's Python from sitecustomize.py beside this file (scripts/test).
"""
import os
import zipimport

# What AnsiballZ names a payload: <tmp>/ansible_<module>_payload_<random>/ansible_<module>_payload.zip
_PAYLOAD = '_payload.zip' + os.sep


def _renamed(code, filename):
    """CODE, and every code object in it, with FILENAME as its file."""
    consts = tuple(_renamed(const, filename) if isinstance(const, type(code)) else const
                   for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def install(directory):
    """Cache in DIRECTORY the code zipimport compiles from module payloads (a no-op where this
    Python's zipimport has no _compile_source)."""
    compile_source = getattr(zipimport, '_compile_source', None)
    if compile_source is None or getattr(compile_source, 'ansiballz_pyc', False):
        return

    def cached(pathname, source):
        if _PAYLOAD not in pathname:
            return compile_source(pathname, source)
        # Imported here, at the first payload import, not at every interpreter start.
        import hashlib
        import marshal
        import sys
        from _frozen_importlib_external import MAGIC_NUMBER
        key = hashlib.sha256(MAGIC_NUMBER + bytes([sys.flags.optimize]) + source).hexdigest()
        path = os.path.join(directory, key)
        try:
            with open(path, 'rb') as cache:
                return _renamed(marshal.load(cache), pathname)
        except (OSError, EOFError, ValueError, TypeError):
            pass
        code = compile_source(pathname, source)
        partial = '%s.%d' % (path, os.getpid())
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            with open(partial, 'wb') as cache:
                marshal.dump(code, cache)
            os.replace(partial, path)
        except OSError:
            try:
                os.unlink(partial)
            except OSError:
                pass
        return code

    cached.ansiballz_pyc = True
    zipimport._compile_source = cached
