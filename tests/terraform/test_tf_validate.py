"""make lint's terraform validate (scripts/tf-validate.sh) writes nothing in the checkout but under .cache.

make test runs lint beside tests that compare the checkout before and after a refused input
(tests/test_hostile_front_door.py). terraform init writes a module's dependency lock file beside its .tf files
when it installs a provider: lint's init of the MAAS lab did so in the checkout, and CI's make test of 9230df7
failed on that file appearing in the middle of such a comparison. The script runs here in a copy of what it
reads, so that the checkout's own lock file (a MAAS lab-up of another test writes it) can neither hide nor fake
the result.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from tftools import NEEDS_MIRROR

from labtools import REPO

pytestmark = pytest.mark.terraform


def files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".cache" not in p.relative_to(root).parts)


@NEEDS_MIRROR
def test_validate_writes_nothing_beside_the_modules(tmp_path):
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for script in ("common.sh", "tf-validate.sh"):
        shutil.copy2(REPO / "scripts" / script, root / "scripts" / script)
    left_by_a_lab = shutil.ignore_patterns(".terraform", ".cache", "terraform.tfstate*", ".terraform.lock.hcl*")
    for part in ("labs", "modules"):
        shutil.copytree(REPO / "terraform" / part, root / "terraform" / part, ignore=left_by_a_lab)
    (root / "terraform/providers").symlink_to(REPO / "terraform/providers")  # the mirror make test built
    before = files(root)
    result = subprocess.run(["scripts/tf-validate.sh"], cwd=root, capture_output=True, text=True, timeout=300,
                            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "terraform validate terraform/labs/maas" in result.stdout  # the module that installs a provider
    assert files(root) == before
    assert (root / ".cache/tf-validate/sources/labs/maas/.terraform.lock.hcl").is_file()  # it went here
