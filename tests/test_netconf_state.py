"""trexlab.lab.netconf undoes exactly what it applied: absent leaves what the node had before, and a run that
declares less removes what an earlier run added and puts back the settings it no longer sets.

Each test runs the module as Ansible does (its arguments on stdin) in a network namespace of its own (unshare -n: no
lab, nothing to tear down; a veth pair stands for a test port), about 0.3 s per module run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parent.parent / "ansible_collections/trexlab/lab/plugins/modules/netconf.py"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="needs root and unshare for a network namespace of its own")

# Runs in the new namespace: the set-up commands, then each module run, each followed by what a role may touch.
DRIVER = r"""
import json, subprocess, sys
module, setup, runs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
subprocess.run(["sh", "-ec", "ip link add d0 type veth peer name d1; ip link set d0 up; ip link set d1 up;" + setup],
               check=True)
def state():
    sh = lambda cmd: subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=True).stdout
    return {"addresses": sh("ip -o addr show dev d0 scope global | awk '{print $4}' | sort"),
            "routes": sh("{ ip -4 route show; ip -6 route show; } | grep via | sort"),
            "main table": sh("ip -d -4 route show table main; ip -d -6 route show table main"),
            "neighbours": sh("ip neigh show nud permanent | sort"),
            "sysctls": sh("cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding"),
            "gso_max_segs": json.loads(sh("ip -j -d link show dev d0"))[0]["gso_max_segs"],
            "gro": sh("ethtool -k d0 | grep '^generic-receive-offload:'")}
out = [{"state": state()}]
for args in runs:
    done = subprocess.run([sys.executable, module], input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
                          capture_output=True, text=True)
    out.append({"result": json.loads(done.stdout), "state": state()})
print(json.dumps(out))
"""


def runs(tmp_path, setup: str, *declarations: dict) -> list[dict]:
    """Each declaration applied in turn (with this test's state file) in one new namespace: the state before the
    first, then each run's result and the state after it."""
    state_file = str(tmp_path / "netconf.json")
    args = [{"state_file": state_file, **declaration} for declaration in declarations]  # one may name its own
    done = subprocess.run(["unshare", "-n", sys.executable, "-c", DRIVER, str(MODULE), setup, json.dumps(args)],
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


MAC = "02:00:00:00:00:02"
ROUTING = {"sysctls": {"net.ipv4.ip_forward": 1, "net.ipv6.conf.all.forwarding": 1},
           "addresses": [{"dev": "d0", "address": "198.18.0.1/24"}, {"dev": "d0", "address": "2001:2::1/64"}],
           "routes": [{"dst": f"198.19.{x}.0/24", "via": "198.18.0.2", "dev": "d0"} for x in range(4)],
           "neighbours": [{"dev": "d0", "address": "198.18.0.2", "lladdr": MAC}]}


def test_absent_leaves_the_address_route_and_neighbour_the_node_had_before(tmp_path):
    """A DUT whose test port an operator addressed by hand (a static lab): the role declares the same, adds
    nothing, and absent must not take the operator's configuration away."""
    setup = ("ip addr add 198.18.0.1/24 dev d0; ip route add 198.19.0.0/24 via 198.18.0.2 dev d0;"
             f"ip neigh replace 198.18.0.2 lladdr {MAC} dev d0 nud permanent")
    declared = {"addresses": [{"dev": "d0", "address": "198.18.0.1/24"}],
                "routes": [{"dst": "198.19.0.0/24", "via": "198.18.0.2", "dev": "d0"}],
                "neighbours": [{"dev": "d0", "address": "198.18.0.2", "lladdr": MAC}],
                "sysctls": {"net.ipv4.ip_forward": 1}}
    before, present, absent = runs(tmp_path, setup, declared, {**declared, "state": "absent"})
    assert present["result"]["changes"] == ["set /proc/sys/net/ipv4/ip_forward 0 -> 1"]
    assert absent["result"]["changes"] == ["set /proc/sys/net/ipv4/ip_forward 1 -> 0"]
    assert absent["state"] == before["state"]
    assert not (tmp_path / "netconf.json").exists()


def test_a_run_declaring_less_removes_what_the_last_one_added_and_absent_then_restores_the_node(tmp_path):
    """The second run declares another address, one route instead of four, another neighbour MAC and no IPv6
    forwarding: it must leave the node as if it alone had run (nothing of the first), report nothing the third
    time, and absent with its own declaration must restore the node as it was before the first."""
    other_mac = "02:00:00:00:00:09"
    smaller = {"sysctls": {"net.ipv4.ip_forward": 1},
               "addresses": [{"dev": "d0", "address": "198.18.0.5/24"}],
               "routes": [{"dst": "198.19.0.0/24", "via": "198.18.0.2", "dev": "d0"}],
               "neighbours": [{"dev": "d0", "address": "198.18.0.2", "lladdr": other_mac}]}
    before, first, second, again, absent = runs(tmp_path, "", ROUTING, smaller, smaller, {**smaller, "state": "absent"})
    assert first["state"]["addresses"].split() == ["198.18.0.1/24", "2001:2::1/64"]
    assert len(first["state"]["routes"].splitlines()) == 4
    assert second["state"]["addresses"].split() == ["198.18.0.5/24"]
    assert second["state"]["routes"].split()[:5] == ["198.19.0.0/24", "via", "198.18.0.2", "dev", "d0"]
    assert len(second["state"]["routes"].splitlines()) == 1
    assert second["state"]["neighbours"].split()[:5] == ["198.18.0.2", "dev", "d0", "lladdr", other_mac]
    assert second["state"]["sysctls"].split() == ["1", "0"]  # IPv6 forwarding no longer declared: put back
    assert again["result"]["changed"] is False and again["state"] == second["state"]
    assert absent["state"] == before["state"]
    assert not (tmp_path / "netconf.json").exists()


def test_what_a_failed_run_added_is_recorded_and_absent_removes_it(tmp_path):
    """The address is added, then the route fails (its gateway is on no connected network): absent, with a
    declaration that no longer names that address, still removes it."""
    failing = {"addresses": [{"dev": "d0", "address": "198.18.0.1/24"}],
               "routes": [{"dst": "198.19.0.0/24", "via": "203.0.113.1", "dev": "d0"}]}
    before, failed, absent = runs(tmp_path, "", failing, {"state": "absent"})
    assert failed["result"]["failed"] and failed["result"]["changes"][0] == "add address 198.18.0.1/24 dev d0"
    assert failed["state"]["addresses"].split() == ["198.18.0.1/24"]
    assert absent["state"] == before["state"]


def test_absent_puts_back_the_route_and_neighbour_the_node_had_for_the_same_destination(tmp_path):
    """The node had its own route to a declared destination (another gateway, a route without one, an IPv6 one)
    and its own permanent neighbour entry for the declared gateway (another MAC): 'ip route replace' and 'ip neigh
    replace' took their place, and absent then deleted them, leaving the node without its entries. Absent must
    put back each, with its attributes (protocol, metric)."""
    setup = ("ip addr add 198.18.0.1/24 dev d0; ip addr add 2001:2::1/64 dev d0 nodad;"
             "ip route add 198.19.0.0/24 via 198.18.0.9 dev d0 proto static;"
             "ip route add 198.19.1.0/24 dev d0 proto static;"
             "ip -6 route add 2001:2:0:9000::/64 via 2001:2::9 dev d0 metric 1024;"
             "ip neigh replace 198.18.0.2 lladdr 02:00:00:00:00:09 dev d0 nud permanent")
    declared = {"addresses": [{"dev": "d0", "address": "198.18.0.1/24"}, {"dev": "d0", "address": "2001:2::1/64"}],
                "routes": [{"dst": "198.19.0.0/24", "via": "198.18.0.2", "dev": "d0"},
                           {"dst": "198.19.1.0/24", "via": "198.18.0.2", "dev": "d0"},
                           {"dst": "2001:2:0:9000::/64", "via": "2001:2::2", "dev": "d0"}],
                "neighbours": [{"dev": "d0", "address": "198.18.0.2", "lladdr": MAC}]}
    fewer = {**declared, "routes": declared["routes"][1:], "neighbours": []}
    absent_run = {**fewer, "state": "absent"}
    before, present, again, less, absent = runs(tmp_path, setup, declared, declared, fewer, absent_run)
    assert "198.19.0.0/24 via 198.18.0.2 dev d0" in present["state"]["routes"], present
    assert "198.19.1.0/24 via 198.18.0.2 dev d0" in present["state"]["routes"], present
    assert f"198.18.0.2 dev d0 lladdr {MAC} PERMANENT" in present["state"]["neighbours"], present
    assert again["result"]["changed"] is False, again["result"]
    # A run that no longer declares the first route and the neighbour puts back the node's own at once.
    assert "198.19.0.0/24 via 198.18.0.9 dev d0 proto static" in less["state"]["routes"], less
    assert less["state"]["neighbours"] == before["state"]["neighbours"], less
    assert absent["state"] == before["state"], absent
    assert not (tmp_path / "netconf.json").exists()


def test_absent_puts_back_a_route_of_the_nodes_own_that_pruning_removed(tmp_path):
    """prune_routes_within deletes undeclared routes in the benchmarking range (dut_routing: a run with fewer
    networks), also one the node had before the first run: absent must put it back."""
    setup = ("ip addr add 198.18.0.1/24 dev d0; ip route add 198.19.5.0/24 via 198.18.0.9 dev d0 proto static metric 7")
    declared = {"addresses": [{"dev": "d0", "address": "198.18.0.1/24"}],
                "routes": [{"dst": "198.19.0.0/24", "via": "198.18.0.2", "dev": "d0"}],
                "prune_routes_within": ["198.18.0.0/15"]}
    before, present, again, absent = runs(tmp_path, setup, declared, declared, {**declared, "state": "absent"})
    assert "198.19.5.0/24" not in present["state"]["routes"], "pruned while the declaration is applied"
    assert again["result"]["changed"] is False, again["result"]
    assert absent["state"] == before["state"], absent


def test_a_route_without_a_gateway_is_added_the_one_it_replaced_put_back_and_none_pruned(tmp_path):
    """A route straight out of its device (roles/siit_tayga's into TAYGA's TUN device): added, the node's own route
    it takes the place of (a blackhole) put back by absent as it was; pruning, which deletes undeclared routes
    through a gateway in its prefixes, leaves a route of the node's own without one."""
    setup = ("ip addr add 198.18.0.1/24 dev d0; ip route add blackhole 198.18.1.128/25 proto static;"
             "ip route add 198.19.7.0/24 dev d1 proto static")
    declared = {"routes": [{"dst": "198.18.1.128/25", "dev": "d0"}], "prune_routes_within": ["198.18.0.0/15"]}
    before, present, again, absent = runs(tmp_path, setup, declared, declared, {**declared, "state": "absent"})
    assert present["result"]["changes"] == ["add route 198.18.1.128/25 dev d0"], present["result"]
    table = present["state"]["main table"]
    assert "198.18.1.128/25 dev d0" in table and "blackhole" not in table and "198.19.7.0/24 dev d1" in table, table
    assert again["result"]["changed"] is False, again["result"]
    assert absent["state"] == before["state"], absent
    assert not (tmp_path / "netconf.json").exists()


def test_gso_max_segs_caps_the_tcp_segments_per_packet_and_absent_gives_the_device_its_own_value_back(tmp_path):
    """roles/tcp_endpoints caps its port at one segment per packet (wire-sized frames). The node's value is
    not the kernel's default here (an operator's 64): absent, and a run that no longer declares it, must put that
    one back, not 65535."""
    declared = {"gso_max_segs": {"d0": 1}}
    before, present, again, less, present2, absent = runs(
        tmp_path, "ip link set dev d0 gso_max_segs 64", declared, declared, {}, declared, {"state": "absent"})
    assert before["state"]["gso_max_segs"] == 64
    assert present["result"]["changes"] == ["set gso_max_segs d0 64 -> 1"] and present["state"]["gso_max_segs"] == 1
    assert again["result"]["changed"] is False, again["result"]
    assert less["state"] == before["state"], "no longer declared: the node's own value back"
    assert present2["state"]["gso_max_segs"] == 1
    assert absent["result"]["changes"] == ["set gso_max_segs d0 1 -> 64"] and absent["state"] == before["state"]
    assert not (tmp_path / "netconf.json").exists()


def test_gro_off_keeps_received_frames_unmerged_and_absent_gives_the_device_its_own_value_back(tmp_path):
    """roles/netem turns GRO off on the DUT port that receives the frames it impairs. A veth's GRO is off by
    default: the node's own here is on (as a virtio port's is), which absent and a run that no longer declares
    it must put back."""
    declared = {"gro": {"d0": False}}  # YAML's bare off
    before, present, again, less, present2, absent = runs(
        tmp_path, "ethtool -K d0 gro on", declared, {"gro": {"d0": "off"}}, {}, declared, {"state": "absent"})
    assert before["state"]["gro"].split() == ["generic-receive-offload:", "on"]
    assert present["result"]["changes"] == ["set gro d0 on -> off"]
    assert present["state"]["gro"].split() == ["generic-receive-offload:", "off"]
    assert again["result"]["changed"] is False, again["result"]
    assert less["state"] == before["state"], "no longer declared: the node's own value back"
    assert present2["state"]["gro"].split()[1] == "off"
    assert absent["result"]["changes"] == ["set gro d0 off -> on"] and absent["state"] == before["state"]
    assert not (tmp_path / "netconf.json").exists()
    bad = runs(tmp_path, "", {"gro": {"d0": "of"}})[1]["result"]
    assert bad["failed"] and bad["msg"] == "bad declaration: gro d0: 'of', allowed on or off (or a YAML boolean)", bad


def test_a_setting_two_records_hold_stays_until_the_last_goes_then_the_nodes_own_comes_back(tmp_path):
    """roles/netem and roles/dut_reference both turn a DUT port's GRO off, each with its own state file beside the
    other's. The second applied found GRO off already and recorded nothing, so removing the first put GRO on under
    the second (which still counts packets), and removing the second put nothing back. Both orders: in each the
    port stays off until the last holder goes, and the node's own (on) comes back then."""
    netem, reference = ({"state_file": str(tmp_path / name), "gro": {"d0": "off"}}
                        for name in ("netem-gro.json", "dut_reference-gro.json"))
    gone = {"state": "absent"}
    before, *after = runs(tmp_path, "ethtool -K d0 gro on", netem, reference, {**netem, **gone}, netem,
                          {**reference, **gone}, {**netem, **gone})
    assert [run["state"]["gro"].split()[1] for run in after] == ["off", "off", "off", "off", "off", "on"], after
    assert [run["result"]["changes"] for run in after] == [
        ["set gro d0 on -> off"], [], [], [], [], ["set gro d0 off -> on"]], after
    assert after[-1]["state"] == before["state"]
    assert not list(tmp_path.iterdir()), "each absent removes its own record"


def test_a_setting_another_record_holds_at_another_value_is_refused_and_nothing_changes(tmp_path):
    """Two holders of one setting that want different values: the second silently took it over while the first
    still relied on its value (the last applied won). Refused now, in check mode too, before any change, naming
    the setting, the port, the value held, the holder's file and the value asked; the same value still joins."""
    netem = {"state_file": str(tmp_path / "netem-gro.json"), "gro": {"d0": "off"}}
    other = {"state_file": str(tmp_path / "other.json"), "gro": {"d0": "on"},
             "addresses": [{"dev": "d0", "address": "198.18.0.1/24"}]}
    check = {**other, "_ansible_check_mode": True}
    _before, held, refused, checked, joined = runs(tmp_path, "ethtool -K d0 gro on", netem, other, check,
                                                   {**other, "gro": {"d0": "off"}})
    expected = (f"gro of port d0: asked on, but {netem['state_file']} holds it at off (another role's record on this "
                "node, which relies on it): allowed off while that one holds it; nothing changed (remove that role "
                "first, state absent)")
    for run in (refused, checked):
        assert run["result"].get("failed") and run["result"]["msg"] == expected, run["result"]
        assert run["state"] == held["state"], "refused: nothing changed"
    assert joined["state"]["gro"].split()[1] == "off" and joined["result"]["changes"] == [
        "add address 198.18.0.1/24 dev d0"], joined["result"]


def test_a_record_of_the_earlier_version_holds_the_value_the_node_has(tmp_path):
    """A record written before records kept their declared value (only the node's own, under settings): the value
    the node has is taken as the one it holds, and another is refused."""
    (tmp_path / "netem-gro.json").write_text(json.dumps({"settings": {"gro d0": "on"}, "added": {}}))
    refused = runs(tmp_path, "ethtool -K d0 gro off", {"gro": {"d0": "on"}})[1]["result"]
    assert refused.get("failed") and refused["msg"].startswith(
        f"gro of port d0: asked on, but {tmp_path / 'netem-gro.json'} holds it at off "), refused
