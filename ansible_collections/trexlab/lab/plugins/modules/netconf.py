#!/usr/bin/python
"""Ansible module: make a node's test-port IP state what a role declares, and nothing more.

Addresses, routes, permanent neighbour entries, runtime sysctls, sysfs
values, NIC settings (RSS hash fields, pause frames, receive offload GRO: ethtool) and a
link's gso_max_segs are compared with what ``ip -j``, /proc/sys, /sys and ethtool say
and only the difference is applied, so a second run changes nothing; check
mode reports the difference
without applying it. ``state_file`` records which items the module added and
each setting's value from before the first run: ``state: absent`` removes
exactly those items (an address, route or neighbour the node had before is
left) and puts back every recorded setting, declared or not; a run that no
longer declares an item or setting it applied before removes or restores it.
A route or permanent neighbour entry of the node's that a declared one takes the
place of ('ip route replace': same destination and metric in the main table;
'ip neigh replace': same address) is recorded too and put back with it.
Sysctls are runtime only: a benchmark set-up is not meant to survive a reboot,
and nodes of the local lab share one /etc.

A setting another netconf record of the same directory (another role's, on the
same node) holds is held by both: roles/netem and roles/dut_reference each turn
a DUT port's GRO off. The one applied second finds the value already set and,
alone, would record nothing, so the first one's absent put the value back under
the second. So it joins: it records the node's own value as the first recorded
it, and an absent (or a run no longer declaring it) while another record still
holds the setting leaves it; the last holder's absent puts the node's own back.
Each record keeps the value it declared ("holds"): a run asking another value
of a setting another record holds is refused, changing nothing, since that one
still relies on its value.

A route whose destination is the connected network of its device is left to
the kernel (it already exists, as a link route). A route without a gateway goes
straight out of its device (a TUN device's: roles/siit_tayga); pruning deletes
only routes through a gateway.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: netconf
short_description: Idempotent, reversible addresses, routes, permanent neighbours and runtime settings of a node
description:
  - Compares the declared addresses, routes (through a gateway, or straight out of a device), permanent neighbour
    entries, runtime sysctls, sysfs values, NIC settings (RSS hash fields, pause frames and GRO, through ethtool)
    and links' gso_max_segs with what the node has, and applies only the difference, so a second run changes nothing.
    Check mode reports the difference.
  - O(state_file) records the items this module added and every setting's value from before the first run.
    With O(state=absent) it removes exactly those items (one the node had before is left as it was) and puts
    back every recorded setting, whether or not it is still declared.
  - A route or permanent neighbour entry the node had for the same destination (same metric, main table) or the
    same address, which a declared one takes the place of, is recorded with its attributes and put back when the
    declared one is removed.
  - A run with O(state=present) that no longer declares an item or a setting an earlier run applied removes
    that item and puts that setting back (for example routes and neighbours of a test port the inventory
    no longer has, or a sysctl an option no longer sets).
  - A route whose destination is the connected network of its device is left to the kernel.
  - Sysctls and sysfs values are runtime only; nothing is written to /etc.
  - A setting that another netconf state file of O(state_file)'s directory records (another role's on the same
    node, for example roles/netem's and roles/dut_reference's GRO off on one DUT port) is held by both; this run
    records the node's own value as that one did, even when it changes nothing. With O(state=absent), or when no
    longer declared, the setting is left as it is while another record still holds it; the last holder to go puts
    back the node's own value (the one from before the first holder). A run declaring another value than the one
    a holder declared is refused before any change (in check mode too), naming the setting, its port, the value
    held and the holder's file, since the holder relies on its value and the last applied would silently win.
author:
  # validate-modules wants a GitHub account in parentheses; trexlab has none to name yet (see galaxy.yml).
  - trexlab (!UNKNOWN)
version_added: 1.0.0
requirements:
  - iproute2 (C(ip -j))
  - ethtool, for O(rx_flow_hash), O(pause) and O(gro)
options:
  addresses:
    description: Addresses to assign, each with its prefix length.
    type: list
    elements: dict
    default: []
    suboptions:
      dev: &interface
        description: Interface name.
        type: str
        required: true
      address:
        description: Address with prefix length (CIDR), IPv4 or IPv6.
        type: str
        required: true
  routes:
    description: Routes through a gateway, or without one straight out of their device (a TUN device's).
    type: list
    elements: dict
    default: []
    suboptions:
      dst:
        description: Destination prefix (CIDR).
        type: str
        required: true
      via:
        description: Gateway address; left out (or empty) for a route straight out of O(routes[].dev).
        type: str
        default: ""
      dev:
        description: Outgoing interface.
        type: str
        required: true
  neighbours:
    description: Permanent neighbour (ARP/ND) entries.
    type: list
    elements: dict
    default: []
    suboptions:
      dev: *interface
      address:
        description: The neighbour's IPv4 or IPv6 address.
        type: str
        required: true
      lladdr:
        description: The neighbour's MAC address.
        type: str
        required: true
  sysctls:
    description: Runtime sysctls, name (dotted, as sysctl names it) to value.
    type: dict
    default: {}
  sysfs:
    description: Absolute paths under /sys to values (for example a queue's rps_cpus); runtime only.
    type: dict
    default: {}
  rx_flow_hash:
    description:
      - RSS hash fields per device and flow type, C(dev/flow-type) (flow types C(udp4), C(udp6), ...) to the
        field letters of C(ethtool -N rx-flow-hash) (for example C(sdfn), addresses and ports).
    type: dict
    default: {}
  pause:
    description: Ethernet flow control per device, V(on) or V(off) for both directions (a YAML boolean is either).
    type: dict
    default: {}
  gso_max_segs:
    description:
      - The most TCP segments the kernel's TCP and GSO put in one packet handed to a device, per device
        (C(ip link set DEV gso_max_segs N)). V(1) makes the node's TCP send frames no larger than the MTU even
        where the device (a veth, a macvlan, a tap) would take 64 KB super-frames; C(ethtool -K tso off) cannot
        on a macvlan, whose GSO is always on. Runtime only.
    type: dict
    default: {}
  gro:
    description:
      - Generic receive offload per device, V(on) or V(off) (a YAML boolean is either; C(ethtool -K DEV gro)).
        With it on, the kernel merges a flow's received frames into one packet of up to 64 KB before forwarding, so
        a rule or qdisc that acts on every Nth packet, a share or a rate of packets (roles/netem,
        roles/dut_reference) acts on merged packets, not on frames; V(off) keeps the frames as received. Runtime
        only.
    type: dict
    default: {}
  prune_routes_within:
    description:
      - With O(state=present), routes through a gateway whose destination lies inside one of these prefixes but
        which are not declared are deleted (a run with fewer networks than the last one); a route without a gateway
        never is. One the node had before (not added by this module) is recorded and put back by O(state=absent).
    type: list
    elements: str
    default: []
  state:
    description: V(present) applies the declaration, V(absent) removes it and restores the previous settings.
    type: str
    choices: [present, absent]
    default: present
  state_file:
    description:
      - Where the items this module added and the settings' values from before the first run are kept (JSON),
        for O(state=absent) and for later runs.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Reports the changes it would make without making them.
  diff_mode:
    support: none
    description: No diff; RV(changes) lists the changes.
  platform:
    platforms: posix
    support: full
    description: Linux with iproute2.
"""

EXAMPLES = r"""
- name: Forwarding DUT with one test network behind each port
  trexlab.lab.netconf:
    state_file: /var/lib/trexlab/lab1/dut1/routing.json
    sysctls:
      net.ipv4.ip_forward: 1
      net.ipv6.conf.all.forwarding: 1
    addresses:
      - {dev: eth1, address: 198.18.0.1/24}
      - {dev: eth1, address: "2001:2::1/64"}
    routes:
      - {dst: 198.19.0.0/24, via: 198.18.0.2, dev: eth1}
    neighbours:
      - {dev: eth1, address: 198.18.0.2, lladdr: "02:00:00:00:00:01"}
    prune_routes_within: [198.18.0.0/15]

- name: RSS over addresses and ports, no pause frames
  trexlab.lab.netconf:
    state_file: /var/lib/trexlab/lab1/dut1/tuning.json
    rx_flow_hash: {eth1/udp4: sdfn, eth1/udp6: sdfn}
    pause: {eth1: "off"}

- name: TCP of the node sends wire-sized frames on its test port
  trexlab.lab.netconf:
    state_file: /var/lib/trexlab/lab1/server/tcp_endpoints.json
    gso_max_segs: {tcp1: 1}

- name: The DUT forwards frames as received, unmerged, from its port eth1
  trexlab.lab.netconf:
    state_file: /var/lib/trexlab/lab1/dut1/netem-gro.json
    gro: {eth1: "off"}

- name: Everything above removed, previous values back
  trexlab.lab.netconf:
    state: absent
    state_file: /var/lib/trexlab/lab1/dut1/routing.json
    sysctls:
      net.ipv4.ip_forward: 1
    addresses:
      - {dev: eth1, address: 198.18.0.1/24}
"""

RETURN = r"""
changes:
  description: What was changed (in check mode, what would be), one line per item, in the order applied.
  returned: always
  type: list
  elements: str
  sample:
    - add address 198.18.0.1/24 dev eth1
    - add route 198.19.0.0/24 via 198.18.0.2 dev eth1
    - set /proc/sys/net/ipv4/ip_forward 0 -> 1
"""

# Imports after DOCUMENTATION, EXAMPLES and RETURN: the layout ansible-test's validate-modules requires of a module.
# ruff: noqa: E402
import ipaddress
import json
import os
import subprocess

from ansible.module_utils.basic import AnsibleModule


def ip(*args: str, check: bool = True) -> str:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def family(address: str) -> str:
    return "-6" if ":" in address else "-4"


def current_addresses() -> set[tuple[str, str]]:
    found = set()
    for link in json.loads(ip("-j", "addr", "show") or "[]"):
        for a in link.get("addr_info", []):
            if a.get("scope") == "global":
                found.add((link["ifname"], str(ipaddress.ip_interface(f"{a['local']}/{a['prefixlen']}"))))
    return found


def current_routes() -> set[tuple[str, str, str]]:
    """The main table's unicast routes as (dst, gateway, dev): gateway '' for a route straight out of its device."""
    found = set()
    for fam in ("-4", "-6"):
        for r in json.loads(ip("-j", fam, "route", "show") or "[]"):
            if r.get("dst") not in (None, "default") and ("gateway" in r or r.get("type", "unicast") == "unicast"):
                dst = r["dst"] if "/" in r["dst"] else f"{r['dst']}/{32 if fam == '-4' else 128}"
                found.add((str(ipaddress.ip_network(dst, strict=False)), r.get("gateway", ""), r.get("dev", "")))
    return found


def current_neighbours() -> set[tuple[str, str, str]]:
    found = set()
    for fam in ("-4", "-6"):
        for n in json.loads(ip("-j", fam, "neigh", "show", "nud", "permanent") or "[]"):
            found.add((n["dev"], n["dst"], n.get("lladdr", "").lower()))
    return found


def routes_to(dst: str) -> list[dict]:
    """The main table's routes to exactly dst, with every attribute (-d): what 'ip route replace' may take the
    place of, and what route_argv makes again."""
    return json.loads(ip("-j", "-d", family(dst), "route", "show", "exact", dst, "table", "main") or "[]")


def route_argv(entry: dict) -> list[str]:
    """'ip route add' arguments that make again the route routes_to described (its type, gateway or next hops,
    device, protocol, scope, metric, source, preference, route metrics such as mtu, onlink)."""
    def hop(h: dict) -> list[str]:
        return [*(["via", h["gateway"]] if "gateway" in h else []), *(["dev", h["dev"]] if "dev" in h else []),
                *(["onlink"] if "onlink" in h.get("flags", []) else [])]

    argv = [entry.get("type", "unicast"), entry["dst"], *hop(entry)]
    for key, word in (("protocol", "proto"), ("scope", "scope"), ("metric", "metric"), ("prefsrc", "src"),
                      ("pref", "pref")):
        if key in entry:
            argv += [word, str(entry[key])]
    for metrics in entry.get("metrics", []):
        for name, value in metrics.items():
            argv += [name, str(value)]
    for h in entry.get("nexthops", []):
        argv += ["nexthop", *hop(h), "weight", str(h.get("weight", 1))]
    return argv


def permanent_lladdr(dev: str, address: str) -> str | None:
    """The MAC of the node's permanent neighbour entry for address on dev (what 'ip neigh replace' overwrites)."""
    for n in json.loads(ip("-j", family(address), "neigh", "show", "to", address, "dev", dev, "nud", "permanent")
                        or "[]"):
        if ipaddress.ip_address(n["dst"]) == ipaddress.ip_address(address) and n.get("lladdr"):
            return n["lladdr"].lower()
    return None


def connected_networks() -> set[tuple[str, str]]:
    return {(dev, str(ipaddress.ip_interface(a).network)) for dev, a in current_addresses()}


def sysctl_path(name: str) -> str:
    return "/proc/sys/" + name.replace(".", "/")


def read_setting(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def write_setting(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def ethtool(*args: str) -> str:
    result = subprocess.run(["ethtool", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ethtool {' '.join(args)}: {(result.stderr or result.stdout).strip()}")
    return result.stdout


#: How 'ethtool -n DEV rx-flow-hash TYPE' names each hash field, and its letter for 'ethtool -N'.
HASH_FIELDS = {"L2DA": "m", "VLAN tag": "v", "L3 proto": "t", "IP SA": "s", "IP DA": "d",
               "L4 bytes 0 & 1": "f", "L4 bytes 2 & 3": "n"}


def read_flow_hash(key: str) -> str:
    dev, flow = key.split("/")
    out = ethtool("-n", dev, "rx-flow-hash", flow)
    lines = out.splitlines()
    return "".join(letter for name, letter in HASH_FIELDS.items() if any(line.startswith(name) for line in lines))


def write_flow_hash(key: str, fields: str) -> None:
    dev, flow = key.split("/")
    ethtool("-N", dev, "rx-flow-hash", flow, fields)


def ethtool_fields(*args: str) -> dict[str, str]:
    """ethtool's 'name: value' lines (of -a, -k) as name -> value, both stripped."""
    fields = (line.partition(":") for line in ethtool(*args).splitlines())
    return {name.strip(): value.strip() for name, colon, value in fields if colon}


def read_pause(dev: str) -> str:
    fields = ethtool_fields("-a", dev)
    rx, tx = fields.get("RX", ""), fields.get("TX", "")
    return rx if rx == tx else f"rx {rx} tx {tx}"


def write_pause(dev: str, value: str) -> None:
    words = value.split()
    rx, tx = (words[1], words[3]) if len(words) == 4 else (value, value)
    ethtool("-A", dev, "rx", rx, "tx", tx)


def read_gso_max_segs(dev: str) -> str:
    links = json.loads(ip("-j", "-d", "link", "show", "dev", dev) or "[]")
    if not links or "gso_max_segs" not in links[0]:
        raise RuntimeError(f"ip -d link show dev {dev}: no gso_max_segs")
    return str(links[0]["gso_max_segs"])


def write_gso_max_segs(dev: str, value: str) -> None:
    ip("link", "set", "dev", dev, "gso_max_segs", str(value))


def read_gro(dev: str) -> str:
    value = ethtool_fields("-k", dev).get("generic-receive-offload")
    if not value:
        raise RuntimeError(f"ethtool -k {dev}: no generic-receive-offload")
    return value.split()[0]  # "on", or "off [fixed]" where the device cannot change it


def write_gro(dev: str, value: str) -> None:
    ethtool("-K", dev, "gro", value)


#: The options whose per-device values are ethtool's on or off.
ON_OFF_OPTIONS = ("pause", "gro")


def on_off(option: str, dev: str, value) -> str:
    """One device's declared value of an on/off option (ON_OFF_OPTIONS) as ethtool's word. YAML reads a bare on or
    off as a boolean (and a role's Jinja may hand one over): True is on, False off. Anything else is a ValueError
    of one line naming the option, the device and the allowed values."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value not in ("on", "off"):
        raise ValueError(f"{option} {dev}: {value!r}, allowed on or off (or a YAML boolean)")
    return value


def same(now: str, target: str) -> bool:
    """Equal settings; hex CPU masks compare by value ('00000002' is '2')."""
    if now == target:
        return True
    try:
        return int(now.replace(",", ""), 16) == int(target.replace(",", ""), 16)
    except ValueError:
        return False


def required_strings(*names: str) -> dict:
    """The argument spec of a list item made of these required strings."""
    return {name: {"type": "str", "required": True} for name in names}


#: The options as DOCUMENTATION describes them (tests/test_collection.py holds the two equal).
ARGUMENT_SPEC = {
    "addresses": {"type": "list", "elements": "dict", "default": [], "options": required_strings("dev", "address")},
    "routes": {"type": "list", "elements": "dict", "default": [],
               "options": {**required_strings("dst", "dev"), "via": {"type": "str", "default": ""}}},
    "neighbours": {"type": "list", "elements": "dict", "default": [],
                   "options": required_strings("dev", "address", "lladdr")},
    "sysctls": {"type": "dict", "default": {}},
    "sysfs": {"type": "dict", "default": {}},
    "rx_flow_hash": {"type": "dict", "default": {}},
    "pause": {"type": "dict", "default": {}},
    "gso_max_segs": {"type": "dict", "default": {}},
    "gro": {"type": "dict", "default": {}},
    "prune_routes_within": {"type": "list", "elements": "str", "default": []},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "state_file": {"type": "path", "required": True},
}


#: The items the module adds, in the order it builds them up (it tears them down the other way round).
ITEMS = ("addresses", "routes", "neighbours")


#: The items whose adding can take the place of an entry the node had: 'ip route replace' (a route to the same
#: destination with the same metric) and 'ip neigh replace' (a permanent entry for the same address).
REPLACING = ("routes", "neighbours")


def read_state(path: str) -> tuple[dict, dict | None, dict]:
    """state_file: each setting's value from before the first run, per kind of item the items this module
    added (None for a file of an earlier version, which recorded the settings only), and per item of REPLACING
    the node's entries its adding took the place of (a list of routes_to entries; a neighbour's MAC), with under
    "pruned" the node's routes that prune_routes_within deleted (routes_to entries)."""
    replaced: dict = {kind: {} for kind in REPLACING} | {"pruned": []}
    if not os.path.exists(path):
        return {}, {kind: set() for kind in ITEMS}, replaced
    with open(path) as f:
        saved = json.load(f)
    if isinstance(saved.get("settings"), dict) and isinstance(saved.get("added"), dict):
        for kind in REPLACING:
            replaced[kind] = {tuple(item): previous for item, previous in saved.get("replaced", {}).get(kind, [])}
        replaced["pruned"] = saved.get("replaced", {}).get("pruned", [])
        return (saved["settings"], {kind: {tuple(item) for item in saved["added"].get(kind, [])} for kind in ITEMS},
                replaced)
    return saved, None, replaced


def write_state(path: str, settings: dict, added: dict, replaced: dict, holds: dict) -> None:
    """holds: the value this run declares for each setting it holds (a key of settings), which held_elsewhere
    gives another record's run to compare its own with."""
    if not settings and not any(added.values()) and not any(replaced.values()):
        if os.path.exists(path):
            os.unlink(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # Whole or not at all (a new file renamed over the old): another role's run reads it (held_elsewhere), and a
    # record cut short would hold nothing there.
    with open(f"{path}.tmp", "w") as f:
        json.dump({"settings": settings, "holds": {key: holds[key] for key in settings if key in holds},
                   "added": {kind: sorted(added[kind]) for kind in ITEMS},
                   "replaced": {**{kind: sorted(map(list, replaced[kind].items())) for kind in REPLACING},
                                "pruned": replaced["pruned"]}}, f)
    os.replace(f"{path}.tmp", path)


def held_elsewhere(path: str) -> dict[str, tuple[str, str | None, str]]:
    """The settings the other netconf records of path's directory (the other roles' state files of the node) hold,
    as key -> (the node's own value they keep for absent, the value the holder declared, the holder's file). The
    declared value is None in a record of an earlier version, which did not keep it."""
    folder = os.path.dirname(path) or "."
    held: dict[str, tuple[str, str | None, str]] = {}
    if not os.path.isdir(folder):
        return held
    for name in sorted(os.listdir(folder)):
        other = os.path.join(folder, name)
        if not name.endswith(".json") or os.path.realpath(other) == os.path.realpath(path):
            continue
        try:
            with open(other) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue  # not a netconf record: those are written whole (write_state)
        if isinstance(record, dict) and isinstance(record.get("settings"), dict) and isinstance(record.get("added"),
                                                                                                dict):
            holds = record.get("holds") if isinstance(record.get("holds"), dict) else {}
            for key, own in record["settings"].items():
                held.setdefault(key, (str(own), str(holds[key]) if key in holds else None, other))
    return held


def setting_name(key: str) -> str:
    """A state_file key (setting_io) as a refusal names it: the setting and its port, or the sysctl or sysfs path."""
    kind, name = key.split(" ", 1) if " " in key else (key, "")
    if kind == "rx-flow-hash":
        dev, flow = name.split("/", 1)
        return f"rx_flow_hash {flow} of port {dev}"
    if kind in ("pause", "gro", "gso_max_segs"):
        return f"{kind} of port {name}"
    if key.startswith("/proc/sys/"):
        return f"sysctl {key.removeprefix('/proc/sys/').replace('/', '.')}"
    return f"sysfs {key}"


def conflict(declared: dict, others: dict) -> str:
    """'' where each declared setting another record holds is declared at the value that one declared, else the
    one-line refusal: the holder still relies on its value, and the second would silently take it over (the last
    applied wins). A record of an earlier version (no declared values) is taken to hold the value the node has."""
    for key in sorted(set(declared) & set(others)):
        held, holder = others[key][1:]
        if held is None:
            try:
                held = setting_io(key)[0]()
            except (RuntimeError, OSError):
                continue  # its device is gone: nothing there to rely on
        if not same(held, declared[key]):
            return (f"{setting_name(key)}: asked {declared[key]}, but {holder} holds it at {held} (another role's "
                    f"record on this node, which relies on it): allowed {held} while that one holds it; nothing "
                    f"changed (remove that role first, state absent)")
    return ""


def setting_io(key: str):
    """How to read and write the setting a state_file key names (the keys main() gives them)."""
    kind, name = key.split(" ", 1) if " " in key else (key, "")
    if kind == "rx-flow-hash":
        return (lambda: "".join(sorted(read_flow_hash(name))), lambda value: write_flow_hash(name, value))
    if kind == "pause":
        return (lambda: read_pause(name), lambda value: write_pause(name, value))
    if kind == "gso_max_segs":
        return (lambda: read_gso_max_segs(name), lambda value: write_gso_max_segs(name, value))
    if kind == "gro":
        return (lambda: read_gro(name), lambda value: write_gro(name, value))
    if not key.startswith("/proc/sys/") and not os.path.realpath(key).startswith("/sys/"):
        raise OSError(f"sysfs path {key}: allowed only paths under /sys")
    return (lambda: read_setting(key), lambda value: write_setting(key, value))


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    p = module.params
    present = p["state"] == "present"
    try:
        want_addr = {(a["dev"], str(ipaddress.ip_interface(a["address"]))) for a in p["addresses"]}
        want_routes = {(str(ipaddress.ip_network(r["dst"], strict=False)),
                        str(ipaddress.ip_address(r["via"])) if r["via"] else "", r["dev"]) for r in p["routes"]}
        want_neigh = {(n["dev"], str(ipaddress.ip_address(n["address"])), n["lladdr"].lower())
                      for n in p["neighbours"]}
        # Every setting as key -> declared value; the key is also its name in state_file (setting_io).
        declared = {sysctl_path(k): str(v) for k, v in p["sysctls"].items()}
        declared.update({path: str(v) for path, v in p["sysfs"].items()})
        declared.update({f"rx-flow-hash {key}": "".join(sorted(fields)) for key, fields in p["rx_flow_hash"].items()})
        declared.update({f"gso_max_segs {dev}": str(int(value)) for dev, value in p["gso_max_segs"].items()})
        declared.update({f"{option} {dev}": on_off(option, dev, value)
                         for option in ON_OFF_OPTIONS for dev, value in p[option].items()})
    except (KeyError, ValueError) as exc:
        module.fail_json(msg=f"bad declaration: {exc}")
    changes: list[str] = []
    try:
        saved, added, replaced = read_state(p["state_file"])
        others = held_elsewhere(p["state_file"])
    except (OSError, ValueError, AttributeError) as exc:
        module.fail_json(msg=f"state_file {p['state_file']}: {exc}")
    if present and (refusal := conflict(declared, others)):
        module.fail_json(msg=refusal)  # before any change, in check mode too

    def apply(kind: str, item: tuple, add: bool, why: str = "") -> None:
        """Add or delete one item, and keep the record of what this module added in step."""
        if kind == "addresses":
            dev, address = item
            changes.append(f"{'add' if add else 'delete'}{why} address {address} dev {dev}")
            argv = [family(address), "addr", "add" if add else "del", address, "dev", dev,
                    *(["nodad"] if add and ":" in address else [])]
        elif kind == "routes":
            dst, via, dev = item
            gateway = ["via", via] if via else []
            changes.append(f"{'add' if add else 'delete'}{why} route {' '.join([dst, *gateway])} dev {dev}")
            argv = [family(dst), "route", "replace" if add else "del", dst, *gateway, "dev", dev]
        else:
            dev, address, lladdr = item
            changes.append(f"{'add' if add else 'delete'}{why} neighbour {address} lladdr {lladdr} dev {dev}")
            argv = ([family(address), "neigh", "replace", address, "lladdr", lladdr, "dev", dev, "nud", "permanent"]
                    if add else [family(address), "neigh", "del", address, "dev", dev])
        if module.check_mode:
            pass
        elif add and kind in REPLACING:
            # What the replace takes the place of is the node's own (what an earlier run added and this one no
            # longer declares is removed before anything is added): recorded before it goes, put back with the item.
            if kind == "routes":
                before = routes_to(item[0])
                ip(*argv)
                taken = [r for r in before if r not in routes_to(item[0])]
            else:
                taken = permanent_lladdr(item[0], item[1])
                ip(*argv)
            if taken:
                replaced[kind].setdefault(item, taken)
        elif not (kind == "neighbours" and item in replaced[kind]):  # that one: ours replaced by the node's
            ip(*argv)
        if add:
            added[kind].add(item)
        else:
            added[kind].discard(item)
            if kind in REPLACING and item in replaced[kind]:
                put_back(kind, item)

    def put_back(kind: str, item: tuple) -> None:
        """The node's entry (or routes) that adding item took the place of, as they were."""
        previous = replaced[kind].pop(item)
        if kind == "neighbours":
            dev, address = item[0], item[1]
            changes.append(f"put back neighbour {address} lladdr {previous} dev {dev}")
            if not module.check_mode:
                ip(family(address), "neigh", "replace", address, "lladdr", previous, "dev", dev, "nud", "permanent")
            return
        for entry in previous:
            changes.append(f"put back route {' '.join(route_argv(entry))}")
            if not module.check_mode and entry not in routes_to(item[0]):
                ip(family(item[0]), "route", "add", *route_argv(entry), "table", "main")

    def current(kind: str) -> set:
        return {"addresses": current_addresses, "routes": current_routes, "neighbours": current_neighbours}[kind]()

    def wanted(kind: str) -> set:
        if kind == "addresses":
            return want_addr
        if kind == "neighbours":
            return want_neigh
        # A route to a connected network of its device is the kernel's link route: left to the kernel.
        connected = connected_networks() | {(d, str(ipaddress.ip_interface(a).network)) for d, a in want_addr}
        return {r for r in want_routes if (r[2], r[0]) not in connected}

    def orphans(kind: str) -> None:
        """Put back what an item took the place of when the item is no longer the module's (gone from the node
        by other hands, or no longer declared)."""
        for item in sorted(set(replaced.get(kind, {})) - added[kind]):
            put_back(kind, item)

    def prune_routes() -> None:
        within = [ipaddress.ip_network(n) for n in p["prune_routes_within"]]
        wanted_dsts = {r[0] for r in wanted("routes")}
        for dst, via, dev in sorted(current_routes()):
            net = ipaddress.ip_network(dst)
            if via and dst not in wanted_dsts and any(net.version == w.version and net.subnet_of(w) for w in within):
                if (dst, via, dev) not in added["routes"] and not module.check_mode:
                    # The node's own (not one an earlier run added): kept, for absent to put back.
                    replaced["pruned"] += [r for r in routes_to(dst) if r.get("gateway") == via and r.get("dev") == dev]
                apply("routes", (dst, via, dev), False, " undeclared")

    try:
        for path in p["sysfs"]:
            if not os.path.realpath(path).startswith("/sys/"):
                raise OSError(f"sysfs path {path}: allowed only paths under /sys")
        if added is None:
            # A file of an earlier version, which did not record its items: as that version's absent did, the
            # declared items the node has are taken for the module's own.
            added = {kind: wanted(kind) & current(kind) for kind in ITEMS}
        try:
            if present:
                # What an earlier run added and this one no longer declares goes first (torn down from the
                # neighbours to the addresses), then the declaration is built up from the addresses.
                for kind in reversed(ITEMS):
                    for item in sorted((added[kind] - wanted(kind)) & current(kind)):
                        apply(kind, item, False, " no longer declared")
                    added[kind] &= wanted(kind)
                    orphans(kind)
                for kind in ITEMS:
                    for item in sorted(wanted(kind) - current(kind)):
                        apply(kind, item, True)
                    if kind == "routes":
                        prune_routes()
            else:
                # Exactly what this module added: an item the node had before the first run is left.
                for kind in reversed(ITEMS):
                    for item in sorted(added[kind] & current(kind)):
                        apply(kind, item, False)
                    added[kind].clear()
                    orphans(kind)
                    if kind == "routes":
                        for entry in replaced["pruned"]:
                            changes.append(f"put back pruned route {' '.join(route_argv(entry))}")
                            if not module.check_mode and entry not in routes_to(entry["dst"]):
                                ip(family(entry["dst"]), "route", "add", *route_argv(entry), "table", "main")
            for key in sorted(set(declared) | set(saved)):
                read, write = setting_io(key)
                if not (present and key in declared) and key in saved and key in others:
                    # Another record still holds it (module docstring): left as that one needs it, for the last
                    # holder to put back.
                    saved.pop(key)
                    continue
                if present and key in declared and key not in saved and key in others:
                    # Held already (and most likely set already, so this run would record nothing): this one
                    # holds it too, with the node's own value from before the first holder.
                    saved[key] = others[key][0]
                if present and key in declared:
                    target = declared[key]
                elif key in saved:  # absent, or no longer declared: the value from before the first run
                    target = str(saved[key])
                else:
                    continue
                try:
                    now = read()
                except (RuntimeError, OSError):
                    if key in declared:
                        raise
                    saved.pop(key)  # a recorded setting whose device is gone: nothing left to put back
                    continue
                if not same(now, target):
                    changes.append(f"set {key} {now} -> {target}")
                    if present and key in declared:
                        saved.setdefault(key, now)
                    if not module.check_mode:
                        write(target)
                if not (present and key in declared):
                    saved.pop(key, None)
        finally:
            # Also after a failure half way: what was added so far is recorded, so that absent removes it.
            if present and not module.check_mode:
                write_state(p["state_file"], saved, added, replaced, declared)
        if not present and not module.check_mode and os.path.exists(p["state_file"]):
            os.unlink(p["state_file"])
    except (RuntimeError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=changes)
    module.exit_json(changed=bool(changes), changes=changes)


if __name__ == "__main__":
    main()
