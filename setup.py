"""Ships trexlab's non-Python content (notebooks, playbooks, roles, TRex profiles, experiment specs; the list
is trexlab.paths.CONTENT) inside the package as trexlab/data, so that an installed trexlab finds it through
trexlab.paths. Everything else about the package is declared in pyproject.toml."""

import importlib.util
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# trexlab/paths.py alone (standard library only): importing the package would need its dependencies, which a
# build environment does not have.
_spec = importlib.util.spec_from_file_location("_trexlab_paths", ROOT / "trexlab" / "paths.py")
_paths = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _paths  # dataclasses looks its module up there
_spec.loader.exec_module(_paths)
CONTENT = _paths.CONTENT
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


class BuildWithContent(build_py):
    def run(self):
        super().run()
        data = Path(self.build_lib) / "trexlab" / "data"
        shutil.rmtree(data, ignore_errors=True)  # a build directory kept from an earlier build: no stale files
        for name in CONTENT:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, data / name, ignore=SKIP, dirs_exist_ok=True)
            else:
                data.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, data / name)


setup(cmdclass={"build_py": BuildWithContent})
