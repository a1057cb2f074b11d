"""Where trexlab finds what is not Python: notebooks, TRex profiles, playbooks and roles, experiment specs, swtester.

One settings object, resolved once. trexlab runs either from its source checkout (make setup's editable
install: the content is the checkout's own, and provenance records its git commit) or from an installed
package (``pip install <checkout>``: the same content ships inside the package as ``trexlab/data``, built
by setup.py). TREXLAB_HOME points at another tree of the same layout (a checkout or a copy of the data)
and wins over both; TREXLAB_SWTESTER names the swtester binary to run on a namespace tester.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

#: The package's own directory; the one place a path is derived from where the code lies.
PACKAGE = Path(__file__).resolve().parent
#: The directories and files of the tree trexlab needs at run time (setup.py ships exactly these).
CONTENT = ("analysis", "experiments", "playbooks", "ansible_collections", "trex-profiles", "ansible.cfg")
#: Where the trexlab.lab Ansible collection (roles, module, filters) lies inside such a tree.
COLLECTION = Path("ansible_collections") / "trexlab" / "lab"


@dataclass(frozen=True)
class Paths:
    """Locations of trexlab's content (absolute paths)."""

    #: The tree holding CONTENT: the source checkout, TREXLAB_HOME, or the installed package's data.
    root: Path
    #: The source checkout when trexlab runs from one (its git commit is provenance), else None.
    checkout: Path | None
    #: The swtester binary run on a namespace tester, or None when none was built or installed.
    swtester: Path | None

    @property
    def notebooks(self) -> Path:
        return self.root / "analysis"

    @property
    def experiments(self) -> Path:
        return self.root / "experiments"

    @property
    def playbooks(self) -> Path:
        return self.root / "playbooks"

    @property
    def collection(self) -> Path:
        """The trexlab.lab Ansible collection's tree (galaxy.yml, roles/, plugins/)."""
        return self.root / COLLECTION

    @property
    def roles(self) -> Path:
        return self.collection / "roles"

    @property
    def trex_profiles(self) -> Path:
        return self.root / "trex-profiles"

    @property
    def ansible_cfg(self) -> Path:
        return self.root / "ansible.cfg"


def _is_tree(path: Path) -> bool:
    return (path / COLLECTION / "roles").is_dir() and (path / "playbooks").is_dir()


def resolve(environ: os._Environ | dict | None = None) -> Paths:
    """The settings for an environment (os.environ by default); see the module's docstring for the order."""
    environ = os.environ if environ is None else environ
    source = PACKAGE.parent
    checkout = source if (source / "pyproject.toml").is_file() and _is_tree(source) else None
    if environ.get("TREXLAB_HOME"):
        root = Path(environ["TREXLAB_HOME"]).resolve()
    elif checkout is not None:
        root = checkout
    else:
        root = PACKAGE / "data"
    if environ.get("TREXLAB_SWTESTER"):
        swtester: Path | None = Path(environ["TREXLAB_SWTESTER"])
    elif checkout is not None:  # built or not: the checkout's own (software.py says to run make swtester)
        swtester = checkout / "swtester" / "swtester"
    else:
        found = shutil.which("swtester")
        swtester = Path(found) if found else None
    return Paths(root=root, checkout=checkout, swtester=swtester)


@functools.cache
def paths() -> Paths:
    """The settings of this process (resolved on first use)."""
    return resolve()
