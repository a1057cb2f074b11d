"""roles/netem tells the root qdisc it put on a port from one someone else put there with the same kind and handle
(htb's is always 1:, netem's the kernel's choice): its record holds the port's qdiscs as 'tc -j qdisc show dev' read
them back (kind, handle, parent, parameters), and absent or a new plan deletes only a root still that.

The unit tests use tc's JSON as iproute2 6.1 printed it on this host (htb, pfifo, ingress: recorded here); this
host's kernel has no sch_netem, so the netem entries are written in the shape tc prints them (limit, delay), not
recorded. The live test runs the role's own probe and record scripts (rendered from tasks/main.yml) in a network
namespace of its own, with an htb tree of built-in qdiscs standing in for the selective-delay tree."""

from __future__ import annotations

import json
import os
import posixpath
import shlex
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.trexlab.lab.plugins.filter.trexlab import (
    dut_state_name,
    empty_state_dirs,
    own_roots,
    qdisc_tree,
    root_qdisc_error,
    roots_left_note,
)

ROLE = Path(__file__).resolve().parent.parent / "ansible_collections/trexlab/lab/roles/netem"

#: What the apply recorded for eth2 (tc -j qdisc show dev eth2 right after it: no "dev" in a one-device dump).
HTB_TREE = [{"kind": "htb", "handle": "1:", "root": True, "refcnt": 2,
             "options": {"r2q": 10, "default": "0x10", "direct_packets_stat": 0, "direct_qlen": 1000}},
            {"kind": "netem", "handle": "20:", "parent": "1:20",
             "options": {"limit": 100000, "delay": {"delay": 0.005, "jitter": 0, "correlation": 0}}}]
NETEM_ROOT = [{"kind": "netem", "handle": "8001:", "root": True, "refcnt": 2, "options": {"limit": 100000}}]


def probe(*qdiscs: dict) -> list[str]:
    """The netem probe's lines for this dump of every device's qdiscs (tc -j qdisc show, each entry with its dev)."""
    roots = [f"#root {q['dev']} {q['kind']} {q['handle']}" for q in qdiscs if q.get("root")]
    return [*roots, "#qdiscs " + json.dumps(list(qdiscs), separators=(",", ":"))]


def on(dev: str, tree: list[dict], **changes) -> list[dict]:
    """A recorded tree as a later dump of every device shows it: with its dev, and the given fields changed."""
    return [{**q, "dev": dev, **changes.get(q["handle"], {})} for q in tree]


def test_a_root_of_the_same_kind_and_handle_but_other_parameters_or_children_is_not_the_roles():
    record = {"devices": ["eth2", "eth3"], "roots": {"eth2": HTB_TREE, "eth3": NETEM_ROOT}}
    # The kernel's reference count and htb's count of unclassified frames move; an ingress qdisc beside the root
    # (someone's filter) is no part of it: still the role's.
    moved = on("eth2", HTB_TREE, **{"1:": {"refcnt": 3, "options": {**HTB_TREE[0]["options"],
                                                                     "direct_packets_stat": 4711}}})
    ingress = {"kind": "ingress", "handle": "ffff:", "dev": "eth2", "parent": "ffff:fff1", "options": {}}
    ours = probe(*moved, ingress, *on("eth3", NETEM_ROOT))
    assert own_roots(record, ours) == ["eth2", "eth3"]
    assert root_qdisc_error(["eth2", "eth3"], ours, record) == "" and roots_left_note(record, ours) == ""
    # Someone's htb 1: with another default class, someone's netem under 1:20 with another delay, someone's netem
    # root that the kernel numbered 8001: again with another limit: each the node's own now.
    for foreign in (on("eth2", HTB_TREE, **{"1:": {"options": {**HTB_TREE[0]["options"], "default": "0x20"}}}),
                    on("eth2", HTB_TREE, **{"20:": {"options": {"limit": 100000, "delay": {"delay": 0.01}}}}),
                    on("eth2", HTB_TREE[:1])):
        theirs = probe(*foreign, *on("eth3", NETEM_ROOT, **{"8001:": {"options": {"limit": 1000}}}))
        assert own_roots(record, theirs) == [], foreign
        error = root_qdisc_error(["eth2"], theirs, record)
        assert error.startswith("test port eth2 has a root qdisc of its own (htb 1:), which netem would replace "
                                "and absent could not put back: ") and "netem_replace_root: true" in error, error
        assert "\n" not in error and root_qdisc_error(["eth2"], theirs, record, True) == "", "told to replace it"
        assert roots_left_note(record, theirs).startswith(
            "netem: left the root qdisc of eth2 (now htb 1:; netem's was htb 1:), eth3 (now netem 8001:; netem's was "
            "netem 8001:): not the one netem put there")
    assert qdisc_tree([ingress]) == [] and qdisc_tree("htb 1:") == []


def test_a_record_of_the_earlier_version_is_still_judged_by_kind_and_handle():
    """Records of the version before hold '<kind> <handle>' per port, and the probe of a tc without JSON has no
    #qdiscs line: those are judged as that version did (it cannot tell more)."""
    lines = ["#root eth2 htb 1:", "#root eth3 netem 8002:"]
    assert own_roots({"devices": ["eth2", "eth3"], "roots": {"eth2": "htb 1:", "eth3": "netem 8001:"}},
                     lines) == ["eth2"]
    assert own_roots({"devices": ["eth2"], "roots": {"eth2": HTB_TREE}}, lines) == [], "no JSON to compare with"


def _task(name: str) -> str:
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    return next(t for t in tasks if t["name"] == name)["ansible.builtin.raw"]


def _render(template: str, **variables) -> str:
    """A task's Jinja as Ansible renders it, with the few filters and the lookup these two tasks use."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters.update({"quote": shlex.quote, "to_json": json.dumps, "bool": bool, "dirname": posixpath.dirname,
                        "trexlab.lab.empty_state_dirs": empty_state_dirs, "trexlab.lab.dut_state_name": dut_state_name})
    env.globals["lookup"] = lambda kind, name: (ROLE / "files" / name).read_text()
    return env.from_string(template).render(ansible_check_mode=False, **variables)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("tc") is None,
                    reason="needs root, unshare and tc for a network namespace of its own")
def test_the_roles_record_and_probe_tell_its_htb_tree_from_someone_elses_of_the_same_handle(tmp_path):
    """The role's apply script (its qdiscs here an htb tree with a pfifo where the role puts a netem) writes the
    record, the role's probe reads the port; then someone replaces the tree by their own htb 1: tree, which differs
    only in the limit of the qdisc under 1:20. Before the record held the tree, the role took theirs for its own:
    absent deleted it."""
    tc = ["tc qdisc replace dev d0 root handle 1: htb default 10",
          "tc class replace dev d0 parent 1: classid 1:10 htb rate 100gbit",
          "tc class replace dev d0 parent 1: classid 1:20 htb rate 100gbit",
          "tc qdisc replace dev d0 parent 1:20 handle 20: pfifo limit 100"]
    applied = {"devices": ["d0"], "nft": "", "tc": tc}
    plan = {**applied, "backend": "netem", "table": "trexlab_impairment", "applied": applied}
    state_dir = str(tmp_path / "state")
    # Where the role keeps its record (its vars/main.yml), in that state directory.
    record = _render(yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["netem_record_file"],
                     netem_state_dir=state_dir)
    apply = _render(_task("Replace what an earlier run applied by the plan"), netem_own_roots=[],
                    netem_replace_root=False, netem_previous={"nft": ""}, netem_plan=plan, netem_state_dir=state_dir,
                    netem_gro_record=f"{state_dir}/netem-gro.json", netem_record_file=record)
    look = _render(_task("Ask the kernel for sch_netem and read what an earlier run applied (changes nothing)"),
                   netem_state_dir=state_dir, netem_gro_record=f"{state_dir}/netem-gro.json", netem_record_file=record)
    theirs = ("tc qdisc del dev d0 root; " + "; ".join(tc).replace("pfifo limit 100", "pfifo limit 50"))
    script = (f"set -e; ip link add d0 type veth peer name d1; ip link set d0 up; ip link set d1 up; {apply}\n"
              f"echo ===; ({look}) || true; echo ===; {theirs}; ({look}) || true")
    done = subprocess.run(["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, (script, done.stdout, done.stderr)
    _, first, second = done.stdout.split("===")
    record = json.loads((tmp_path / "state" / "netem.json").read_text())
    assert [q["kind"] for q in record["roots"]["d0"]] == ["htb", "pfifo"], record
    for out, ours in ((first, ["d0"]), (second, [])):
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        assert json.loads(" ".join(line for line in lines if not line.startswith("#"))) == record
        assert own_roots(record, lines) == ours, lines
    assert root_qdisc_error(["d0"], lines, record).startswith("test port d0 has a root qdisc of its own (htb 1:)")
