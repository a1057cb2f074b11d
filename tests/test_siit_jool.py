"""The exact Jool configuration roles/siit_jool applies (trexlab.siit): Lencse & Szilagyi 2024, Fig. 8, as one
file of Jool's atomic configuration (``jool_siit file handle``).

What the file must be, from Jool's documentation of atomic configuration: one JSON object per instance whose
mandatory fields are the instance name and the framework (netfilter or iptables); pool6 sits in the "global"
object (since Jool 4); each "eamt" entry has an "ipv6 prefix" and an "ipv4 prefix"; an unknown tag is an error
(of an SIIT file's top-level tags only comment, instance, framework, global, eamt and denylist4 exist); a
field left out takes its default, so the file is the whole instance; overlapping EAM entries abort the load
unless forced. An EAM entry maps prefixes with suffixes of equal length."""

import ipaddress
import json
import os
import shlex
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.trexlab.lab.plugins.filter.trexlab import dut_state_name
from trexlab import siit
from trexlab.params import InvalidParameter
from trexlab.siit import jool_config

SIIT_TOP_LEVEL = {"comment", "instance", "framework", "global", "eamt", "denylist4"}


def test_one_netfilter_instance_and_two_mappings_per_network_as_in_the_papers_script():
    config = jool_config(256)
    assert config["instance"] == "benchmarking" and config["framework"] == "netfilter"
    assert set(config) == {"instance", "framework", "eamt"}, "no pool6: no global object, Jool's defaults"
    assert len(config["eamt"]) == 2 * 256
    assert config["eamt"][:2] == [{"ipv6 prefix": "2001:2:0:8000::/120", "ipv4 prefix": "198.18.0.0/24"},
                                  {"ipv6 prefix": "2001:2:0:9000::/120", "ipv4 prefix": "198.19.0.0/24"}]
    # x in two hex digits: network 255 is 80ff / 90ff.
    assert config["eamt"][-1] == {"ipv6 prefix": "2001:2:0:90ff::/120", "ipv4 prefix": "198.19.255.0/24"}


@pytest.mark.parametrize("networks", [1, 2, 17, 256])
def test_the_file_is_jools_siit_format(networks):
    config = json.loads(json.dumps(jool_config(networks, "dut2", "64:ff9b::/96")))  # what the role writes
    assert set(config) <= SIIT_TOP_LEVEL and {"instance", "framework"} <= set(config)
    assert config["framework"] in ("netfilter", "iptables")
    assert config["global"] == {"pool6": "64:ff9b::/96"}
    v6 = [ipaddress.IPv6Network(e["ipv6 prefix"]) for e in config["eamt"]]
    v4 = [ipaddress.IPv4Network(e["ipv4 prefix"]) for e in config["eamt"]]
    assert all(set(e) == {"ipv6 prefix", "ipv4 prefix"} for e in config["eamt"])
    assert all(128 - a.prefixlen == 32 - b.prefixlen for a, b in zip(v6, v4, strict=True)), "equal suffixes"
    for nets in (v6, v4):
        assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:]), "no overlapping entries"
    assert len(config["eamt"]) == 2 * networks


def test_pool6_goes_in_the_global_object_normalised():
    assert jool_config(1, "dut2", "64:FF9B:0::/96")["global"] == {"pool6": "64:ff9b::/96"}


@pytest.mark.parametrize(("args", "name"), [((0,), "networks"), ((257,), "networks"), ((1, "bad name!"), "instance"),
                                            ((1, "x", "64:ff9b::/80"), "pool6"), ((1, "x", "10.0.0.0/8"), "pool6"),
                                            ((1, "x", "64:ff9b::1/96"), "pool6")])
def test_bad_settings_are_refused_naming_them(args, name):
    with pytest.raises(InvalidParameter, match=name):
        jool_config(*args)


# -- what the role runs on a DUT (trexlab.siit.plan), run here against a stand-in for Jool ---------------------

#: A stand-in for the DUT's modprobe and jool_siit: it keeps whether the module is loaded and each instance Jool
#: took (as files under $SIM), logs every call, and fails 'file handle' where JOOL_FAIL is set (a failure half way).
FAKE_TOOLS = {
    "modprobe": """#!/bin/sh
echo "modprobe $*" >>"$SIM/calls"
if [ "$1" = -r ]; then rm "$SIM/loaded"; else touch "$SIM/loaded"; fi
""",
    "jool_siit": """#!/usr/bin/env python3
import json, os, sys
sim, args = os.environ["SIM"], sys.argv[1:]
with open(f"{sim}/calls", "a") as calls:
    calls.write(" ".join(["jool_siit", *args]) + "\\n")
if not os.path.exists(f"{sim}/loaded") or os.environ.get("JOOL_FAIL"):
    sys.exit("jool_siit: failed")
if args[:2] == ["file", "handle"]:
    config = json.load(open(args[2]))
    json.dump(config, open(f"{sim}/instance-{config['instance']}.json", "w"))
elif args[:2] == ["instance", "remove"]:
    os.unlink(f"{sim}/instance-{args[2]}.json")
else:
    sys.exit(2)
""",
}


class Dut:
    """A host for the planned scripts: the fake tools on PATH, the state directory below tmp_path."""

    def __init__(self, tmp_path, state_dir: str = "state"):
        self.sim, self.bin = tmp_path / "sim", tmp_path / "bin"
        self.sim.mkdir()
        self.bin.mkdir()
        for name, text in FAKE_TOOLS.items():
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        self.state_dir = str(tmp_path / state_dir)

    def probe(self, instance: str = "benchmarking") -> dict:
        """What files/can-load-jool.sh reports on this host for this instance name."""
        record = self.file(siit.RECORD)
        return {"jool": "ready", "loaded": (self.sim / "loaded").exists(),
                "instance": self.instance(instance) is not None, "record": json.loads(record) if record else None}

    def instance(self, name: str = "benchmarking") -> dict | None:
        """The configuration Jool took for this instance, or None where there is no such instance."""
        path = self.sim / f"instance-{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def file(self, name: str) -> str | None:
        path = os.path.join(self.state_dir, name)
        return Path(path).read_text() if os.path.exists(path) else None

    def state(self) -> dict:
        """Everything of Jool and of this role on the host: module, instances, the state directory's files."""
        return {"loaded": (self.sim / "loaded").exists(),
                "instances": sorted(p.name for p in self.sim.glob("instance-*")),
                "files": sorted(os.listdir(self.state_dir)) if os.path.isdir(self.state_dir) else []}

    def calls(self) -> list[str]:
        calls = self.sim / "calls"
        lines = calls.read_text().splitlines() if calls.exists() else []
        calls.unlink(missing_ok=True)
        return lines

    def role(self, state: str = "present", networks: int = 2, instance: str = "benchmarking", pool6: str = "",
             fail: bool = False) -> dict:
        """One run of the role: its probe, its plan, and the plan's script where there is one."""
        plan = siit.plan(state, networks, instance, pool6, self.state_dir, self.probe(instance))
        if plan["script"]:
            env = {"PATH": f"{self.bin}:/usr/bin:/bin", "SIM": str(self.sim), **({"JOOL_FAIL": "1"} if fail else {})}
            result = subprocess.run(["sh", "-c", plan["script"]], env=env, capture_output=True, text=True)
            assert (result.returncode != 0) == fail, result.stderr
        return plan


def test_apply_loads_the_module_gives_jool_the_planned_file_records_it_and_absent_reverses_exactly(tmp_path):
    dut = Dut(tmp_path)
    before = dut.state()
    plan = dut.role(networks=2, pool6="64:ff9b::/96")
    assert dut.calls() == ["modprobe jool_siit", f"jool_siit file handle {dut.state_dir}/{siit.CONFIG_FILE}"]
    assert dut.instance() == jool_config(2, "benchmarking", "64:ff9b::/96")
    assert dut.probe()["record"] == plan["record"] and plan["record"]["loaded_module"] is True
    # Idempotent: the same settings again change nothing (the role's second run: changed=0).
    assert dut.role(networks=2, pool6="64:ff9b::/96")["script"] == "" and dut.calls() == []
    dut.role("absent", networks=2, pool6="64:ff9b::/96")
    assert dut.calls() == ["jool_siit instance remove benchmarking", "modprobe -r jool_siit"]
    assert dut.state() == before, "instance gone, module unloaded, record and file forgotten"
    assert dut.role("absent")["script"] == "", "nothing left to remove"


def test_a_module_loaded_before_stays_loaded_after_absent(tmp_path):
    dut = Dut(tmp_path)
    (dut.sim / "loaded").touch()
    dut.role()
    assert dut.calls() == [f"jool_siit file handle {dut.state_dir}/{siit.CONFIG_FILE}"], "no modprobe"
    dut.role("absent")
    assert dut.calls() == ["jool_siit instance remove benchmarking"]
    assert dut.state() == {"loaded": True, "instances": [], "files": []}


def test_other_settings_replace_the_instance_as_a_whole_and_absent_still_unloads_what_the_first_run_loaded(tmp_path):
    dut = Dut(tmp_path)
    dut.role(networks=2)
    dut.calls()
    dut.role(networks=3)
    assert dut.calls() == [f"jool_siit file handle {dut.state_dir}/{siit.CONFIG_FILE}"], "replaced, not removed"
    assert dut.instance() == jool_config(3)
    assert dut.probe()["record"]["loaded_module"] is True, "the module this role loaded earlier is still its own"
    dut.role("absent", networks=3)
    assert dut.calls()[-1] == "modprobe -r jool_siit"


def test_a_failure_half_way_leaves_a_record_that_absent_undoes(tmp_path):
    dut = Dut(tmp_path)
    dut.role(fail=True)
    assert dut.probe()["record"] == {"config_sha256": None, "instance": "benchmarking", "loaded_module": True}, \
        "loaded, no configuration taken"
    assert dut.role()["script"], "applied again: the record names no configuration"
    dut.role("absent")
    assert dut.state() == {"loaded": False, "instances": [], "files": []}


def test_a_record_of_the_earlier_format_is_applied_again_keeping_whether_this_role_loaded_the_module(tmp_path):
    dut = Dut(tmp_path)
    dut.role()
    (dut.sim / "calls").unlink()
    with open(os.path.join(dut.state_dir, siit.RECORD), "w") as record:
        json.dump({"config": jool_config(2), "loaded_module": True}, record)  # what the role wrote before
    plan = dut.role()
    assert dut.calls() == [f"jool_siit file handle {dut.state_dir}/{siit.CONFIG_FILE}"], "applied again, once"
    assert dut.probe()["record"] == plan["record"] and plan["record"]["loaded_module"] is True
    dut.role("absent")
    assert dut.calls()[-1] == "modprobe -r jool_siit"


def test_values_in_the_script_are_quoted_never_read_by_the_shell(tmp_path):
    dut = Dut(tmp_path, state_dir="it's $(touch PWNED) `touch PWNED`; touch PWNED")
    dut.role()
    assert dut.file(siit.CONFIG_FILE) is not None and dut.role()["script"] == ""
    dut.role("absent")
    assert not list(tmp_path.rglob("PWNED")) and dut.state() == {"loaded": False, "instances": [], "files": []}
    removal = siit.plan("absent", 1, "dut-2_x", "", dut.state_dir,
                        {**siit.NOTHING, "instance": True, "record": {"instance": "dut-2_x"}})["script"]
    removal = removal.splitlines()
    assert [shlex.split(line) for line in removal[1:]] == [
        ["jool_siit", "instance", "remove", "dut-2_x"],
        ["rm", "-f", f"{dut.state_dir}/{siit.RECORD}", f"{dut.state_dir}/{siit.CONFIG_FILE}"]], "one word each"


def test_an_instance_of_another_name_replaces_the_one_an_earlier_run_made(tmp_path):
    """A campaign leaves a point's instance for the next point with the same blocks to replace: where that
    point names another instance, the one the record names is removed, so absent leaves nothing behind."""
    dut = Dut(tmp_path)
    before = dut.state()
    dut.role(instance="first")
    dut.calls()
    dut.role(instance="second")
    assert dut.calls() == ["jool_siit instance remove first",
                           f"jool_siit file handle {dut.state_dir}/{siit.CONFIG_FILE}"]
    assert dut.state()["instances"] == ["instance-second.json"]
    dut.role("absent", instance="second")
    assert dut.state() == before


def test_an_instance_the_role_did_not_make_is_neither_replaced_nor_removed(tmp_path):
    """A spec's dut.siit_jool.instance may name an instance the DUT already has: the role refuses to apply over it
    (before any change) and its absent leaves it, as TAYGA's role does an interface it did not make."""
    dut = Dut(tmp_path)
    (dut.sim / "loaded").touch()
    theirs = {"instance": "theirs", "framework": "netfilter"}
    (dut.sim / "instance-theirs.json").write_text(json.dumps(theirs))
    with pytest.raises(InvalidParameter, match=r"^instance='theirs': allowed an instance this role makes"):
        dut.role(instance="theirs")
    assert dut.role("absent", instance="theirs")["script"] == ""
    assert dut.calls() == [] and dut.instance("theirs") == theirs and dut.state()["files"] == []


def test_the_role_probes_the_record_the_plan_writes():
    """The role's probe reads the record at siit_jool_record_file (its vars/main.yml), which must be the file the
    plan's removal reads (siit.RECORD) in the same state directory."""
    role = Path(siit.__file__).parents[1] / "ansible_collections/trexlab/lab/roles/siit_jool"
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["trexlab.lab.dut_state_name"] = dut_state_name
    record = yaml.safe_load((role / "vars/main.yml").read_text())["siit_jool_record_file"]
    assert env.from_string(record).render(siit_jool_state_dir="/s") == f"/s/{siit.RECORD}"
    assert "{{ siit_jool_record_file | quote }}" in (role / "tasks/main.yml").read_text()


@pytest.mark.parametrize(("args", "name"), [
    (("present", 2, "benchmarking", "", "state", None), "state_dir"),
    (("applied", 2, "benchmarking", "", "/s", None), "state"),
    (("present", 2, "a b", "", "/s", None), "instance"),
    (("absent", 0, "benchmarking", "", "/s", None), "networks"),
    (("present", 2, "benchmarking", "", "/s", {"record": ["x"]}), "siit_jool.json"),
    (("absent", 2, "benchmarking", "", "/s", {"record": {"instance": "x;reboot"}}), "siit_jool.json: instance"),
])
def test_bad_role_settings_are_refused_naming_them(args, name):
    with pytest.raises(InvalidParameter, match=name):
        siit.plan(*args)
    from ansible_collections.trexlab.lab.plugins.filter.trexlab import jool_plan
    state, networks, instance, pool6, state_dir, host = args
    planned = jool_plan({"networks": networks, "instance": instance, "pool6": pool6, "state_dir": state_dir}, host,
                        state)
    assert name in planned["error"] and "\n" not in planned["error"] and planned["script"] == ""
