"""The trexlab.lab collection as a user outside this checkout has it: the built tarball installed with
ansible-galaxy into a temporary collections path, and a playbook in a temporary directory running one of its
roles (dut_routing: the netconf module and the address-plan filters) in check mode against a configured
namespace lab. It must succeed and change nothing, with neither the checkout nor the trexlab Python package
importable (a stand-in trexlab package refuses to import)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from labtools import REPO, VENV, changed_count

# Installing and applying roles, nothing measured; the lab sw is shared with tests/swtester and the other of
# test_collection_role / test_tester_software_role: one xdist worker for both (tests/conftest.py).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured, pytest.mark.xdist_group("lab-sw")]
#: Destination networks the lab was configured with (a check-mode run with the same number changes nothing).
NETWORKS = 4

PLAY = """- name: DUT forwarding from the installed collection
  hosts: duts
  roles:
    - role: trexlab.lab.dut_routing
"""


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("sw", "single", NETWORKS)  # the lab of tests/swtester and the tester_software role test


def test_installed_collection_runs_a_role_in_check_mode_from_outside_the_checkout(lab, tmp_path):
    built = subprocess.run([str(REPO / "scripts" / "collection.sh"), "build", str(tmp_path / "dist")],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    tarball = built.stdout.split()[-1]
    collections = tmp_path / "collections"
    play_dir = tmp_path / "play"
    play_dir.mkdir()
    (play_dir / "site.yml").write_text(PLAY)
    (play_dir / "ansible.cfg").write_text(
        f"[defaults]\ncollections_path = {collections}\ninterpreter_python = /usr/bin/python3\n"
        "gathering = explicit\nretry_files_enabled = False\n[ssh_connection]\npipelining = True\n")
    blocker = tmp_path / "pythonpath" / "trexlab"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('the installed collection imported trexlab')\n")
    env = {"PATH": f"{VENV / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "ANSIBLE_CONFIG": str(play_dir / "ansible.cfg"), "PYTHONPATH": str(blocker.parent),
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}

    def run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, cwd=play_dir, env=env, timeout=timeout)

    # --no-deps: community.general (its dependency, unused by dut_routing) is the ansible package's, no download.
    installed = run("ansible-galaxy", "collection", "install", "--no-deps", "-p", str(collections), tarball)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    doc = run("ansible-doc", "--json", "trexlab.lab.netconf")
    assert doc.returncode == 0, doc.stderr
    where = Path(json.loads(doc.stdout)["trexlab.lab.netconf"]["doc"]["filename"])
    assert where.is_relative_to(collections), f"the module came from {where}, not the installed collection"

    check = run("ansible-playbook", "-i", str(lab.inventory), "site.yml", "--check",
                "-e", f"trexlab_networks={NETWORKS}", timeout=300)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
    assert "TASK [trexlab.lab.dut_routing : Configure forwarding]" in check.stdout, check.stdout[-3000:]
    assert changed_count(check.stdout) == 0, check.stdout[-3000:]
