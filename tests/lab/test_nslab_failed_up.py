"""nslab.py up that fails halfway removes what it made before it exits (vmlab.py's up does the same): the
namespaces, links, sshd and hold on the host's receive backlog made so far stayed until the lab's next lab-down
or lab-up. The plan is written by hand (a loopback lab), its TCP endpoint port on a tester port that does not
exist, so that up fails after the namespace, its links and the backlog hold exist."""

import json

import pytest

from labtools import REPO, claim_lab, lab_leftovers, run

pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]

NAME = "tffu"


def test_an_up_that_fails_halfway_leaves_nothing(tmp_path):
    claim_lab(NAME)
    prefix = "2001:2:0:ffff:fffe"  # a block of 2001:2:0:ff80::/57 (up refuses it, should another lab hold it)
    tester = {"netns": f"tl-{NAME}-tester", "mgmt_root_if": f"tl{NAME}m1", "mgmt_root": f"{prefix}::2",
              "ansible_host": f"{prefix}::3", "role": "tester", "test_ports": []}
    plan = {"lab": NAME, "topology": "loopback", "state_dir": str(tmp_path / "state"), "nodes": {"tester": tester},
            "links": [{"a": {"node": "tester", "port": "port0", "mac": "02:74:6c:00:01:00"},
                       "b": {"node": "tester", "port": "port1", "mac": "02:74:6c:00:01:01"}}],
            "macvlans": [{"node": "tester", "port": "tcp0", "mac": "02:74:6c:00:08:00", "lower_node": "tester",
                          "lower_port": "nosuch"}]}
    nslab = str(REPO / "terraform/labs/local/scripts/nslab.py")
    try:
        up = run("python3", nslab, "up", env={"NSLAB_PLAN": json.dumps(plan)}, check=False, timeout=120)
        assert up.returncode != 0 and "nosuch" in up.stderr, up.stderr
        assert lab_leftovers(NAME) == []
        assert not (tmp_path / "state").exists(), "its key pair and files are removed too"
    finally:
        run("python3", nslab, "down", env={"NSLAB_PLAN": json.dumps(plan)}, check=False, timeout=120)
