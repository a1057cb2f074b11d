"""Jinja filters of the trexlab.lab roles (trexlab.lab.<name>): the address plan, the DUT impairment and
reference plans and the SIIT tables come from the planning code in plugin_utils, never retyped in YAML.

plugin_utils holds trexlab's own planning modules (in the repository, links to the trexlab package's files;
in the built collection, copies): the collection needs no trexlab Python package.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import shlex

from ansible_collections.trexlab.lab.plugins.plugin_utils import impairment, reference_dut, rolevalues, siit
from ansible_collections.trexlab.lab.plugins.plugin_utils.addressing import (
    destination,
    eamt_entries,
    siit_translator_routes,
)
from ansible_collections.trexlab.lab.plugins.plugin_utils.params import InvalidParameter
from ansible_collections.trexlab.lab.plugins.plugin_utils.siit import jool_config


def peer_port(peer_mac: str, all_ports: list[dict]) -> dict:
    """The test port (of any node) whose MAC is peer_mac: the other end of a link."""
    for port in all_ports:
        if port and port.get("mac", "").lower() == str(peer_mac).lower():
            return port
    raise ValueError(f"no node in the inventory has a test port with MAC {peer_mac}")


def port_addresses(ports: list[dict]) -> list[dict]:
    return [{"dev": p["name"], "address": p[key]} for p in ports for key in ("ipv4", "ipv6") if p.get(key)]


def destination_of(x: int, direction: str) -> dict:
    return destination(int(x), direction)


def route(dest: dict, peer: dict, dev: str) -> list[dict]:
    """IPv4 and IPv6 routes of one destination network via the peer port's addresses."""
    routes = []
    for family in ("ipv4", "ipv6"):
        if peer.get(family):
            routes.append({"dst": dest[f"{family}_net"], "via": peer[family].split("/")[0], "dev": dev})
    return routes


def neighbours(port: dict, peers: dict) -> list[dict]:
    """Permanent neighbour entries for the peer of a port, so no ARP/ND runs during trials."""
    peer = peers[port["name"]]
    return [{"dev": port["name"], "address": peer[f].split("/")[0], "lladdr": peer["mac"]}
            for f in ("ipv4", "ipv6") if peer.get(f)]


def endpoint_neighbours(ports: list[dict], endpoint_ports: list[dict]) -> list[dict]:
    """Permanent neighbour entries for the TCP endpoints (client, server) on the links of these ports.

    An endpoint port's peer_mac names the DUT port it faces: that port gets the endpoint's addresses pinned
    to its MAC, as its test-port peer does, so no ARP/ND runs while TCP tests share the link with trials.
    """
    by_mac = {str(p.get("mac", "")).lower(): p for p in ports}
    entries = []
    for endpoint in endpoint_ports:
        port = by_mac.get(str(endpoint.get("peer_mac", "")).lower())
        if port:
            entries += [{"dev": port["name"], "address": endpoint[f].split("/")[0], "lladdr": endpoint["mac"]}
                        for f in ("ipv4", "ipv6") if endpoint.get(f)]
    return entries


def cpu_mask(cpus: list) -> str:
    """A CPU list as the hex mask sysfs wants: [1] -> '2', [0, 2] -> '5'."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << int(cpu)
    return f"{mask:x}"


def port_drivers(names: list, facts: dict) -> list[dict]:
    """Each test port's driver from a node's network facts: the kernel module behind its device ('built-in'
    when the driver is not a module, 'virtual' for a port with no device: veth, tap), and whether it is a NIC
    (a port with a device, PCI or virtio, has RSS hash fields and pause frames)."""
    ports = []
    for name in names:
        port = facts.get(str(name).replace("-", "_"))  # Ansible writes '-' of an interface's fact name as '_'
        if not isinstance(port, dict) or "device" not in port:
            raise ValueError(f"test_ports: no interface {name} on this node (its network facts list none)")
        nic = "pciid" in port
        ports.append({"name": name, "driver": port.get("module") or ("built-in" if nic else "virtual"), "nic": nic})
    return ports


def probed_port_facts(lines: list) -> dict:
    """The network facts port_drivers reads, from roles/dut_tuning's shell probe (no Python on the node): a line
    "<name> <device link or -> <driver module or ->" per port that exists (the facts' device is its name under
    /sys/class/net), "<name> -" per port that does not (left out, as the facts leave it out), a cpufreq line
    and the host's "kernel: " and "cpu_model: " lines (not ports: probed_host_facts)."""
    facts = {}
    for line in lines:
        fields = str(line).split()
        if len(fields) != 3 or fields[0].endswith(":"):  # "kernel: ...": no interface name has a colon
            continue
        name, pciid, module = fields
        port = {"device": name}
        if pciid != "-":
            port["pciid"] = pciid
        if module != "-":
            port["module"] = module
        facts[name.replace("-", "_")] = port
    return facts


def probed_host_facts(lines: list) -> dict:
    """The node's kernel release and CPU model from roles/dut_tuning's probe ("kernel: <uname -r>", "cpu_model:
    <model name>"); None where the probe printed nothing (no model name in /proc/cpuinfo)."""
    found = {}
    for line in lines:
        key, sep, value = str(line).strip().partition(": ")
        if sep and key in ("kernel", "cpu_model"):
            found[key] = value.strip() or None
    return {"kernel": found.get("kernel"), "cpu_model": found.get("cpu_model")}


def cpufreq_settings(cpus: list, governor: str | None, frequency_khz: int | None) -> dict:
    """cpufreq sysfs values fixing the clock of the given CPUs: a governor and min = max frequency.

    Sorted by path, max comes before min, the order in which a higher fixed frequency can be set."""
    settings = {}
    for cpu in cpus:
        base = f"/sys/devices/system/cpu/cpu{int(cpu)}/cpufreq/"
        if governor:
            settings[base + "scaling_governor"] = str(governor)
        if frequency_khz:
            settings[base + "scaling_max_freq"] = str(int(frequency_khz))
            settings[base + "scaling_min_freq"] = str(int(frequency_khz))
    return settings


def _numbers(settings: dict) -> dict:
    """Extra vars arrive as strings ('-e netem_loss_percent=1'): numbers are read as numbers, the rest kept."""
    typed = {}
    for key, value in settings.items():
        if isinstance(value, str):
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    pass
        typed[key] = value
    return typed


def impairment_plan(settings: dict, ports: list[dict], kernel_has_netem: bool, state: str = "present") -> dict:
    """roles/netem's plan: trexlab.impairment.plan, with a bad or impossible request as 'error' (one line)."""
    nothing = {"devices": [], "nft": "", "tc": []}
    result = {"error": None, "backend": "none", "table": impairment.TABLE, **nothing, "applied": nothing}
    if state == "absent":
        return result
    try:
        plan = impairment.plan(_numbers(settings), ports, bool(kernel_has_netem))
    except InvalidParameter as exc:
        return {**result, "error": str(exc)}
    applied = {k: plan[k] for k in ("devices", "nft", "tc")}
    return {**result, **plan, "applied": applied}


#: The root qdiscs roles/netem puts on a port it impairs (netem; htb for a selective delay).
NETEM_ROOTS = ("netem", "htb")


def _probed_roots(probe_lines: list) -> dict[str, tuple[str, str]]:
    """Each port's root qdisc (kind, handle) from the netem probe's '#root <dev> <kind> <handle>' lines."""
    roots = {}
    for line in probe_lines:
        parts = str(line).split()
        if len(parts) == 4 and parts[0] == "#root":
            roots[parts[1]] = (parts[2], parts[3])
    return roots


#: Fields of 'tc -j qdisc show' that are no part of a qdisc's configuration: dev (in a dump of every device only),
#: the kernel's reference count (it rises with child classes and filters) and htb's count of frames it sent
#: unclassified (traffic moves it).
QDISC_NOT_IDENTITY = ("dev", "refcnt")
QDISC_COUNTERS = ("direct_packets_stat",)


def _probed_qdiscs(probe_lines: list) -> dict[str, list]:
    """Each device's qdiscs from the netem probe's '#qdiscs <tc -j qdisc show>' line ({} where tc gave no JSON)."""
    for line in probe_lines:
        if str(line).startswith("#qdiscs "):
            try:
                dump = json.loads(str(line)[len("#qdiscs "):])
            except ValueError:
                return {}
            found: dict[str, list] = {}
            for qdisc in dump if isinstance(dump, list) else []:
                if isinstance(qdisc, dict):
                    found.setdefault(str(qdisc.get("dev", "")), []).append(qdisc)
            return found
    return {}


def qdisc_tree(qdiscs: list) -> list[str]:
    """The identity of a device's root qdisc: the root and every qdisc below it (not ingress or clsact, which hang
    off no root), each as the kernel reports its kind, handle, parent and parameters (canonical JSON, sorted),
    without QDISC_NOT_IDENTITY and QDISC_COUNTERS. [] for no root."""
    if not isinstance(qdiscs, list):
        return []
    tree = [q for q in qdiscs if isinstance(q, dict) and q.get("root")][:1]
    majors = {str(q.get("handle")) for q in tree}
    grew = bool(tree)
    while grew:
        grew = False
        for q in qdiscs:
            if isinstance(q, dict) and q not in tree and str(q.get("parent", "")).partition(":")[0] + ":" in majors:
                tree.append(q)
                majors.add(str(q.get("handle")))
                grew = True
    return sorted(json.dumps({**{k: v for k, v in q.items() if k not in QDISC_NOT_IDENTITY},
                              **({"options": {k: v for k, v in q["options"].items() if k not in QDISC_COUNTERS}}
                                 if isinstance(q.get("options"), dict) else {})}, sort_keys=True) for q in tree)


def _root_words(recorded) -> str:
    """A recorded root as '<kind> <handle>' (a record's qdisc list, or the '<kind> <handle>' of an earlier one)."""
    if isinstance(recorded, list):
        root = next((q for q in recorded if isinstance(q, dict) and q.get("root")), {})
        return f"{root.get('kind', '?')} {root.get('handle', '?')}" if root else ""
    return str(recorded or "")


def own_roots(record: dict, probe_lines: list) -> list:
    """The devices of roles/netem's record whose root qdisc is still the one the role put there: the only roots
    absent or a new plan may delete. The record holds each root's qdisc tree as 'tc -j qdisc show dev' read it
    back after applying ("roots": device -> that list): a root of the same kind and handle but other parameters or
    other qdiscs below it (an htb 1: tree someone put there since) is theirs, as is a tbf or fq: deleting it took the
    node's own root away. A record of an earlier version holds "<kind> <handle>" (judged by those; one without
    "roots" by kind, NETEM_ROOTS), as that version did."""
    probed, recorded = _probed_roots(probe_lines), record.get("roots")
    if not isinstance(recorded, dict):
        return [dev for dev in record.get("devices", []) if probed.get(dev, ("", ""))[0] in NETEM_ROOTS]
    trees = _probed_qdiscs(probe_lines)
    own = []
    for dev in record.get("devices", []):
        mine = recorded.get(dev)
        if isinstance(mine, list):
            ours = bool(qdisc_tree(mine)) and qdisc_tree(mine) == qdisc_tree(trees.get(dev, []))
        else:
            ours = probed.get(dev) == tuple(str(mine or "").split())
        if ours:
            own.append(dev)
    return own


def roots_left_note(record: dict, probe_lines: list) -> str:
    """'' where each recorded port's root is still the role's (own_roots), else the line saying which the role
    leaves and why: each port's root now beside the one the role put there."""
    probed, recorded, ours = _probed_roots(probe_lines), record.get("roots"), own_roots(record, probe_lines)
    left = []
    for dev in record.get("devices", []):
        if dev not in ours:
            put = f"; netem's was {_root_words(recorded.get(dev)) or 'not read back'}" if isinstance(recorded, dict) \
                else ""
            left.append(f"{dev} (now {' '.join(probed.get(dev, ('none',)))}{put})")
    return (f"netem: left the root qdisc of {', '.join(left)}: not the one netem put there (replaced since, or its "
            f"parameters or the qdiscs below it changed), so not the role's to delete") if left else ""


def root_qdisc_error(devices: list, probe_lines: list, record: dict, replace: bool = False) -> str:
    """'' where roles/netem may replace the root qdisc of each of these devices, else the one-line refusal.

    probe_lines hold the netem probe's '#root <dev> <kind> <handle>' lines. netem puts its own root qdisc on a port
    and absent deletes it, which gives the port the kernel's default root back (the one of handle 0:). A root the
    node's user set (fq, a tbf, an htb tree) would be gone for good: tc dumps no arguments that make it again
    (options in other units, child classes and filters), so it is refused before any change, unless it is this
    role's own from an earlier run (own_roots of its record) or replace (netem_replace_root) says to take it."""
    if replace:
        return ""
    roots, ours = _probed_roots(probe_lines), own_roots(record, probe_lines)
    for dev in devices:
        kind, handle = roots.get(dev, ("", "0:"))
        if handle != "0:" and dev not in ours:
            return (f"test port {dev} has a root qdisc of its own ({kind} {handle}), which netem would replace and "
                    f"absent could not put back: allowed only the kernel's default root qdisc there (remove it: tc "
                    f"qdisc del dev {dev} root, or leave its direction out of netem_directions, or set "
                    f"netem_replace_root: true to replace it for good)")
    return ""


def reference_plan(settings: dict, ports: list[dict], state: str = "present") -> dict:
    """roles/dut_reference's plan: trexlab.reference_dut.plan, with a bad request as 'error' (one line)."""
    result = {"error": None, "table": reference_dut.TABLE, "nft": "", "gro_off": [], "applied": {"nft": ""}}
    if state == "absent":
        return result
    try:
        plan = reference_dut.plan(_numbers(settings), ports)
    except InvalidParameter as exc:
        return {**result, "error": str(exc)}
    return {**result, "nft": plan["nft"], "gro_off": plan["gro_off"], "applied": {"nft": plan["nft"]}}


def jool_plan(settings: dict, host: dict | None, state: str = "present") -> dict:
    """roles/siit_jool's plan: trexlab.siit.plan for the role's settings (networks, instance, pool6, state_dir)
    and what its probe found (None where the host cannot load modules), with a bad setting as 'error' (one
    line)."""
    try:
        return {"error": None, **siit.plan(state, settings["networks"], settings["instance"], settings["pool6"],
                                           settings["state_dir"], host)}
    except InvalidParameter as exc:
        return {"error": str(exc), "config": {"eamt": []}, "install": False, "script": "", "record": None}


def _refusal(check, *args) -> str:
    try:
        check(*args)
    except InvalidParameter as exc:
        return str(exc)
    return ""


def ifname_error(value, name: str) -> str:
    """'' for a good interface name, else the one-line refusal (for a role's assert task)."""
    return _refusal(rolevalues.check_interface, name, value)


def ifnames_error(ports: list, name: str) -> str:
    """The first refusal among the names of a list of test ports, or ''."""
    if not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports):
        return f"{name}={ports!r}: allowed a list of test ports (mappings with a name)"
    return next((e for e in (ifname_error(p.get("name"), f"{name}[{i}].name") for i, p in enumerate(ports)) if e), "")


def networks_error(value, name: str) -> str:
    """'' for a number of destination networks the roles take (1..MAX_NETWORKS), else the one-line refusal."""
    return _refusal(rolevalues.check_networks, name, value)


def endpoints_error(settings: dict, prefix: str) -> str:
    """'' for roles/tcp_endpoints' values (the spec's endpoints check), else its refusal naming the role's variable
    (prefix + the spec's key)."""
    try:
        rolevalues.check_endpoints_block(settings)
    except InvalidParameter as exc:
        return str(InvalidParameter(prefix + exc.name, exc.value, exc.allowed))
    return ""


def state_path_error(value, name: str, lab: str, node: str) -> str:
    """'' for a directory strictly inside this node's state directory, else the one-line refusal."""
    own = rolevalues.node_state_dir(lab, node)
    refusal = _refusal(rolevalues.check_state_subdir, name, value)
    if not refusal and not str(value).startswith(own + "/"):
        refusal = str(InvalidParameter(name, value, f"a directory below {own}/"))
    return refusal


def node_state_dir(lab: str, node: str) -> str:
    """A node's state directory (<STATE_ROOT>/<lab>/<node>): where the roles' netconf records that hold one setting
    together (roles/netem's and roles/dut_reference's GRO) must lie, beside each other, whatever state_dir each
    role is given."""
    return rolevalues.node_state_dir(str(lab), str(node))


def trex_root(lab: str, node: str, namespace: bool) -> str:
    """A node's TRex installation root: roles/trex installs there and the trex generator looks there."""
    return rolevalues.trex_root(str(lab), str(node), bool(namespace))


def dut_state_name(name: str) -> str:
    """The name a DUT configuration role gives what it keeps in the state directory while applied (a block's marker:
    reference, impairment, siit, siit_jool; or tayga_config, tayga_device_record): the campaign looks for it there."""
    names = {**rolevalues.DUT_CONFIG_MARKERS, "tayga_config": rolevalues.TAYGA_CONFIG,
             "tayga_device_record": rolevalues.TAYGA_DEVICE_RECORD}
    if name not in names:
        raise ValueError(f"dut_state_name: {name!r}: allowed {', '.join(names)}")
    return names[name]


def trex_current(root: str) -> str:
    """The link to the release that runs, below a TRex installation root: the trex generator loads its client there."""
    return rolevalues.trex_current(str(root))


def address_error(value, name: str, version: int, network: bool = False) -> str:
    """'' for an IPv<version> address (or prefix, with network), else the one-line refusal."""
    kind = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    try:
        (kind if network else ipaddress.ip_address)(str(value))
        if not network and ipaddress.ip_address(str(value)).version != version:
            raise ValueError(value)
    except ValueError:
        return f"{name}={value!r}: allowed an IPv{version} {'prefix' if network else 'address'}"
    return ""


def missing_packages(packages: list, dpkg_lines: list) -> list:
    """The packages that apt still has to install: those not shown installed ("ii ") in the lines of
    dpkg-query -W -f='${db:Status-Abbrev}${Package}\\n' <packages>. A name apt reads with a version or an
    architecture (tayga=0.9, tayga:arm64) never matches a line, so it is left to apt, as before."""
    installed = {line[3:].strip() for line in dpkg_lines if line.startswith("ii ")}
    return [package for package in packages if package not in installed]


def empty_state_dirs(state_dir: str, root: str = rolevalues.STATE_ROOT) -> str:
    """The sh script of a role's last absent task: state_dir, then each directory above it up to root
    (/var/lib/trexlab/<lab>/<node>, <lab>, /var/lib/trexlab), removed while empty, each one removed printed.

    The roles make these directories (mkdir -p), and a static or MAAS lab has no lab-down to remove them. Only
    those below root go (a state directory elsewhere may be someone's own), and only while each is empty: another
    role's state, another node's or another lab's stops it."""
    path, root = posixpath.normpath(str(state_dir)), posixpath.normpath(root)
    if path != root and not path.startswith(root + "/"):
        return "true"
    dirs = [path]
    while dirs[-1] != root:
        dirs.append(posixpath.dirname(dirs[-1]))
    return f'for d in {" ".join(map(shlex.quote, dirs))}; do [ -d "$d" ] || continue; ' \
           'rmdir "$d" 2>/dev/null || break; echo "$d"; done'


class FilterModule:
    def filters(self):
        return {
            "peer_port": peer_port,
            "port_addresses": port_addresses,
            "destination": destination_of,
            "route": route,
            "neighbours": neighbours,
            "endpoint_neighbours": endpoint_neighbours,
            "cpu_mask": cpu_mask,
            "port_drivers": port_drivers,
            "probed_port_facts": probed_port_facts,
            "probed_host_facts": probed_host_facts,
            "cpufreq_settings": cpufreq_settings,
            "impairment_plan": impairment_plan,
            "root_qdisc_error": root_qdisc_error,
            "own_roots": own_roots,
            "roots_left_note": roots_left_note,
            "empty_state_dirs": empty_state_dirs,
            "reference_plan": reference_plan,
            "eamt_entries": eamt_entries,
            "siit_routes": siit_translator_routes,
            "jool_config": jool_config,
            "jool_plan": jool_plan,
            "ifname_error": ifname_error,
            "ifnames_error": ifnames_error,
            "state_path_error": state_path_error,
            "node_state_dir": node_state_dir,
            "trex_root": trex_root,
            "trex_current": trex_current,
            "dut_state_name": dut_state_name,
            "address_error": address_error,
            "missing_packages": missing_packages,
            "endpoints_error": endpoints_error,
            "networks_error": networks_error,
            "http_file_bytes": rolevalues.http_file_bytes,
        }
