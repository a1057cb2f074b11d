"""vmlab.py down of a VM lab whose name is up from another state directory (another checkout): it stops only
its own QEMUs and removes only its own files; the namespaces and links bearing the lab's names are the other
lab's (the local lab's side of this: tests/lab/test_lab_name_clash.py). No lab: the host is a stand-in."""

from __future__ import annotations

import sys

import pytest

from labtools import REPO

sys.path.insert(0, str(REPO / "terraform/labs/vm/scripts"))
import vmlab  # noqa: E402  (the VM lab's realiser: standard library only, not a package)
from vmlab import nslab  # noqa: E402  (the local lab's, which vmlab uses for namespaces)


@pytest.fixture
def host(monkeypatch):
    """Everything down would do to the host, recorded instead: commands, namespace and QEMU removals."""
    done: list[str] = []
    monkeypatch.setattr(nslab, "sh", lambda *argv, **kw: done.append(" ".join(argv)))
    monkeypatch.setattr(vmlab, "sh", lambda *argv, **kw: done.append(" ".join(argv)))
    monkeypatch.setattr(nslab, "namespaces", lambda: {"tl-vx-tester"})
    monkeypatch.setattr(nslab, "link_exists", lambda *a, **kw: True)
    monkeypatch.setattr(vmlab, "link_exists", lambda *a, **kw: True)
    monkeypatch.setattr(nslab, "remove_namespace_node", lambda node, present: done.append(f"remove {node['netns']}"))
    monkeypatch.setattr(vmlab, "qemu_pids", lambda home: [4242] if "ours" in str(home) else [])
    monkeypatch.setattr(vmlab, "stop_pid", lambda pid: done.append(f"stop {pid}"))
    monkeypatch.setattr(nslab, "ROLE_STATE_ROOT", REPO / "nonexistent-role-state")
    return done


def plan(state_dir) -> dict:
    port = {"name": "left", "mac": "02:00:00:00:02:00"}
    return {"lab": "vx", "state_dir": str(state_dir),
            "nodes": {"tester": {"netns": "tl-vx-tester", "mgmt_root_if": "tlvxm1", "test_ports": []},
                      "dut1": {"netns": None, "mgmt_root_if": "tlvxm2", "test_ports": [port]}},
            "links": [{"tap": "tlvxt0", "a": {"node": "tester"}, "b": {"node": "dut1"}}]}


def test_down_leaves_the_names_of_a_lab_up_from_another_state_directory(tmp_path, host, monkeypatch):
    monkeypatch.setattr(nslab, "foreign_state_dirs", lambda p: {"/elsewhere/.cache/labs/vx"})
    ours = tmp_path / "ours"
    (ours / "dut1").mkdir(parents=True)
    (ours / "dut1" / "qemu.pid").write_text("4242\n")
    vmlab.down(plan(ours))
    assert host == ["stop 4242"], "only its own QEMU is stopped; no namespace or link of the other lab is removed"
    assert not (ours / "dut1").exists()


def test_down_of_its_own_lab_removes_its_names(tmp_path, host, monkeypatch):
    monkeypatch.setattr(nslab, "foreign_state_dirs", lambda p: set())
    vmlab.down(plan(tmp_path / "ours"))
    assert host == ["stop 4242", "ip link delete tlvxm2", "remove tl-vx-tester", "ip link delete tlvxt0"]
