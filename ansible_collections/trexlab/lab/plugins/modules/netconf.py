#!/usr/bin/python
"""Ansible module: make a node's test-port IP state what a role declares, and nothing more.

Addresses, routes, permanent neighbour entries, runtime sysctls, sysfs
values and NIC settings (RSS hash fields, pause frames: ethtool) are compared
with what ``ip -j``, /proc/sys, /sys and ethtool say and only the difference
is applied, so a second run changes nothing; check mode reports the difference
without applying it. ``state: absent`` removes exactly the declared items and
puts back each setting's value from before the first run (kept in
``state_file``). Sysctls are runtime only: a benchmark set-up is not meant to
survive a reboot, and nodes of the local lab share one /etc.

A route whose destination is the connected network of its device is left to
the kernel (it already exists, as a link route).
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: netconf
short_description: Idempotent, reversible addresses, routes, permanent neighbours and runtime settings of a node
description:
  - Compares the declared addresses, routes (with a gateway), permanent neighbour entries, runtime sysctls,
    sysfs values and NIC settings (RSS hash fields and pause frames, through ethtool) with what the node has,
    and applies only the difference, so a second run changes nothing. Check mode reports the difference.
  - With O(state=absent) it removes exactly the declared items and puts back every setting's value from
    before the first run, kept in O(state_file).
  - A route whose destination is the connected network of its device is left to the kernel.
  - Sysctls and sysfs values are runtime only; nothing is written to /etc.
author:
  # validate-modules wants a GitHub account in parentheses; trexlab has none to name yet (see galaxy.yml).
  - trexlab (!UNKNOWN)
version_added: 1.0.0
requirements:
  - iproute2 (C(ip -j))
  - ethtool, for O(rx_flow_hash) and O(pause)
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
    description: Routes through a gateway.
    type: list
    elements: dict
    default: []
    suboptions:
      dst:
        description: Destination prefix (CIDR).
        type: str
        required: true
      via:
        description: Gateway address.
        type: str
        required: true
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
    description: Ethernet flow control per device, V(on) or V(off) for both directions.
    type: dict
    default: {}
  prune_routes_within:
    description:
      - With O(state=present), routes through a gateway whose destination lies inside one of these prefixes but
        which are not declared are deleted (a run with fewer networks than the last one).
    type: list
    elements: str
    default: []
  state:
    description: V(present) applies the declaration, V(absent) removes it and restores the previous settings.
    type: str
    choices: [present, absent]
    default: present
  state_file:
    description: Where the settings' values from before the first run are kept (JSON), for O(state=absent).
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
    found = set()
    for fam in ("-4", "-6"):
        for r in json.loads(ip("-j", fam, "route", "show") or "[]"):
            if "gateway" in r and r.get("dst") not in (None, "default"):
                dst = r["dst"] if "/" in r["dst"] else f"{r['dst']}/{32 if fam == '-4' else 128}"
                found.add((str(ipaddress.ip_network(dst, strict=False)), r["gateway"], r.get("dev", "")))
    return found


def current_neighbours() -> set[tuple[str, str, str]]:
    found = set()
    for fam in ("-4", "-6"):
        for n in json.loads(ip("-j", fam, "neigh", "show", "nud", "permanent") or "[]"):
            found.add((n["dev"], n["dst"], n.get("lladdr", "").lower()))
    return found


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


def read_pause(dev: str) -> str:
    lines = dict(line.split(":", 1) for line in ethtool("-a", dev).splitlines() if ":" in line)
    rx, tx = lines.get("RX", "").strip(), lines.get("TX", "").strip()
    return rx if rx == tx else f"rx {rx} tx {tx}"


def write_pause(dev: str, value: str) -> None:
    words = value.split()
    rx, tx = (words[1], words[3]) if len(words) == 4 else (value, value)
    ethtool("-A", dev, "rx", rx, "tx", tx)


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
    "routes": {"type": "list", "elements": "dict", "default": [], "options": required_strings("dst", "via", "dev")},
    "neighbours": {"type": "list", "elements": "dict", "default": [],
                   "options": required_strings("dev", "address", "lladdr")},
    "sysctls": {"type": "dict", "default": {}},
    "sysfs": {"type": "dict", "default": {}},
    "rx_flow_hash": {"type": "dict", "default": {}},
    "pause": {"type": "dict", "default": {}},
    "prune_routes_within": {"type": "list", "elements": "str", "default": []},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "state_file": {"type": "path", "required": True},
}


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    p = module.params
    present = p["state"] == "present"
    try:
        want_addr = {(a["dev"], str(ipaddress.ip_interface(a["address"]))) for a in p["addresses"]}
        want_routes = {(str(ipaddress.ip_network(r["dst"], strict=False)), str(ipaddress.ip_address(r["via"])),
                        r["dev"]) for r in p["routes"]}
        want_neigh = {(n["dev"], str(ipaddress.ip_address(n["address"])), n["lladdr"].lower())
                      for n in p["neighbours"]}
    except (KeyError, ValueError) as exc:
        module.fail_json(msg=f"bad declaration: {exc}")
    changes: list[str] = []

    def addresses() -> None:
        have = current_addresses()
        for dev, address in sorted(want_addr - have if present else want_addr & have):
            changes.append(f"{'add' if present else 'delete'} address {address} dev {dev}")
            if not module.check_mode:
                ip(family(address), "addr", "add" if present else "del", address, "dev", dev,
                   *(["nodad"] if present and ":" in address else []))

    def routes() -> None:
        connected = connected_networks() | {(d, str(ipaddress.ip_interface(a).network)) for d, a in want_addr}
        have = current_routes()
        wanted = {r for r in want_routes if (r[2], r[0]) not in connected}
        for dst, via, dev in sorted(wanted - have if present else wanted & have):
            changes.append(f"{'add' if present else 'delete'} route {dst} via {via} dev {dev}")
            if not module.check_mode:
                ip(family(dst), "route", "replace" if present else "del", dst, "via", via, "dev", dev)
        if present:
            within = [ipaddress.ip_network(n) for n in p["prune_routes_within"]]
            wanted_dsts = {r[0] for r in wanted}
            for dst, via, dev in sorted(have):
                net = ipaddress.ip_network(dst)
                if dst not in wanted_dsts and any(net.version == w.version and net.subnet_of(w) for w in within):
                    changes.append(f"delete undeclared route {dst} via {via} dev {dev}")
                    if not module.check_mode:
                        ip(family(dst), "route", "del", dst, "via", via, "dev", dev)

    def neighbours() -> None:
        have = current_neighbours()
        for dev, address, lladdr in sorted(want_neigh - have if present else want_neigh & have):
            changes.append(f"{'add' if present else 'delete'} neighbour {address} lladdr {lladdr} dev {dev}")
            if not module.check_mode:
                if present:
                    ip(family(address), "neigh", "replace", address, "lladdr", lladdr, "dev", dev, "nud", "permanent")
                else:
                    ip(family(address), "neigh", "del", address, "dev", dev)

    try:
        # Build up from addresses to routes; tear down the other way round.
        for step in (addresses, routes, neighbours) if present else (neighbours, routes, addresses):
            step()
        saved = {}
        if os.path.exists(p["state_file"]):
            with open(p["state_file"]) as f:
                saved = json.load(f)
        # Every setting as key -> (declared value, read, write); the key is also its name in state_file.
        settings = {sysctl_path(k): (v, read_setting, write_setting) for k, v in p["sysctls"].items()}
        for path, value in p["sysfs"].items():
            if not os.path.realpath(path).startswith("/sys/"):
                raise OSError(f"sysfs path {path}: allowed only paths under /sys")
            settings[path] = (value, read_setting, write_setting)
        for key, fields in p["rx_flow_hash"].items():
            settings[f"rx-flow-hash {key}"] = (
                "".join(sorted(fields)), lambda k, key=key: "".join(sorted(read_flow_hash(key))),
                lambda k, v, key=key: write_flow_hash(key, v))
        for dev, value in p["pause"].items():
            settings[f"pause {dev}"] = (value, lambda k, dev=dev: read_pause(dev),
                                        lambda k, v, dev=dev: write_pause(dev, v))
        for key, (value, read, write) in sorted(settings.items()):
            now = read(key)
            target = str(value) if present else saved.get(key, now)
            if not same(now, target):
                changes.append(f"set {key} {now} -> {target}")
                if present:
                    saved.setdefault(key, now)
                if not module.check_mode:
                    write(key, target)
        if not module.check_mode:
            if present and saved:
                os.makedirs(os.path.dirname(p["state_file"]), exist_ok=True)
                with open(p["state_file"], "w") as f:
                    json.dump(saved, f)
            elif not present and os.path.exists(p["state_file"]):
                os.unlink(p["state_file"])
    except (RuntimeError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=changes)
    module.exit_json(changed=bool(changes), changes=changes)


if __name__ == "__main__":
    main()
