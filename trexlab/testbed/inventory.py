"""The lab as the generated Ansible inventory describes it.

Every lab kind (local namespaces, QEMU VMs, MAAS, static hosts) produces an
inventory of the same shape (see docs/architecture.md); this module reads it
so that generators know where the tester is, which ports it has and how to run
a command there: inside its network namespace on the local lab, over SSH
elsewhere.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trexlab import rolevalues
from trexlab.params import MAX_PORT

DEFAULT_INVENTORY = Path("inventory/generated/local/hosts.yml")

#: The lab kinds whose lab is, by default, named after the kind (scripts/lab.sh: LAB_NAME defaults to LAB).
LAB_KINDS = ("local", "vm", "static", "maas")

#: The inventory's group of each node role: the role in the plural, as terraform/modules/inventory names it (its
#: local groups; tests/terraform/test_terraform_modules.py reads a rendered inventory with these). Hosts keep the
#: node's name (tester, dut1, client): a group named like a host made Ansible warn on every run.
ROLE_GROUPS = {"tester": "testers", "dut": "duts", "client": "clients", "server": "servers"}


class LabError(RuntimeError):
    pass


@dataclass(frozen=True)
class TestPort:
    """One port of a node that carries test traffic."""

    index: int  # tester: 0 faces the DUT's left port, 1 its right port; DUT: 0 left, 1 right
    name: str  # interface name on the node
    mac: str
    ipv4: str | None = None  # address/prefix, e.g. 198.18.0.2/24
    ipv6: str | None = None
    peer_mac: str | None = None  # MAC of the port at the other end of the link
    pci: str | None = None  # PCI address on bare metal (TRex/DPDK), None on veth/tap

    @property
    def ipv4_address(self) -> str | None:
        return self.ipv4.split("/")[0] if self.ipv4 else None

    @property
    def ipv6_address(self) -> str | None:
        return self.ipv6.split("/")[0] if self.ipv6 else None


@dataclass(frozen=True)
class Node:
    name: str
    role: str  # tester | dut | client | server (client and server: kernel TCP stacks beside the tester ports)
    ansible_host: str
    ansible_user: str = "root"
    ansible_port: int = 22
    ssh_key: str | None = None
    netns: str | None = None  # local lab: the node's network namespace
    cpus: tuple[int, ...] = ()
    test_ports: tuple[TestPort, ...] = ()
    extra: dict = field(default_factory=dict)

    def port(self, index: int) -> TestPort:
        for port in self.test_ports:
            if port.index == index:
                return port
        raise LabError(f"node {self.name} has no test port {index}")

    def command(self, argv: list[str]) -> list[str]:
        """argv wrapped so that it runs on this node.

        On the local lab the root namespace can enter the node's namespace
        directly, which is what the node's own sshd would do anyway, minus the
        SSH round trip; remote nodes are reached over SSH.
        """
        if self.netns and os.geteuid() == 0:
            return ["ip", "netns", "exec", self.netns, *argv]
        return [*self.ssh(), shlex.join(argv)]

    def ssh(self, *options: str) -> list[str]:
        """ssh to this node (its own sshd, also on the local lab), with extra ssh options, e.g. -L forwards."""
        # The lab's known_hosts and policy as its inventory declares them (terraform/modules/inventory); an
        # inventory of an older lab declares none and gets no check, as before.
        known_hosts = self.extra.get("trexlab_known_hosts") or "/dev/null"
        checking = self.extra.get("trexlab_host_key_checking") or "no"
        if checking not in ("yes", "accept-new", "no") or not str(known_hosts).startswith("/") \
                or any(c.isspace() for c in str(known_hosts)):
            raise LabError(f"inventory {self.name}: trexlab_known_hosts {known_hosts!r} / trexlab_host_key_checking "
                           f"{checking!r}: allowed an absolute path without blanks and yes, accept-new or no")
        ssh = ["ssh", "-o", "BatchMode=yes", "-o", f"StrictHostKeyChecking={checking}",
               "-o", f"UserKnownHostsFile={known_hosts}", "-o", "LogLevel=ERROR",
               "-p", str(self.ansible_port), *options]
        if self.ssh_key:
            ssh += ["-i", self.ssh_key]
        return [*ssh, f"{self.ansible_user}@{self.ansible_host}"]


@dataclass(frozen=True)
class Lab:
    name: str
    kind: str  # local | vm | static | maas
    topology: str  # single | dual | loopback
    nodes: dict[str, Node]
    inventory: Path
    #: Test addresses outside 198.18.0.0/15 and 2001:2::/48 allowed (the inventory's trexlab_lab says so, never a
    #: spec): recorded in provenance and printed at the start of every run.
    allow_non_benchmarking_addresses: bool = False

    @property
    def tester(self) -> Node:
        testers = [n for n in self.nodes.values() if n.role == "tester"]
        if len(testers) != 1:
            raise LabError(f"{self.inventory}: expected one tester node, found {len(testers)}")
        return testers[0]

    @property
    def duts(self) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.role == "dut"), key=lambda n: n.name)

    @property
    def client(self) -> Node:
        """The TCP client (beside tester port 0): RFC 6349 and HTTP download tests need it."""
        return self._endpoint("client")

    @property
    def server(self) -> Node:
        """The TCP server (beside tester port 1): iperf3 and nginx of roles/tcp_endpoints run there."""
        return self._endpoint("server")

    def _endpoint(self, role: str) -> Node:
        found = [n for n in self.nodes.values() if n.role == role]
        if not found:
            raise LabError(f"lab {self.name} has no {role} node: TCP tests need the client and server nodes "
                           "(local lab: tcp_endpoints=true, the default; bare metal: declare them in the inventory)")
        return found[0]

    def node_facts(self, name: str) -> dict:
        """What the roles reported they applied on one node (facts/<name>.json beside the inventory), or {}."""
        return self.dut_facts().get(name) or {}

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "topology": self.topology,
                "inventory": str(self.inventory), "nodes": sorted(self.nodes), "dut_facts": self.dut_facts(),
                "warnings": self.warnings(),
                **({"allow_non_benchmarking_addresses": True} if self.allow_non_benchmarking_addresses else {})}

    def warnings(self) -> list[str]:
        """What a reader of this lab's figures must know; procedures print it and provenance keeps it."""
        emulated = [n.name for n in self.duts if n.extra.get("trexlab_vm_accel") == "tcg"]
        warnings = []
        if self.allow_non_benchmarking_addresses:
            warnings.append(f"lab {self.name} allows test addresses outside 198.18.0.0/15 and 2001:2::/48 "
                            "(allow_non_benchmarking_addresses: true): test traffic may reach other networks")
        if emulated:
            warnings.append(f"DUT {', '.join(emulated)}: a QEMU VM emulated by TCG (no KVM): throughput and latency "
                            "figures describe the emulator, not a device; use this lab for function (netem, Jool, "
                            "procedures)")
        if shared := self.duts_sharing_cpus():
            cpus = sorted({cpu for node in shared for cpu in node.cpus if sum(cpu in n.cpus for n in shared) > 1})
            warnings.append(f"DUTs {', '.join(n.name for n in shared)} forward on the same CPU(s) "
                            f"{', '.join(map(str, cpus))} of this host: a figure of them together includes their "
                            "contention for it, where two devices would each have their own (a host with a CPU more "
                            "gives each its own)")
        return warnings

    def duts_sharing_cpus(self) -> list[Node]:
        """The DUTs that share a CPU with another DUT on this host. Namespace nodes (the local lab) all run here, so
        their CPU numbers are this host's; the nodes of other labs are machines of their own, or VMs."""
        local = [n for n in self.duts if n.netns]
        return [n for n in local if any(set(n.cpus) & set(other.cpus) for other in local if other is not n)]

    def dut_facts(self) -> dict:
        """What the DUT roles reported they applied (playbooks/site.yml keeps it beside the inventory)."""
        facts = {}
        for path in sorted((Path(self.inventory).parent / "facts").glob("*.json")):
            try:
                facts[path.stem] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                facts[path.stem] = None  # being rewritten by a concurrent configure
        return facts


def _port(data: object, where: str) -> TestPort:
    if not isinstance(data, dict):
        raise LabError(f"{where}: a mapping (index, name, mac, ...), got {type(data).__name__}")
    index = data.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= 1:
        raise LabError(f"{where}.index: {index!r}: allowed 0 or 1")
    for key in ("name", "mac", "ipv4", "ipv6", "peer_mac", "pci"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise LabError(f"{where}.{key}: {data[key]!r}: allowed a string")
    known: dict[str, Any] = {k: data.get(k) for k in TestPort.__dataclass_fields__}
    return TestPort(**known)


def _mapping(value: object, where: str) -> dict:
    """An inventory level that must be a mapping (None: empty), else one line naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LabError(f"{where}: a mapping, got {type(value).__name__}")
    return value


def lab_up_advice(inventory: Path) -> str:
    """What makes the lab of a missing inventory, said as scripts/lab.sh says it: the make lab-up of that lab
    (inventory/generated/<LAB_NAME>/hosts.yml). A plain 'make lab-up' brings up lab local, not another lab's."""
    *_, top, generated, name, file = ("", "", "", "", *Path(inventory).parts)
    if (top, generated, file) != ("inventory", "generated", "hosts.yml") or not rolevalues.LAB_NAME.fullmatch(name):
        return "make lab-up writes a lab's inventory to inventory/generated/<LAB_NAME>/hosts.yml"
    if name == "local":
        return "lab local is not up: run 'make lab-up' first"
    if name in LAB_KINDS:
        return f"lab {name} is not up: run 'make lab-up LAB={name}' first"
    # A lab named otherwise does not say its kind: LAB defaults to local, as in make lab-up.
    return f"lab {name} is not up: run 'make lab-up LAB_NAME={name}' first (and LAB= its kind, if not local)"


def load_lab(inventory: str | os.PathLike | None = None) -> Lab:
    """Read a generated inventory (hosts.yml) into a Lab; its values that reach hosts are checked
    (trexlab.rolevalues), each error one line naming the inventory and the key."""
    from trexlab.params import InvalidParameter
    from trexlab.spec import safeyaml

    path = Path(inventory or os.environ.get("TREXLAB_INVENTORY") or DEFAULT_INVENTORY)
    if not path.is_file():
        raise LabError(f"inventory {path} not found: {lab_up_advice(path)}")
    try:
        data = safeyaml.load(path, f"inventory {path}")
    except safeyaml.YamlInputError as exc:
        raise LabError(str(exc)) from None
    root = _mapping(_mapping(data, f"inventory {path}").get("all"), f"inventory {path}: all")
    lab_vars = _mapping(_mapping(root.get("vars"), f"inventory {path}: all.vars").get("trexlab_lab"),
                        f"inventory {path}: all.vars.trexlab_lab")
    children = _mapping(root.get("children"), f"inventory {path}: all.children")
    stale = sorted(set(children) & set(ROLE_GROUPS))
    if stale:
        # An inventory written before the groups were plural: its playbooks' hosts would match no group.
        raise LabError(f"inventory {path}: all.children.{stale[0]}: a group of a role's singular name, written before "
                       f"the groups were {', '.join(ROLE_GROUPS.values())}: run this lab's make lab-up again "
                       "(it rewrites the inventory)")
    nodes: dict[str, Node] = {}
    for role, group_name in ROLE_GROUPS.items():
        where = f"inventory {path}: all.children.{group_name}"
        group = _mapping(children.get(group_name), where)
        for name, hv in _mapping(group.get("hosts"), f"{where}.hosts").items():
            here = f"inventory {path}: {name}"
            hv = _mapping(hv, here)
            port = hv.get("ansible_port", 22)
            if isinstance(port, bool) or not isinstance(port, int | str) or not str(port).isdigit() \
                    or not 1 <= int(port) <= MAX_PORT:
                raise LabError(f"{here}.ansible_port: {port!r}: allowed 1..{MAX_PORT}")
            cpus = hv.get("trexlab_cpus") or ()
            if not isinstance(cpus, list | tuple) or not all(isinstance(c, int) and not isinstance(c, bool)
                                                             for c in cpus):
                raise LabError(f"{here}.trexlab_cpus: {cpus!r}: allowed a list of CPU numbers")
            ports = hv.get("test_ports")
            ports = [] if ports is None else ports
            if not isinstance(ports, list):
                raise LabError(f"{here}.test_ports: a list, got {type(ports).__name__}")
            nodes[str(name)] = Node(
                name=str(name),
                role=role,
                ansible_host=str(hv.get("ansible_host", name)),
                ansible_user=hv.get("ansible_user", "root"),
                ansible_port=int(port),
                ssh_key=hv.get("ansible_ssh_private_key_file"),
                netns=hv.get("trexlab_netns"),
                cpus=tuple(cpus),
                test_ports=tuple(_port(p, f"{here}.test_ports[{i}]") for i, p in enumerate(ports)),
                extra={k: v for k, v in hv.items() if isinstance(k, str) and k.startswith("trexlab_")},
            )
    if not nodes:
        raise LabError(f"inventory {path}: no tester or dut hosts")
    allow = lab_vars.get("allow_non_benchmarking_addresses", False)
    if not isinstance(allow, bool):
        raise LabError(f"inventory {path}: all.vars.trexlab_lab.allow_non_benchmarking_addresses: {allow!r}: "
                       "allowed true or false")
    lab = Lab(
        name=str(lab_vars.get("name", path.parent.name)),
        kind=str(lab_vars.get("kind", "unknown")),
        topology=str(lab_vars.get("topology", "unknown")),
        nodes=nodes,
        inventory=path,
        allow_non_benchmarking_addresses=allow,
    )
    try:
        rolevalues.check_lab(lab)
    except InvalidParameter as exc:
        raise LabError(f"inventory {path}: {exc}") from None
    return lab
