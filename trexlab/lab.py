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

import yaml

from trexlab.node_inputs import check_ifname, check_ssh_port, check_ssh_user
from trexlab.params import InvalidParameter

DEFAULT_INVENTORY = Path("inventory/generated/local/hosts.yml")


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
                "warnings": self.warnings()}

    def warnings(self) -> list[str]:
        """What a reader of this lab's figures must know; procedures print it and provenance keeps it."""
        emulated = [n.name for n in self.duts if n.extra.get("trexlab_vm_accel") == "tcg"]
        if not emulated:
            return []
        return [f"DUT {', '.join(emulated)}: a QEMU VM emulated by TCG (no KVM): throughput and latency figures "
                "describe the emulator, not a device; use this lab for function (netem, Jool, procedures)"]

    def dut_facts(self) -> dict:
        """What the DUT roles reported they applied (playbooks/site.yml keeps it beside the inventory)."""
        facts = {}
        for path in sorted((Path(self.inventory).parent / "facts").glob("*.json")):
            try:
                facts[path.stem] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                facts[path.stem] = None  # being rewritten by a concurrent configure
        return facts


def _port(data: dict) -> TestPort:
    known = {k: data.get(k) for k in TestPort.__dataclass_fields__}
    return TestPort(**known)


def _mapping(path: Path, key: str, value: object) -> dict:
    """value as a mapping (None: empty), else a one-line LabError naming the inventory and the key."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LabError(f"inventory {path}: {key}: expected a mapping, got {type(value).__name__}")
    return value


def _node(path: Path, role: str, name: str, hv: dict) -> Node:
    """One host of the inventory, with every value that reaches ssh, a shell or nft checked."""
    where = f"all.children.{role}.hosts.{name}"
    try:
        ports = hv.get("test_ports") or []
        if not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports):
            raise LabError(f"inventory {path}: {where}.test_ports: expected a list of mappings")
        for i, port in enumerate(ports):
            check_ifname(f"{where}.test_ports[{i}].name", port.get("name"))
        return Node(
            name=name,
            role=role,
            ansible_host=str(hv.get("ansible_host", name)),
            ansible_user=check_ssh_user(f"{where}.ansible_user", hv.get("ansible_user", "root")),
            ansible_port=check_ssh_port(f"{where}.ansible_port", hv.get("ansible_port", 22)),
            ssh_key=hv.get("ansible_ssh_private_key_file"),
            netns=hv.get("trexlab_netns"),
            cpus=tuple(hv.get("trexlab_cpus") or ()),
            test_ports=tuple(_port(p) for p in ports),
            extra={k: v for k, v in hv.items() if k.startswith("trexlab_")},
        )
    except InvalidParameter as exc:
        raise LabError(f"inventory {path}: {exc}") from None


def load_lab(inventory: str | os.PathLike | None = None) -> Lab:
    """Read a generated inventory (hosts.yml) into a Lab."""
    path = Path(inventory or os.environ.get("TREXLAB_INVENTORY") or DEFAULT_INVENTORY)
    if not path.is_file():
        raise LabError(f"inventory {path} not found: run 'make lab-up' first")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise LabError(f"inventory {path}: not valid YAML ({exc.__class__.__name__})") from exc
    root = _mapping(path, "all", _mapping(path, "(top level)", data).get("all"))
    lab_vars = _mapping(path, "all.vars.trexlab_lab",
                        _mapping(path, "all.vars", root.get("vars")).get("trexlab_lab"))
    children = _mapping(path, "all.children", root.get("children"))
    nodes: dict[str, Node] = {}
    for role in ("tester", "dut", "client", "server"):
        group = _mapping(path, f"all.children.{role}", children.get(role))
        for name, hv in _mapping(path, f"all.children.{role}.hosts", group.get("hosts")).items():
            nodes[name] = _node(path, role, str(name), _mapping(path, f"all.children.{role}.hosts.{name}", hv))
    if not nodes:
        raise LabError(f"inventory {path}: no tester or dut hosts")
    return Lab(
        name=lab_vars.get("name", path.parent.name),
        kind=lab_vars.get("kind", "unknown"),
        topology=lab_vars.get("topology", "unknown"),
        nodes=nodes,
        inventory=path,
    )
