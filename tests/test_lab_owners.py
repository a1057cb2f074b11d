"""The record of which checkout's state directory made each local or VM lab up (nslab.py record_owner, on /run):
the last lab down leaves no directory of it behind, and a lab-up whose directory the last lab down removes meanwhile
records itself all the same. No lab: the functions run on a directory of the test's own."""

from __future__ import annotations

import sys

from labtools import REPO

sys.path.insert(0, str(REPO / "terraform" / "labs" / "local" / "scripts"))
import nslab  # noqa: E402  (the local lab's realiser: standard library only, not a package)


def plan(lab, tmp_path):
    return {"lab": lab, "state_dir": str(tmp_path / "checkout" / lab)}


def test_the_last_lab_down_leaves_no_directory_and_another_labs_record_stays(tmp_path):
    owners = tmp_path / "run" / "trexlab" / "owners"
    a, b = plan("a", tmp_path), plan("b", tmp_path)
    nslab.record_owner(a, owners)
    nslab.record_owner(b, owners)
    nslab.forget_owner(a, owners)
    assert nslab.recorded_owner("b", owners) == b["state_dir"] and nslab.recorded_owner("a", owners) is None
    nslab.forget_owner(b, owners)
    assert not (tmp_path / "run" / "trexlab").exists()


def test_a_directory_shared_with_the_backlogs_state_stays_while_that_is_there(tmp_path):
    owners = tmp_path / "run" / "trexlab" / "owners"
    nslab.record_owner(plan("a", tmp_path), owners)
    (owners.parent / "netdev_max_backlog.json").write_text("{}\n")
    nslab.forget_owner(plan("a", tmp_path), owners)
    assert not owners.exists() and (owners.parent / "netdev_max_backlog.json").exists()


def test_a_lab_up_whose_directory_the_last_lab_down_removes_meanwhile_records_itself(tmp_path, monkeypatch):
    owners = tmp_path / "run" / "trexlab" / "owners"
    real_write, gone = nslab.Path.write_text, []

    def write_after_the_last_lab_down(path, *args, **kwargs):
        if not gone:  # the race, made certain: the directory goes after this lab's mkdir, before its write
            gone.append(path)
            owners.rmdir()
            owners.parent.rmdir()
        return real_write(path, *args, **kwargs)

    monkeypatch.setattr(nslab.Path, "write_text", write_after_the_last_lab_down)
    nslab.record_owner(plan("a", tmp_path), owners)
    monkeypatch.undo()
    assert gone and nslab.recorded_owner("a", owners) == plan("a", tmp_path)["state_dir"]
