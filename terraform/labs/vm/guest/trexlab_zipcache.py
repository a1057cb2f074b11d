"""Compiled code of zip-imported modules, kept across runs (guest of the VM lab only).

Ansible sends every task's module as a zip that Python imports and compiles anew: on an emulated (TCG)
DUT that compilation costs about a second per task. This keeps the compiled code, keyed by the
source's SHA-256 (and the interpreter's magic number), in /var/cache; the result is exactly what the
compiler would produce again. Loaded at interpreter start by trexlab-zipcache.pth.
"""

import hashlib
import importlib.util
import marshal
import os
import zipimport

CACHE = "/var/cache/trexlab-zipimport"
_compile = zipimport._compile_source


def _compile_cached(pathname, source):
    name = hashlib.sha256(importlib.util.MAGIC_NUMBER + source).hexdigest()
    path = os.path.join(CACHE, name)
    try:
        with open(path, "rb") as f:
            return marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile(pathname, source)
    try:
        os.makedirs(CACHE, exist_ok=True)
        with open(f"{path}.{os.getpid()}", "wb") as f:
            marshal.dump(code, f)
        os.replace(f"{path}.{os.getpid()}", path)
    except OSError:
        pass
    return code


zipimport._compile_source = _compile_cached
