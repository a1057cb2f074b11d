"""A hostile user's inputs (issue 17): specs, CLI values, --config files, inventories, generator options, DUT
blocks. Each must end in exit status 2 and one line on stderr naming the file or flag and the key, with no
traceback, and change nothing: not the namespaces, not the nftables ruleset, not /var/lib/trexlab, not any
file (the whole corpus runs in one process, in a directory holding its results root, snapshotted around it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import yaml

from trexlab import cli

GOOD_SPEC = {"name": "hostile", "generator": "sim", "generator_options": {"capacity": 300000},
             "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "receive_tail": 0},
             "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "trial_duration": 1}},
             "repetitions": 1}
LAB_SPEC = {**GOOD_SPEC, "generator": "software", "generator_options": {}}
SIIT = {**LAB_SPEC, "traffic": {"frame_size": [84, 64], "ip_version": [6, 4]}}

PORTS = {"tester": [{"index": 0, "name": "p0", "mac": "02:00:00:00:00:01", "ipv4": "198.18.0.2/24"},
                    {"index": 1, "name": "p1", "mac": "02:00:00:00:00:02", "ipv4": "198.19.0.2/24"}],
         "dut1": [{"index": 0, "name": "d0", "mac": "02:00:00:00:01:00", "ipv4": "198.18.0.1/24"},
                  {"index": 1, "name": "d1", "mac": "02:00:00:00:01:01", "ipv4": "198.19.0.1/24"}]}


def inventory(**changes) -> dict:
    """A well-formed one-DUT inventory (lab h17), with changes: 'tester.key' / 'dut1.key' set on a host,
    'port.<node>.<i>.<key>' on a test port, 'lab.<key>' in trexlab_lab."""
    hosts = {"tester": {"ansible_host": "192.0.2.10", "test_ports": [dict(p) for p in PORTS["tester"]]},
             "dut1": {"ansible_host": "192.0.2.20", "test_ports": [dict(p) for p in PORTS["dut1"]]}}
    lab = {"name": "h17", "kind": "static", "topology": "single"}
    for key, value in changes.items():
        where, _, rest = key.partition(".")
        if where == "port":
            node, index, field = rest.split(".")
            hosts[node]["test_ports"][int(index)][field] = value
        elif where == "lab":
            lab[rest] = value
        else:
            hosts[where][rest] = value
    return {"all": {"vars": {"trexlab_lab": lab},
                    "children": {"testers": {"hosts": {"tester": hosts["tester"]}},
                                 "duts": {"hosts": {"dut1": hosts["dut1"]}}}}}


def spec(base=GOOD_SPEC, **changes) -> dict:
    """base with dotted keys set (a value of None deletes the key)."""
    out = json.loads(json.dumps(base))
    for path, value in changes.items():
        node = out
        *parents, leaf = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return out


def text(data) -> str:
    return yaml.safe_dump(data, sort_keys=False)


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
SWEEP_BOMB = {f"generator_options.{k}": list(range(1, 11)) for k in
              ("seed", "buffer_frames", "every_nth_loss", "delay_every_nth", "capacity", "latency_base", "delay")}

# (name, kind, content, extra argv, the words the one line must hold). kind: spec (campaign FILE), scale
# (campaign FILE --scale ci), config (throughput --config FILE), inventory (throughput --generator software
# --inventory FILE), lab-spec (campaign FILE with a good inventory), argv (no file). {file} stands for the file.
CORPUS = [
    # -- the spec file itself
    ("duplicate key", "spec", text(GOOD_SPEC).replace("repetitions: 1", "repetitions: 1\nrepetitions: 5"), [],
     ["{file}", "duplicate key 'repetitions'"]),
    ("duplicate param", "spec", "name: d\ngenerator: sim\nprocedure:\n  name: throughput\n  params:\n"
     "    loss_tolerance_percent: 0.01\n    loss_tolerance_percent: 50\n", [], ["{file}", "loss_tolerance_percent"]),
    ("alias bomb in description", "spec", BOMB + "name: x\nprocedure: {name: throughput}\n", [], ["{file}", "aliases"]),
    ("alias bomb in generator_options", "spec", "name: x\ngenerator: sim\nprocedure: {name: throughput}\n"
     "generator_options: {capacity: 1, seed: &s [1, 1]}\nscale: {ci: {x: [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s,"
     " *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s]}}\n", [],
     ["{file}", "aliases"]),
    ("self-referring alias", "spec", "name: x\nprocedure: {name: throughput}\ndescription: &d [*d]\n", [],
     ["{file}"]),
    ("huge file", "spec", "name: x\nprocedure: {name: throughput}\ndescription: \"" + "x" * (2 << 20) + "\"\n", [],
     ["{file}", "larger than"]),
    ("not UTF-8", "spec", b"name: x\nprocedure: {name: throughput}\ndescription: \xff\xfe\n", [],
     ["{file}", "UTF-8"]),
    ("YAML syntax", "spec", "name: [x\n", [], ["{file}", "not valid YAML"]),
    ("integer of 5000 digits", "spec", "name: x\nprocedure: {name: throughput}\nrepetitions: " + "9" * 5000 + "\n", [],
     ["{file}", "line 3", "64 bits"]),
    ("hex integer of 20000 bits", "spec", "name: x\nprocedure: {name: throughput}\nrepetitions: 0x" + "f" * 5000
     + "\n", [], ["{file}", "line 3", "64 bits"]),
    ("a list", "spec", "- name: x\n", [], ["{file}", "mapping"]),
    ("a string", "spec", "just text\n", [], ["{file}", "mapping"]),
    ("empty", "spec", "", [], ["{file}", "mapping"]),
    ("python tag", "spec", "name: !!python/object/apply:os.system ['touch pwned']\n", [], ["{file}", "YAML"]),
    # -- JSON's types only: a YAML date, binary value or set, or a key that is not text, was a traceback (the point's id
    # is a JSON digest of its values; an unknown key's error joined the keys as text), and a key with a line break or
    # a terminal escape reached the terminal as it was: two lines, or the escape sequence run.
    ("sweep value a YAML date", "spec", text(GOOD_SPEC) + "sweep: {generator_options.capacity: [2024-01-01]}\n", [],
     ["{file}", "line 19", "date", "quote"]),
    ("sweep value binary", "spec", text(GOOD_SPEC) + "sweep: {generator_options.capacity: [!!binary AAAA]}\n", [],
     ["{file}", "line 19", "!!binary"]),
    ("sweep value a set", "spec", text(GOOD_SPEC) + "sweep: {traffic.frame_size: [!!set {64}]}\n", [],
     ["{file}", "line 19", "!!set"]),
    ("key null", "spec", text(GOOD_SPEC) + "null: 1\n", [], ["{file}", "line 19", "key None"]),
    ("key an integer", "spec", text(GOOD_SPEC) + "1: 1\n", [], ["{file}", "line 19", "key 1"]),
    ("params key true", "spec", text(spec(**{"procedure.params": None})).replace(
        "name: throughput", "name: throughput\n  params: {true: 1}"), [], ["{file}", "key True"]),
    ("key with a line break", "spec", text(GOOD_SPEC) + '"x\\ny": 1\n', [], ["{file}", "line 19", "'x\\ny'"]),
    ("key with a terminal escape", "spec", text(GOOD_SPEC) + '"\\e]0;pwned\\a": 1\n', [], ["{file}", "line 19", "key"]),
    ("dut key with a terminal escape", "spec", text(spec(LAB_SPEC)) + 'dut: {reference: {"\\e[2J": 1}}\n', [],
     ["{file}", "line 18", "key"]),
    ("config key an integer", "config", "params: {1: 2}\n", [], ["--config {file}", "line 1", "key 1"]),
    ("config value a date", "config", "params: {media: 2024-01-01}\n", [], ["--config {file}", "line 1", "date"]),
    ("inventory key with a line break", "inventory", '"all\\n": {}\n', [], ["inventory {file}", "line 1"]),
    ("name escapes", "spec", text(spec(name="../../x")), [], ["{file}", "name"]),
    ("name with slash", "spec", text(spec(name="a/b")), [], ["{file}", "name"]),
    ("name not a string", "spec", text(spec(name=7)), [], ["{file}", "name"]),
    ("repetitions zero", "spec", text(spec(repetitions=0)), [], ["{file}", "repetitions"]),
    ("repetitions string", "spec", text(spec(repetitions="3")), [], ["{file}", "repetitions"]),
    ("repetitions true", "spec", text(spec(repetitions=True)), [], ["{file}", "repetitions"]),
    ("sweep of 10^7 points", "spec", text(spec(sweep=SWEEP_BOMB)), [], ["{file}", "sweep", "10000000 points"]),
    ("sweep root", "spec", text(spec(sweep={"name.x": [1]})), [], ["{file}", "sweep.name.x"]),
    ("sweep not a list", "spec", text(spec(sweep={"traffic.destination_networks": 4})), [],
     ["{file}", "sweep.traffic.destination_networks"]),
    ("sweep empty list", "spec", text(spec(sweep={"traffic.destination_networks": []})), [],
     ["{file}", "sweep.traffic.destination_networks"]),
    # A point is its values' directory: a value twice was two points of one directory ("2 points, 1 done" for ever).
    ("sweep value twice", "spec", text(spec(sweep={"traffic.destination_networks": [1, 2, 1]})), [],
     ["{file}", "sweep.traffic.destination_networks", "1 twice"]),
    ("sweep value twice as a float", "spec", text(spec(sweep={"traffic.destination_networks": [2, 2.0]})), [],
     ["{file}", "sweep.traffic.destination_networks", "2.0 twice"]),
    ("sweep key into a number", "spec", text(spec(sweep={"procedure.params.max_rate.x": [1]})), [],
     ["{file}", "sweep.procedure.params.max_rate.x", "max_rate"]),
    ("scale key into a number", "scale", text(spec(scale={"ci": {"procedure": {"params": {"max_rate": {"x": 1}}}}})),
     [], ["{file}", "scale.ci.procedure.params.max_rate.x", "max_rate"]),
    ("swept bad value", "spec", text(spec(sweep={"traffic.destination_networks": [1, "4"]})), [],
     ["{file}", "point 1", "destination_networks"]),
    ("unknown top-level key", "spec", text(spec(hooks={"pre": "rm -rf /"})), [], ["{file}", "hooks"]),
    ("missing procedure", "spec", text(spec(procedure=None)), [], ["{file}", "procedure"]),
    ("procedure name escapes", "spec", text(spec(**{"procedure.name": "../x"})), [], ["{file}", "procedure.name"]),
    ("unknown lab kind", "spec", text(spec(**{"lab.kind": "cloud"})), [], ["{file}", "lab.kind"]),
    ("notebook escapes", "spec", text(spec(notebook="../../x.ipynb")), [], ["{file}", "notebook"]),
    # -- a final newline, which Python's $ lets through a pattern: into directory names, records, commands, lines
    ("name with a final newline", "spec", text(spec(name="hostile\n")), [], ["{file}", "name"]),
    ("campaign id with a final newline", "spec", text(GOOD_SPEC), ["--campaign", "c1\n"], ["--campaign"]),
    ("sweep key with a final newline", "spec", text(spec(sweep={"traffic.destination_networks\n": [1, 2]})), [],
     ["{file}", "line 20", "traffic.destination_networks"]),
    ("notebook with a final newline", "spec", text(spec(notebook="analysis/report.ipynb\n")), [],
     ["{file}", "notebook"]),
    ("siit device with a final newline", "spec", text(spec(SIIT, dut={"siit": {"device": "siit0\n"}})), [],
     ["{file}", "dut.siit.device"]),
    ("siit dir with a final newline", "spec", text(spec(SIIT, dut={"siit": {"dir": "/var/lib/trexlab/h17/dut1/t\n"}})),
     [], ["{file}", "dut.siit.dir"]),
    ("jool instance with a final newline", "spec", text(spec(SIIT, dut={"siit_jool": {"instance": "bench\n"}})), [],
     ["{file}", "dut.siit_jool.instance"]),
    ("endpoints file with a final newline", "spec", text(spec(LAB_SPEC, procedure={"name": "http_download"},
                                                              endpoints={"http_file": "f.bin\n"})), [],
     ["{file}", "endpoints.http_file"]),
    ("goal name with a final newline", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": [
        {"name": "NDR\n"}]}})), [], ["{file}", "goals[0].name"]),
    ("port name with a final newline", "inventory", text(inventory(**{"port.tester.0.name": "p0\n"})), [],
     ["inventory {file}", "tester.test_ports[0].name"]),
    ("lab name with a final newline", "inventory", text(inventory(**{"lab.name": "h17\n"})), [],
     ["inventory {file}", "trexlab_lab.name"]),
    # -- scale overrides are a spec too
    ("scale name escapes", "scale", text(spec(scale={"ci": {"name": "../../.."}})), [], ["{file}", "name"]),
    ("scale repetitions zero", "scale", text(spec(scale={"ci": {"repetitions": 0}})), [], ["{file}", "repetitions"]),
    ("scale binary", "scale", text(spec(LAB_SPEC, scale={"ci": {"generator_options": {"binary": "/bin/sh"}}})), [],
     ["{file}", "generator_options.binary"]),
    ("scale dut dir", "scale", text(spec(SIIT, scale={"ci": {"dut": {"siit": {"dir": "/"}}}})), [],
     ["{file}", "dut.siit.dir"]),
    ("scale not declared", "spec", text(GOOD_SPEC), ["--scale", "nope"], ["{file}", "scale.nope"]),
    ("scale not a mapping", "scale", text(spec(scale={"ci": [1]})), [], ["{file}", "scale.ci"]),
    # -- generator options
    ("software binary", "spec", text(spec(LAB_SPEC, generator_options={"binary": "/bin/sh"})), [],
     ["{file}", "generator_options.binary"]),
    ("software inventory option", "spec", text(spec(LAB_SPEC, generator_options={"inventory": "/etc/x"})), [],
     ["{file}", "generator_options.inventory"]),
    ("software cross_check word", "spec", text(spec(LAB_SPEC, generator_options={"cross_check": "maybe"})), [],
     ["{file}", "generator_options.cross_check"]),
    ("trex server injection", "spec", text(spec(LAB_SPEC, generator="trex",
                                                generator_options={"server": "h;reboot"})), [],
     ["{file}", "generator_options.server"]),
    ("trex sync_port", "spec", text(spec(LAB_SPEC, generator="trex", generator_options={"sync_port": 70000})), [],
     ["{file}", "generator_options.sync_port"]),
    ("trex client object", "spec", text(spec(LAB_SPEC, generator="trex", generator_options={"client": "x"})), [],
     ["{file}", "generator_options.client"]),
    ("sim unknown option", "spec", text(spec(**{"generator_options.colour": "red"})), [],
     ["{file}", "generator_options.colour"]),
    ("sim capacity word", "spec", text(spec(**{"generator_options.capacity": "fast"})), [],
     ["{file}", "generator_options.capacity"]),
    ("sim capacity zero", "spec", text(spec(**{"generator_options.capacity": 0})), [],
     ["{file}", "generator_options.capacity"]),
    ("sim wall clock", "spec", text(spec(**{"generator_options.wall_clock_factor": 5})), [],
     ["{file}", "generator_options.wall_clock_factor"]),
    ("options a list", "spec", text(spec(generator_options=["capacity=1"])), [], ["{file}", "generator_options"]),
    # -- DUT blocks
    ("siit device injection", "spec", text(spec(SIIT, dut={"siit": {"device": "siit0; reboot"}})), [],
     ["{file}", "dut.siit.device"]),
    ("siit device too long", "spec", text(spec(SIIT, dut={"siit": {"device": "a" * 16}})), [],
     ["{file}", "dut.siit.device"]),
    ("siit device slash", "spec", text(spec(SIIT, dut={"siit": {"device": "x/y"}})), [], ["{file}", "dut.siit.device"]),
    ("siit device spaces", "spec", text(spec(SIIT, dut={"siit": {"device": "a b"}})), [],
     ["{file}", "dut.siit.device"]),
    ("siit dir root", "spec", text(spec(SIIT, dut={"siit": {"dir": "/"}})), [], ["{file}", "dut.siit.dir"]),
    ("siit dir dotdot", "spec", text(spec(SIIT, dut={"siit": {"dir": "/var/lib/trexlab/../../etc"}})), [],
     ["{file}", "dut.siit.dir"]),
    ("siit dir elsewhere", "spec", text(spec(SIIT, dut={"siit": {"dir": "/tmp/tayga"}})), [],
     ["{file}", "dut.siit.dir"]),
    ("siit dir the state root", "spec", text(spec(SIIT, dut={"siit": {"dir": "/var/lib/trexlab/h17"}})), [],
     ["{file}", "dut.siit.dir"]),
    ("siit dir relative", "spec", text(spec(SIIT, dut={"siit": {"dir": "tayga"}})), [], ["{file}", "dut.siit.dir"]),
    ("siit dir shell", "spec", text(spec(SIIT, dut={"siit": {"dir": "/var/lib/trexlab/h17/dut1/$(reboot)"}})), [],
     ["{file}", "dut.siit.dir"]),
    ("siit prefix private", "spec", text(spec(SIIT, dut={"siit": {"prefix": "10.0.0.0/8"}})), [],
     ["{file}", "dut.siit.prefix"]),
    ("siit prefix documentation", "spec", text(spec(SIIT, dut={"siit": {"prefix": "2001:db8::/96"}})), [],
     ["{file}", "dut.siit.prefix"]),
    ("siit ipv4 public", "spec", text(spec(SIIT, dut={"siit": {"ipv4_addr": "8.8.8.8"}})), [],
     ["{file}", "dut.siit.ipv4_addr"]),
    ("siit ipv6 outside", "spec", text(spec(SIIT, dut={"siit": {"ipv6_addr": "2001:db8::1"}})), [],
     ["{file}", "dut.siit.ipv6_addr"]),
    ("siit ipv4 injection", "spec", text(spec(SIIT, dut={"siit": {"ipv4_addr": "$(reboot)"}})), [],
     ["{file}", "dut.siit.ipv4_addr"]),
    ("siit cpus negative", "spec", text(spec(SIIT, dut={"siit": {"cpus": [-1]}})), [], ["{file}", "dut.siit.cpus"]),
    ("siit unknown key", "spec", text(spec(SIIT, dut={"siit": {"exec": "reboot"}})), [], ["{file}", "dut.siit"]),
    ("siit state", "spec", text(spec(SIIT, dut={"siit": {"state": "absent"}})), [], ["{file}", "dut.siit"]),
    ("jool instance spaces", "spec", text(spec(SIIT, dut={"siit_jool": {"instance": "a b"}})), [],
     ["{file}", "dut.siit_jool.instance"]),
    ("jool instance injection", "spec", text(spec(SIIT, dut={"siit_jool": {"instance": "x;reboot"}})), [],
     ["{file}", "dut.siit_jool.instance"]),
    ("jool pool6 outside", "spec", text(spec(SIIT, dut={"siit_jool": {"pool6": "2001:db8::/96"}})), [],
     ["{file}", "dut.siit_jool.pool6"]),
    ("jool packages injection", "spec", text(spec(SIIT, dut={"siit_jool": {"packages": ["jool; rm -rf /"]}})), [],
     ["{file}", "dut.siit_jool.packages"]),
    # Packages apt installs on the DUT (and the installed ones they conflict with, which it removes): the DUT owner's.
    ("jool packages of a spec", "spec", text(spec(SIIT, dut={"siit_jool": {"packages": ["exim4-daemon-light"]}})),
     [], ["{file}", "dut.siit_jool.packages", "not settable from a spec"]),
    ("netem loss string", "spec", text(spec(LAB_SPEC, dut={"impairment": {"loss_percent": "50"}})), [],
     ["{file}", "dut.impairment.loss_percent"]),
    ("netem directions", "spec", text(spec(LAB_SPEC, dut={"impairment": {"directions": ["up"]}})), [],
     ["{file}", "dut.impairment.directions"]),
    ("netem state_dir", "spec", text(spec(LAB_SPEC, dut={"impairment": {"state_dir": "/"}})), [],
     ["{file}", "dut.impairment"]),
    ("netem replace a foreign root", "spec", text(spec(LAB_SPEC, dut={"impairment": {"replace_root": True}})), [],
     ["{file}", "dut.impairment.replace_root", "not settable from a spec"]),
    ("reference rate zero", "spec", text(spec(LAB_SPEC, dut={"reference": {"rate_fps": 0}})), [],
     ["{file}", "dut.reference.rate_fps"]),
    ("dut block a string", "spec", text(spec(LAB_SPEC, dut={"impairment": "1%"})), [], ["{file}", "dut.impairment"]),
    ("unknown dut block", "spec", text(spec(LAB_SPEC, dut={"firewall": {}})), [], ["{file}", "dut", "firewall"]),
    ("dut with sim", "spec", text(spec(dut={"impairment": {}})), [], ["{file}", "dut"]),
    # A DUT block where there is no DUT to configure: the point ran on the bare path, its figures named by the block.
    ("dut swept with sim", "spec", text(spec(sweep={"dut.impairment.loss_percent": [50]})), [],
     ["{file}", "point 0", "dut", "generator sim"]),
    ("dut on loopback", "spec", text(spec(LAB_SPEC, lab={"topology": "loopback"}, dut={"impairment": {
        "loss_percent": 50}})), [], ["{file}", "dut", "topology loopback"]),
    ("dut swept on loopback", "spec", text(spec(LAB_SPEC, lab={"topology": "loopback"}, sweep={
        "dut.reference.rate_fps": [10000]})), [], ["{file}", "point 0", "dut", "topology loopback"]),
    # -- traffic and procedure parameters
    ("frame_size string", "spec", text(spec(**{"traffic.frame_size": "64"})), [], ["{file}", "traffic.frame_size"]),
    ("frame_size too small", "spec", text(spec(**{"traffic.frame_size": 20})), [], ["{file}", "frame_size"]),
    ("frame_size three", "spec", text(spec(**{"traffic.frame_size": [64, 64, 64]})), [], ["{file}", "frame_size"]),
    ("networks string", "spec", text(spec(**{"traffic.destination_networks": "4"})), [],
     ["{file}", "traffic.destination_networks"]),
    ("networks too many", "spec", text(spec(**{"traffic.destination_networks": 1000})), [],
     ["{file}", "destination_networks"]),
    ("ip_version five", "spec", text(spec(**{"traffic.ip_version": [4, 5]})), [], ["{file}", "ip_version"]),
    ("traffic hidden field", "spec", text(spec(**{"traffic.duration": 1e9})), [], ["{file}", "traffic", "duration"]),
    ("traffic a list", "spec", text(spec(traffic=[64])), [], ["{file}", "traffic"]),
    ("params a list", "spec", text(spec(**{"procedure.params": [1, 2]})), [], ["{file}", "procedure.params"]),
    ("goals as names", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": ["ndr", "pdr"]}})), [],
     ["{file}", "goals[0]"]),
    ("goals a string", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": "ndr"}})), [],
     ["{file}", "goals"]),
    ("tolerance a string", "spec", text(spec(**{"procedure.params.loss_tolerance_percent": "0.01"})), [],
     ["{file}", "procedure.params.loss_tolerance_percent"]),
    ("unknown param", "spec", text(spec(**{"procedure.params.shell": "reboot"})), [], ["{file}", "shell"]),
    # One stored campaign gives every point's rate: a swept one measured every point at the spec's campaign's rate.
    ("rate campaign swept", "spec", text(spec(procedure={"name": "latency", "params": {
        "rate": {"from": "throughput", "campaign": {"experiment": "tp"}}, "trial_duration": 2, "tag_delay": 1}},
        sweep={"procedure.params.rate.campaign.id": ["c-1", "c-2"]})), [],
     ["{file}", "sweep.procedure.params.rate.campaign.id", "one stored campaign"]),
    ("rate swept to campaigns", "spec", text(spec(procedure={"name": "latency", "params": {
        "trial_duration": 2, "tag_delay": 1}}, sweep={"procedure.params.rate": [
            {"from": "throughput", "campaign": {"experiment": "tp"}}, {"from": "throughput",
                                                                      "campaign": {"experiment": "tq"}}]})), [],
     ["{file}", "sweep.procedure.params.rate", "one stored campaign"]),
    ("rate from elsewhere", "spec", text(spec(procedure={"name": "latency",
                                                         "params": {"rate": {"from": "mlrsearch"}}})), [],
     ["{file}", "rate.from"]),
    ("endpoints file escapes", "spec", text(spec(LAB_SPEC, procedure={"name": "http_download"},
                                                 endpoints={"http_file": "../../etc/passwd"})), [],
     ["{file}", "endpoints.http_file"]),
    # One iperf3 server per port on the server node: 1000 ports were 1000 servers started, a port twice a role failed
    # half way.
    ("endpoints 1000 iperf3 servers", "spec", text(spec(LAB_SPEC, procedure={"name": "tcp"},
                                                        endpoints={"iperf3_ports": list(range(6000, 7000))})), [],
     ["{file}", "endpoints.iperf3_ports", "at most 64"]),
    ("endpoints iperf3 port twice", "spec", text(spec(LAB_SPEC, procedure={"name": "tcp"},
                                                      endpoints={"iperf3_ports": [5201, 5201]})), [],
     ["{file}", "endpoints.iperf3_ports[1]"]),
    ("endpoints algorithm injection", "spec", text(spec(LAB_SPEC, procedure={"name": "tcp"},
                                                        endpoints={"congestion_control": "reno;reboot"})), [],
     ["{file}", "endpoints.congestion_control"]),
    # -- durations and counts past what a trial or a tester can hold (the lab, or the CPU of a dry run, for ever)
    ("receive tail infinite", "spec", text(spec(**{"traffic.receive_tail": float("inf")})), [],
     ["{file}", "traffic.receive_tail", "60"]),
    ("receive tail a day", "spec", text(spec(**{"traffic.receive_tail": 86400})), [],
     ["{file}", "traffic.receive_tail", "60"]),
    ("tagged frames 10^12", "spec", text(spec(procedure={"name": "latency", "params": {
        "rate": 1000, "trial_duration": 2, "tag_delay": 1, "tagged_frames": 10**12}})), [],
     ["{file}", "procedure.params.tagged_frames", "10000000"]),
    ("mlrsearch trial of a year", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": [
        {"name": "NDR", "initial_trial_duration": 1, "final_trial_duration": 3.2e7, "duration_sum": 3.2e7}]}})),
     [], ["{file}", "goals[0].final_trial_duration", "3600"]),
    ("mlrsearch trials without end", "spec", text(spec(procedure={"name": "mlrsearch", "params": {
        "search_time_max": 5, "goals": [{"name": "NDR", "final_trial_duration": 1, "duration_sum": 1e10}]}})), [],
     ["{file}", "goals[0].duration_sum"]),
    ("mlrsearch search of a year", "spec", text(spec(procedure={"name": "mlrsearch", "params": {
        "search_time_max": 3.2e7}})), [], ["{file}", "procedure.params.search_time_max", "86400"]),
    ("mlrsearch warm-up of a year", "spec", text(spec(procedure={"name": "mlrsearch", "params": {
        "warmup_duration": 3.2e7}})), [], ["{file}", "procedure.params.warmup_duration", "3600"]),
    # A goal width finer than its loads can hold: the reference implementation's search failed in a traceback (1e-17:
    # ZeroDivisionError) once the campaign had begun.
    ("mlrsearch goal width of no frame", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": [
        {"name": "NDR", "relative_width": 1e-17}]}})), [], ["{file}", "goals[0].relative_width", "1e-09"]),
    # Goal widths no integer unit fits: the reference implementation's load rounding, run in every lab time estimate,
    # searched for ever (a dry run at 100 % CPU).
    ("mlrsearch goal widths of no common unit", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": [
        {"name": "coarse", "relative_width": 0.5}, {"name": "fine", "relative_width": 1e-8}]}})), [],
     ["{file}", "goals[*].relative_width", "1,000,000 steps"]),
    ("mlrsearch goal name markup", "spec", text(spec(procedure={"name": "mlrsearch", "params": {"goals": [
        {"name": "<img src=x onerror=alert(1)>"}]}})), [], ["{file}", "goals[0].name"]),
    ("tcp trex_server injection", "spec", text(spec(LAB_SPEC, procedure={"name": "tcp", "params": {
        "engine": "trex", "trex_server": "h;reboot", "mtu": 1500, "bottleneck_bandwidth": 1e8}})), [],
     ["{file}", "procedure.params.trex_server"]),
    ("selftest of 3000 frame sizes", "spec", text(spec(procedure={"name": "selftest", "params": {
        "frame_sizes": [64] * 3000}})), [], ["{file}", "procedure.params.frame_sizes", "at most 64"]),
    ("tcp of 1000 reduced windows", "argv", None, ["tcp", "--generator", "sim", "--reduced-window-percent",
                                                   ",".join(["50"] * 1000)], ["reduced_window_percent", "at most 64"]),
    ("throughput resolution 1e-300", "spec", text(spec(**{"procedure.params.resolution": 1e-300})), [],
     ["{file}", "procedure.params.resolution"]),
    ("throughput resolution_percent 1e-300", "spec", text(spec(**{"procedure.params.resolution_percent": 1e-300})),
     [], ["{file}", "procedure.params.resolution_percent"]),
    ("throughput max_rate 1e300", "spec", text(spec(**{"procedure.params.max_rate": 1e300})), [],
     ["{file}", "procedure.params.max_rate"]),
    ("throughput media 1e300 bit/s", "spec", text(spec(**{"procedure.params.max_rate": None,
                                                           "procedure.params.media": "1e300"})), [],
     ["{file}", "media", "1e+09"]),
    ("flr step 1e-300 %", "spec", text(spec(procedure={"name": "flr", "params": {"step_percent": 1e-300}})), [],
     ["{file}", "procedure.params.step_percent"]),
    ("latency rate 1e300", "spec", text(spec(procedure={"name": "latency", "params": {
        "rate": 1e300, "trial_duration": 2, "tag_delay": 1}})), [], ["{file}", "procedure.params.rate"]),
    # -- values the roles would refuse on the host, after the campaign had begun
    ("siit networks 10^5", "spec", text(spec(SIIT, dut={"siit": {"networks": 100000}})), [],
     ["{file}", "dut.siit.networks", "256"]),
    ("jool networks 0", "spec", text(spec(SIIT, dut={"siit_jool": {"networks": 0}})), [],
     ["{file}", "dut.siit_jool.networks"]),
    ("endpoints file of 10^9 MiB", "spec", text(spec(LAB_SPEC, procedure={"name": "http_download"},
                                                     endpoints={"http_file_mib": 10**9})), [],
     ["{file}", "endpoints.http_file_mib"]),
    ("netem every nth past 32 bits", "spec", text(spec(LAB_SPEC, dut={"impairment": {"loss_every_nth": 2**40}})),
     [], ["{file}", "dut.impairment.loss_every_nth"]),
    ("netem limit past 32 bits", "spec", text(spec(LAB_SPEC, dut={"impairment": {"limit": 2**40,
                                                                                 "loss_percent": 1}})), [],
     ["{file}", "dut.impairment.limit"]),
    # tc takes at most 2^32 ticks of 64 ns (274,877.9 ms): 300,000 ms failed on the DUT once the campaign had begun,
    # and 1e20 ms wrapped into a delay the spec never said (iproute2 6.1, checked).
    ("netem delay past tc's ticks", "spec", text(spec(LAB_SPEC, dut={"impairment": {"delay_ms": 300000}})), [],
     ["{file}", "dut.impairment.delay_ms", "274877"]),
    ("netem delay that wraps in tc", "spec", text(spec(LAB_SPEC, dut={"impairment": {"delay_ms": 1e20}})), [],
     ["{file}", "dut.impairment.delay_ms", "274877"]),
    ("netem jitter that wraps in tc", "spec", text(spec(LAB_SPEC, dut={"impairment": {"delay_ms": 10,
                                                                                       "jitter_ms": 1e20}})), [],
     ["{file}", "dut.impairment.jitter_ms", "274877"]),
    ("netem loss above 100 %", "spec", text(spec(LAB_SPEC, dut={"impairment": {"loss_percent": 150}})), [],
     ["{file}", "dut.impairment.loss_percent"]),
    # -- campaign flags
    ("campaign id escapes", "spec", text(GOOD_SPEC), ["--campaign", "../../x"], ["--campaign", "../../x"]),
    ("campaign id slash", "spec", text(GOOD_SPEC), ["--campaign", "a/b"], ["--campaign"]),
    ("campaign id empty", "spec", text(GOOD_SPEC), ["--campaign", ""], ["--campaign"]),
    ("campaign id dot dot", "spec", text(GOOD_SPEC), ["--campaign", ".."], ["--campaign"]),
    ("campaign results not a dir", "spec", text(GOOD_SPEC), ["--results", "/dev/null/x"], ["--results", "/dev/null"]),
    ("campaign ceilings damaged", "spec", text(GOOD_SPEC), ["--ceilings", "{damaged}"], ["ceilings", "{damaged}"]),
    ("campaign no such spec", "argv", None, ["campaign", "{dir}/nope.yml"], ["nope.yml"]),
    ("campaign spec a directory without spec", "argv", None, ["campaign", "{dir}"], ["experiment.yml"]),
    # -- a DUT block checked against the lab it would run on
    ("siit dir of another lab", "lab-spec", text(spec(SIIT, dut={"siit": {"dir": "/var/lib/trexlab/x/dut1/t"}})),
     [], ["{file}", "dut.siit.dir", "/var/lib/trexlab/h17/dut1/"]),
    # -- a TRex server sends the test traffic out of its own ports: the lab's, never one a spec names
    ("trex server of another host", "lab-spec", text(spec(LAB_SPEC, generator="trex",
                                                          generator_options={"server": "203.0.113.9"})), [],
     ["{file}", "generator_options.server", "203.0.113.9", "192.0.2.10"]),
    ("tcp trex_server of another host", "lab-spec", text(spec(LAB_SPEC, procedure={"name": "tcp", "params": {
        "engine": "trex", "trex_server": "203.0.113.9", "mtu": 1500, "bottleneck_bandwidth": 1e8}})), [],
     ["{file}", "procedure.params.trex_server", "203.0.113.9"]),
    ("tcp trex_server without a lab", "spec", text(spec(procedure={"name": "tcp", "params": {
        "engine": "trex", "trex_server": "203.0.113.9", "mtu": 1500, "bottleneck_bandwidth": 1e8}})), [],
     ["{file}", "procedure.params.trex_server", "no lab"]),
    # -- procedure flags
    ("results not a dir", "argv", None, ["throughput", "--generator", "sim", "--results", "/dev/null/x"],
     ["--results", "/dev/null"]),
    ("binary option", "argv", None, ["throughput", "--generator", "software", "--generator-opt", "binary=/bin/sh"],
     ["--generator-opt", "binary"]),
    ("option word", "argv", None, ["throughput", "--generator", "sim", "--generator-opt", "capacity=fast"],
     ["--generator-opt", "capacity"]),
    ("option without key", "argv", None, ["throughput", "--generator", "sim", "--generator-opt", "=1"],
     ["--generator-opt"]),
    ("option without value", "argv", None, ["throughput", "--generator", "sim", "--generator-opt", "capacity"],
     ["--generator-opt", "capacity"]),
    ("option wall clock", "argv", None, ["throughput", "--generator", "sim", "--generator-opt",
                                         "wall_clock_factor=2"], ["wall_clock_factor"]),
    ("option seed fraction", "argv", None, ["throughput", "--generator", "sim", "--generator-opt", "seed=1.5"],
     ["--generator-opt", "seed"]),
    ("repeat zero", "argv", None, ["throughput", "--generator", "sim", "--repeat", "0"], ["repeat"]),
    ("repeat huge", "argv", None, ["throughput", "--generator", "sim", "--repeat", "100000"], ["repeat"]),
    ("frame size word", "argv", None, ["throughput", "--generator", "sim", "--frame-size", "abc"], ["--frame-size"]),
    ("networks zero", "argv", None, ["throughput", "--generator", "sim", "--destination-networks", "0"],
     ["destination_networks"]),
    ("unknown generator", "argv", None, ["throughput", "--generator", "ixia"], ["--generator", "ixia"]),
    ("rate from nowhere", "argv", None, ["latency", "--generator", "sim", "--rate-from", "{dir}/nowhere"],
     ["rate-from"]),
    ("ceilings damaged", "argv", None, ["throughput", "--generator", "sim", "--ceilings", "{damaged}"],
     ["--ceilings", "{damaged}"]),
    # -- --config files
    ("config duplicate key", "config", "params: {max_rate: 1}\nparams: {max_rate: 2}\n", [],
     ["--config {file}", "duplicate key 'params'"]),
    ("config integer of 5000 digits", "config", "repeat: " + "9" * 5000 + "\n", [],
     ["--config {file}", "line 1", "64 bits"]),
    ("config not UTF-8", "config", b"params: {media: \xff}\n", [], ["--config {file}", "UTF-8"]),
    ("config a list", "config", "- 1\n", [], ["--config {file}", "mapping"]),
    ("config params a list", "config", "params: [1, 2]\n", [], ["--config {file}", "params"]),
    ("config frame_size string", "config", "traffic: {frame_size: '64'}\n", [],
     ["--config {file}", "traffic.frame_size"]),
    ("config unknown key", "config", "exec: reboot\n", [], ["--config {file}", "exec"]),
    ("config alias bomb", "config", BOMB, [], ["--config {file}", "aliases"]),
    ("config binary", "config", "generator: software\ngenerator_options: {binary: /bin/sh}\n", [],
     ["--config {file}", "generator_options.binary"]),
    ("config inventory a list", "config", "generator: software\ninventory: [a, b]\n", [], ["--config {file}",
                                                                                            "inventory"]),
    ("config repeat string", "config", "repeat: '3'\n", [], ["--config {file}", "repeat"]),
    ("config generator", "config", "generator: ixia\n", [], ["--config {file}", "generator"]),
    ("config traffic a string", "config", "traffic: fast\n", [], ["--config {file}", "traffic"]),
    ("config options a list", "config", "generator_options: [1]\n", [], ["--config {file}", "generator_options"]),
    ("config device", "argv", None, ["throughput", "--generator", "sim", "--config", "/dev/zero"],
     ["--config /dev/zero", "regular file"]),
    ("config missing", "argv", None, ["throughput", "--generator", "sim", "--config", "{dir}/none.yml"],
     ["--config", "none.yml"]),
    ("config goals as names", "argv", None, ["mlrsearch", "--generator", "sim", "--config", "{goals}"],
     ["--config {goals}", "goals[0]"]),
    # -- inventories
    ("inventory a list", "inventory", "- tester\n", [], ["inventory {file}", "mapping"]),
    ("inventory all a string", "inventory", "all: everything\n", [], ["inventory {file}", "all"]),
    ("inventory children a list", "inventory", "all: {children: [tester]}\n", [], ["inventory {file}",
                                                                                   "all.children"]),
    ("inventory hosts a string", "inventory", "all: {children: {testers: {hosts: t}}}\n", [],
     ["inventory {file}", "hosts"]),
    ("inventory host a list", "inventory", "all: {children: {testers: {hosts: {t: [1]}}}}\n", [],
     ["inventory {file}", "t"]),
    ("inventory ports a string", "inventory", text(inventory(**{"tester.test_ports": "p0"})), [],
     ["inventory {file}", "tester.test_ports"]),
    ("inventory port a string", "inventory", text(inventory(**{"tester.test_ports": ["p0"]})), [],
     ["inventory {file}", "tester.test_ports[0]"]),
    ("port name injection", "inventory", text(inventory(**{"port.tester.0.name": "p0;reboot"})), [],
     ["inventory {file}", "tester.test_ports[0].name"]),
    ("port name too long", "inventory", text(inventory(**{"port.dut1.1.name": "a" * 16})), [],
     ["inventory {file}", "dut1.test_ports[1].name"]),
    ("port name slash", "inventory", text(inventory(**{"port.dut1.0.name": "a/b"})), [],
     ["inventory {file}", "dut1.test_ports[0].name"]),
    ("port name a number", "inventory", text(inventory(**{"port.tester.1.name": 7})), [],
     ["inventory {file}", "tester.test_ports[1].name"]),
    ("port index", "inventory", text(inventory(**{"port.tester.1.index": 7})), [],
     ["inventory {file}", "tester.test_ports[1].index"]),
    ("port ipv4 private", "inventory", text(inventory(**{"port.tester.0.ipv4": "10.0.0.2/24"})), [],
     ["inventory {file}", "tester.test_ports[0].ipv4"]),
    ("port ipv6 documentation", "inventory", text(inventory(**{"port.dut1.0.ipv6": "2001:db8::1/64"})), [],
     ["inventory {file}", "dut1.test_ports[0].ipv6"]),
    ("port ipv4 garbage", "inventory", text(inventory(**{"port.dut1.0.ipv4": "$(reboot)"})), [],
     ["inventory {file}", "dut1.test_ports[0].ipv4"]),
    ("ssh option as user", "inventory", text(inventory(**{"dut1.ansible_user": "-oProxyCommand=touch x"})), [],
     ["inventory {file}", "dut1.ansible_user"]),
    ("ssh port", "inventory", text(inventory(**{"tester.ansible_port": "22; reboot"})), [],
     ["inventory {file}", "tester.ansible_port"]),
    ("ssh host option", "inventory", text(inventory(**{"tester.ansible_host": "-oProxyCommand=x"})), [],
     ["inventory {file}", "tester.ansible_host"]),
    ("netns with spaces", "inventory", text(inventory(**{"tester.trexlab_netns": "a b"})), [],
     ["inventory {file}", "tester.trexlab_netns"]),
    ("cpus a string", "inventory", text(inventory(**{"dut1.trexlab_cpus": "0-3"})), [],
     ["inventory {file}", "dut1.trexlab_cpus"]),
    ("lab name escapes", "inventory", text(inventory(**{"lab.name": "../../etc"})), [],
     ["inventory {file}", "trexlab_lab.name"]),
    ("allow addresses a word", "inventory", text(inventory(**{"lab.allow_non_benchmarking_addresses": "yes"})), [],
     ["inventory {file}", "allow_non_benchmarking_addresses"]),
    ("inventory duplicate key", "inventory", text(inventory()).replace("kind: static", "kind: static\n      "
                                                                        "kind: local"), [],
     ["inventory {file}", "duplicate key 'kind'"]),
    ("inventory not UTF-8", "inventory", b"all: {vars: \xff}\n", [], ["inventory {file}", "UTF-8"]),
    ("inventory missing", "argv", None, ["throughput", "--generator", "software", "--inventory", "{dir}/no.yml"],
     ["inventory", "no.yml"]),
]


def _snapshot_tree(root: Path) -> dict:
    if not root.exists():
        return {}
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if not p.is_symlink()}


def _host_state() -> dict:
    """What must not change on this host: namespaces, the nftables ruleset, /var/lib/trexlab (where readable)."""
    state = {"var_lib_trexlab": _snapshot_tree(Path("/var/lib/trexlab"))}
    for name, argv in (("netns", ["ip", "netns", "list"]), ("nft", ["nft", "list", "ruleset"])):
        if shutil.which(argv[0]) and os.geteuid() == 0:
            state[name] = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    return state


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: Audit events (PEP 578) that change something outside this process, or start another that could.
_CHANGES = ("os.mkdir", "os.rmdir", "os.remove", "os.rename", "shutil.rmtree", "shutil.move", "os.symlink",
            "os.link", "os.chmod", "os.chown", "os.truncate", "os.utime", "subprocess.Popen", "os.system",
            "os.exec", "os.posix_spawn", "os.fork", "os.forkpty", "pty.spawn", "socket.connect", "socket.bind",
            "socket.sendto", "os.kill", "os.killpg")
_audit = {"on": False, "events": []}


def _hook(event: str, args: tuple) -> None:
    if not _audit["on"]:
        return
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        # Python's own bytecode cache, written when the corpus imports a module for the first time.
        if writes and "__pycache__" not in str(path):
            _audit["events"].append((event, str(path)))
    elif event in _CHANGES and not (event == "os.mkdir" and "__pycache__" in str(args[0])):
        _audit["events"].append((event, str(args[:2])[:200]))


sys.addaudithook(_hook)  # cannot be removed again: it records only while _audit["on"]


def test_the_hostile_corpus_is_refused_in_one_line_and_changes_nothing(tmp_path, monkeypatch, capsys):
    assert len(CORPUS) >= 100, len(CORPUS)
    work = tmp_path / "work"
    results = tmp_path / "results"
    work.mkdir()
    monkeypatch.chdir(work)  # anything written to a default relative path would land here and be seen
    damaged = work / "damaged-ceilings.json"
    damaged.write_text("{not json")
    goals = work / "goals.yml"
    goals.write_text("params: {goals: [ndr, pdr]}\n")
    lab = work / "lab-hosts.yml"
    lab.write_text(text(inventory()))
    subs = {"{dir}": str(work), "{damaged}": str(damaged), "{goals}": str(goals)}
    files = []
    for index, (_name, _kind, content, _extra, _words) in enumerate(CORPUS):
        path = work / f"case-{index:03d}.yml"
        if content is not None:
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
        files.append(path)
    before_files, before_host = _snapshot_tree(tmp_path), _host_state()
    _audit.update(on=True, events=[])
    try:
        failures = run_corpus(files, work, results, lab, subs, capsys)
    finally:
        _audit["on"] = False
    assert not failures, "\n".join(failures)
    assert not _audit["events"], f"the corpus wrote or started something: {_audit['events'][:5]}"
    assert _snapshot_tree(tmp_path) == before_files, "a file changed, or one was written"
    assert not results.exists(), "a bad input left a results directory"
    if _host_state() != before_host:
        # Nothing in this process wrote a file or started a process (the audit hook saw none): another lab on
        # this host is at work. Nothing of make test is: its phase 1 runs no lab, and neither its other workers
        # nor its background jobs (lint, the providers' and the VM image's builds) touch these.
        warnings.warn("namespaces, nftables or /var/lib/trexlab changed during the corpus, not by it", stacklevel=1)


def run_corpus(files, work, results, lab, subs, capsys) -> list[str]:
    """Each case through cli.main in this process; the cases that were not refused as they must be."""
    failures = []
    for index, (name, kind, content, extra, words) in enumerate(CORPUS):
        path = files[index]
        for key, value in subs.items():
            extra = [a.replace(key, value) for a in extra]
        results_flag = [] if "--results" in extra else ["--results", str(results)]
        ceilings_flag = [] if "--ceilings" in extra else ["--ceilings", str(results / "ceilings.json")]
        argv = {"spec": ["campaign", str(path)], "scale": ["campaign", str(path), "--scale", "ci"],
                "lab-spec": ["campaign", str(path), "--inventory", str(lab)],
                "config": ["throughput", "--generator", "sim", "--config", str(path)],
                "inventory": ["throughput", "--generator", "software", "--inventory", str(path)],
                "argv": []}[kind]
        argv = [*argv, *extra, *results_flag, *ceilings_flag]
        if kind == "config" and isinstance(content, str) and "generator:" in content:
            argv.remove("--generator"), argv.remove("sim")  # the file names its generator
        try:
            code = cli.main(argv)
        except SystemExit as stop:  # argparse
            code = stop.code
        except Exception as exc:  # a traceback: the case fails, and the corpus goes on to show every other one
            capsys.readouterr()
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        wanted = [w.replace("{file}", str(path)) for w in words]
        for key, value in subs.items():
            wanted = [w.replace(key, value) for w in wanted]
        # One line of text: no control character besides its end (a value's escape sequence would reach the terminal).
        printable = all(line.isprintable() for line in lines)
        if code != 2 or len(lines) != 1 or not printable or "Traceback" in err or not all(w in err for w in wanted):
            failures.append(f"{name}: exit {code}, stderr {err.strip()[:300]!r}, wanted {wanted}")
    return failures


def test_a_good_spec_on_the_same_lab_is_planned(tmp_path):
    """The corpus's lab and base spec are valid: the refusals above are about the hostile values only."""
    from trexlab.plan.runplan import plan_campaign
    from trexlab.spec.experiment import validate

    lab = tmp_path / "hosts.yml"
    lab.write_text(text(inventory()))
    good = spec(SIIT, dut={"siit": {"dir": "/var/lib/trexlab/h17/dut1/tayga", "prefix": "64:ff9b::/96",
                                    "device": "siit0"}})
    plans = plan_campaign(validate(good), tmp_path / "results", inventory=str(lab), ceilings=tmp_path / "c.json")
    assert [dict(p.dut) for p in plans] == [{"siit": good["dut"]["siit"]}]
    assert plans[0].generator == "software" and "binary" not in plans[0].generator_options
    assert not (tmp_path / "results").exists(), "planning writes nothing"


def test_a_lab_may_allow_other_addresses_and_every_run_says_so(tmp_path):
    from trexlab.testbed.inventory import load_lab

    path = tmp_path / "hosts.yml"
    path.write_text(text(inventory(**{"port.tester.0.ipv4": "10.0.0.2/24",
                                      "lab.allow_non_benchmarking_addresses": True})))
    lab = load_lab(path)
    assert lab.describe()["allow_non_benchmarking_addresses"] is True, "recorded in provenance"
    assert any("allow_non_benchmarking_addresses: true" in w for w in lab.warnings()), "printed at run start"


def test_the_audit_hook_sees_a_write_and_a_process(tmp_path):
    """The corpus's guard is not blind: a file written and a process started are both recorded."""
    _audit.update(on=True, events=[])
    try:
        (tmp_path / "written").write_text("x")
        subprocess.run(["true"], check=True)
    finally:
        _audit["on"] = False
    kinds = {event for event, _ in _audit["events"]}
    assert {"open", "subprocess.Popen"} <= kinds, _audit["events"]


def test_a_dut_block_needs_a_dut_to_configure():
    """On a loopback lab (or the simulated SUT) a campaign configures no DUT: a point with a dut block, declared or
    swept, ran on the bare path with its figures named by the block. Refused by the spec's validation, whatever lab
    the campaign is then run on."""
    import pytest

    from trexlab.spec.experiment import InvalidExperiment, validate

    loopback = spec(LAB_SPEC, lab={"topology": "loopback"})
    for hostile in (spec(loopback, dut={"impairment": {"loss_percent": 50}}),
                    spec(loopback, sweep={"dut.reference.rate_fps": [10000]}),
                    spec(sweep={"dut.impairment.loss_percent": [50]})):
        with pytest.raises(InvalidExperiment, match="dut: configures a lab's DUT"):
            validate(hostile)
    validate(loopback)  # the same spec without the block


def test_a_netem_delay_is_one_tc_takes_as_it_is():
    """tc counts netem's delay and jitter in 32-bit ticks of 64 ns: a larger one failed on the DUT after the campaign
    had begun, and one from about 1e19 ms wrapped into a delay the spec never said. Refused by the spec's validation,
    whatever lab it then runs on; the largest tc takes passes."""
    import pytest

    from trexlab.spec.experiment import InvalidExperiment, validate

    for key, value in (("delay_ms", 274878), ("delay_ms", 1e20), ("jitter_ms", 1e20)):  # tc: too large; wrapped
        with pytest.raises(InvalidExperiment, match=f"dut.impairment.{key}="):
            validate(spec(LAB_SPEC, dut={"impairment": {"delay_ms": 10, key: value}}))
    from trexlab.impairment import MAX_DELAY_MS

    assert MAX_DELAY_MS * 1e6 / 64 < 2**32 < (MAX_DELAY_MS + 1) * 1e6 / 64, "whole ms of 2^32 ticks of 64 ns"
    validate(spec(LAB_SPEC, dut={"impairment": {"delay_ms": MAX_DELAY_MS, "jitter_ms": MAX_DELAY_MS}}))
