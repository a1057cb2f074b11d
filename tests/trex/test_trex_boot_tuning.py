"""roles/trex's boot-time tuning (trex_boot_tuning: hugepages and isolcpus in a GRUB drop-in): refused where it would
write the host's boot configuration or a shell line, and removed again by absent; and a TRex the role did not install
(at /opt/trex and /etc/trex_cfg.yaml, where TRex's own guide puts it) is neither taken over nor removed.

The role runs on this machine (connection local, no lab): the refusals stop before any change; absent runs in a
mount namespace of its own, where /etc/default is a tmpfs holding the drop-in and update-grub is a stand-in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from labtools import REPO, VENV

PORTS = [{"index": 0, "name": "port0", "pci": None, "mac": "02:00:00:00:01:00", "peer_mac": "02:00:00:00:02:00"},
         {"index": 1, "name": "port1", "pci": None, "mac": "02:00:00:00:01:01", "peer_mac": "02:00:00:00:02:01"}]
# The drop-in as roles/trex/tasks/boot_tuning.yml writes it (its first line is what absent looks for).
DROP_IN = ("# Written by the trex role (trex_boot_tuning=true); takes effect after update-grub and a reboot.\n"
           'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT default_hugepagesz=1G hugepagesz=1G hugepages=4"\n')


def play(tmp_path: Path, hosts: dict, *prefix: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """roles/trex on local hosts (each with its variables), through `prefix` (a namespace's command) if given."""
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {
        name: {"ansible_connection": "local", "ansible_python_interpreter": str(VENV / "bin" / "python"),
               "test_ports": PORTS, **variables}
        for name, variables in hosts.items()}}}))
    playbook = tmp_path / "trex.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [trexlab.lab.trex]\n")
    return subprocess.run([*prefix, str(VENV / "bin" / "ansible-playbook"), "-i", str(inventory), str(playbook)],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), **(env or {})})


def another_trex(where: Path) -> tuple[Path, Path]:
    """A TRex installed by hand: its release directory and its configuration."""
    (where / "opt" / "v3.04").mkdir(parents=True)
    (where / "opt" / "v3.04" / "t-rex-64").write_text("#!/bin/sh\n")
    (where / "trex_cfg.yaml").write_text("- port_limit: 2\n")
    return where / "opt", where / "trex_cfg.yaml"


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path.parent)) for p in [path, *path.rglob("*")])


def test_boot_tuning_on_a_namespace_node_a_shell_line_and_another_trex_are_refused_before_any_change(tmp_path):
    """Checked first: with a malformed checksum, or a tarball that is not there, the role would stop at that
    (before any change) if not at these."""
    root = tmp_path / "trex"
    theirs, their_config = another_trex(tmp_path / "theirs")
    _, other_config = another_trex(tmp_path / "config")
    before = tree(tmp_path / "theirs"), tree(tmp_path / "config")
    missing = {"trex_checksum": "sha256:" + "0" * 64, "trex_tarball": str(tmp_path / "missing.tar.gz")}
    result = play(tmp_path, {
        "root": {**missing, "trex_root": str(theirs), "trex_config_path": str(their_config)},
        "config": {**missing, "trex_root": str(root / "config"), "trex_config_path": str(other_config)},
        "netns": {"trex_checksum": "unverified", "trexlab_netns": "rvx-tester", "trexlab_lab": {"name": "rvx"},
                  "trex_boot_tuning": True,
                  "trex_root": str(root / "netns"), "trex_config_path": str(root / "netns.yaml")},
        "quoted": {"trex_checksum": "unverified", "trex_boot_tuning": True, "trex_isolcpus": '2"; touch /tmp/x; "',
                   "trex_root": str(root / "quoted"), "trex_config_path": str(root / "quoted.yaml")}})
    assert result.returncode != 0
    assert ("trex_boot_tuning=true: allowed only on a node of its own (this one is a network namespace"
            in result.stdout), result.stdout[-3000:]
    assert "trex_isolcpus=2\"; touch /tmp/x; \": allowed a CPU list" in result.stdout, result.stdout[-3000:]
    assert f"trex_root={theirs}: a directory this role did not make" in result.stdout, result.stdout[-3000:]
    assert f"trex_config_path={other_config}: a file this role did not write" in result.stdout, result.stdout[-3000:]
    assert not root.exists() and (tree(tmp_path / "theirs"), tree(tmp_path / "config")) == before


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root for a mount namespace")
def test_absent_removes_the_grub_drop_in_it_wrote_and_leaves_what_it_did_not_make(tmp_path):
    """Another drop-in in grub.d, another TRex's directory and configuration stay."""
    theirs, their_config = another_trex(tmp_path / "theirs")
    before = tree(tmp_path / "theirs")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "update-grub").write_text(f"#!/bin/sh\necho ran >> {tmp_path}/update-grub.log\n")
    (bin_dir / "update-grub").chmod(0o755)
    (tmp_path / "trex.cfg").write_text(DROP_IN)
    # In the mount namespace: /etc/default a tmpfs with the drop-ins; /run/dpdk and /tmp/trex-bird (which absent
    # removes where empty) covered if they exist here, so that absent leaves this machine's alone.
    setup = (f"mount --make-rprivate / && mount -t tmpfs none /etc/default && mkdir /etc/default/grub.d && "
             f"cp {tmp_path}/trex.cfg /etc/default/grub.d/ && echo GRUB_TIMEOUT=1 > /etc/default/grub.d/other.cfg && "
             "for d in /run/dpdk /tmp/trex-bird; do [ ! -d $d ] || mount -t tmpfs none $d; done || exit 9; "
             '"$@"; rc=$?; echo "left: $(ls /etc/default/grub.d)"; exit $rc')
    result = play(tmp_path, {"node": {"trex_state": "absent", "trex_service_manager": "supervised",
                                      "trex_root": str(theirs), "trex_config_path": str(their_config)}},
                  "unshare", "-m", "sh", "-c", setup, "sh",
                  env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "left: other.cfg", result.stdout[-3000:]
    assert (tmp_path / "update-grub.log").read_text() == "ran\n"
    assert tree(tmp_path / "theirs") == before
