"""roles/trex and a systemd unit of its name that it did not write: absent leaves it, present refuses it.

The role's own unit is told by its Description (trex_unit_marker); a machine's own trex.service (or one of any
trex_service_name) was stopped, disabled and deleted by state=absent, and overwritten by present. The role runs
here with a local connection on a unit file of a name no one else uses; nothing else of the machine is touched
but what absent always tries (rmdir of an empty /run/dpdk and /tmp/trex-bird).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("VENV", REPO / ".venv"))
UNITS = Path("/etc/systemd/system")

PLAY = """- name: roles/trex with the unit given
  hosts: all
  gather_facts: false
  roles:
    - role: trexlab.lab.trex
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not UNITS.is_dir(),
                                reason="needs root and /etc/systemd/system (the role's unit directory)")


def run_role(tmp_path: Path, name: str, state: str) -> subprocess.CompletedProcess:
    host = {"ansible_connection": "local", "ansible_python_interpreter": str(VENV / "bin/python"),
            "trexlab_lab": {"name": "tu"}, "trex_state": state, "trex_service_manager": "systemd",
            "trex_service_name": name, "trex_root": str(tmp_path / "root"),
            "trex_config_path": str(tmp_path / "trex_cfg.yaml"), "trex_checksum": "sha256:" + "0" * 64,
            "test_ports": [{"index": 0, "name": "p0", "peer_mac": "02:00:00:00:00:01", "pci": None},
                           {"index": 1, "name": "p1", "peer_mac": "02:00:00:00:00:02", "pci": None}]}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"tester": host}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    return subprocess.run([str(VENV / "bin/ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml")], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})


def test_a_unit_of_its_name_that_the_role_did_not_write_is_left_by_absent_and_refused_by_present(tmp_path):
    name = f"trexlab-test-{secrets.token_hex(4)}"
    unit = UNITS / f"{name}.service"
    own = "[Unit]\nDescription=TRex as this machine runs it\n\n[Service]\nExecStart=/opt/trex/t-rex-64 -i\n"
    unit.write_text(own)
    try:
        absent = run_role(tmp_path, name, "absent")
        assert absent.returncode == 0, absent.stdout[-3000:]
        assert unit.read_text() == own, "absent deleted a unit the role did not write"
        assert re.search(r"^tester\s+:.*failed=0", absent.stdout, re.M), absent.stdout[-2000:]

        present = run_role(tmp_path, name, "present")
        assert present.returncode == 2, present.stdout[-3000:]
        assert f"trex_service_name={name}: {unit} is a unit this role did not write" in present.stdout, \
            present.stdout[-3000:]
        assert re.search(r"^tester\s+:.*changed=0 .*failed=1", present.stdout, re.M), present.stdout[-2000:]
        assert unit.read_text() == own and not (tmp_path / "root").exists()
    finally:
        unit.unlink(missing_ok=True)
