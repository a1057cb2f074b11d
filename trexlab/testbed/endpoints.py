"""The lab's TCP endpoints (client and server nodes) as the TCP procedures use them.

roles/tcp_endpoints configures them and playbooks/tcp-endpoints.yml keeps what
it applied beside the inventory (facts/<node>.json): the server's addresses,
iperf3 ports and download file. Everything here is read or checked before any
TCP traffic, so a lab without endpoints, or endpoints that were never
configured, fail with one line saying what to do.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from trexlab.testbed.inventory import Lab, LabError
from trexlab.trial import GeneratorError

PLAYBOOK = "playbooks/tcp-endpoints.yml"


def require_lab(lab: Lab | None, generator: str, procedure: str) -> Lab:
    """The lab a procedure runs on the client and server nodes of; LabError (one line) when there is none."""
    if lab is None:
        raise LabError(f"procedure {procedure} needs a lab with client and server nodes; generator {generator} has "
                       "none (use --generator software)")
    return lab


@dataclass(frozen=True)
class LabView:
    """The lab as a run will find it at its first trial, for Procedure.check_lab: its inventory (None: a generator
    without a lab) and the TCP endpoints' facts (roles/tcp_endpoints) by node name, where the run's caller applies
    the role before the run (a campaign: planned_facts); None: the facts beside the inventory, as the CLI, which
    configures nothing, finds them. Everything else (kernel limits, port MTUs) is read from the nodes."""

    lab: Lab | None
    endpoint_facts: Mapping[str, Mapping] | None = None


class Endpoints:
    """Client and server of one lab, with what roles/tcp_endpoints applied on the server.

    facts: the role's facts by node name as they will be when the run starts (LabView.endpoint_facts); None: those
    beside the inventory."""

    def __init__(self, lab: Lab, facts: Mapping[str, Mapping] | None = None):
        self.lab = lab
        self.client = lab.client
        self.server = lab.server

        def of(name: str) -> dict:
            found = facts.get(name) if facts is not None else lab.node_facts(name).get("tcp_endpoints")
            return dict(found or {})

        self.facts = of(self.server.name)
        if not self.facts.get("iperf3_ports"):
            raise LabError(f"lab {lab.name}: the TCP endpoints are not configured: run "
                           f"ansible-playbook -i {lab.inventory} {PLAYBOOK}")
        self.client_facts = of(self.client.name)

    @property
    def iperf3_ports(self) -> list[int]:
        return list(self.facts["iperf3_ports"])

    @property
    def congestion_control(self) -> str | None:
        return self.facts.get("congestion_control")

    def server_address(self, ip_version: int) -> str:
        port = self.server.port(0)
        address = port.ipv4_address if ip_version == 4 else port.ipv6_address
        if not address:
            raise LabError(f"server node {self.server.name} has no IPv{ip_version} test address")
        return address

    def url(self, ip_version: int) -> str:
        host = self.server_address(ip_version)
        host = f"[{host}]" if ip_version == 6 else host
        return f"http://{host}:{self.facts['http_port']}{self.facts['http_path']}"

    @property
    def http_file_bytes(self) -> int:
        return int(self.facts["http_file_bytes"])

    def window_limit(self) -> tuple[int, str]:
        """The largest per-connection window both ends can really get, and where that limit is set.

        The kernel silently caps SO_SNDBUF/SO_RCVBUF (iperf3 -w) at net.core.wmem_max/rmem_max: a larger
        window would be a figure that was never used.
        """
        limits = []
        for node in (self.client, self.server):
            for name in ("net.core.rmem_max", "net.core.wmem_max"):
                limits.append((read_sysctl(node, name), f"{name} on node {node.name}"))
        return min(limits)

    def cpu_ticks(self) -> dict[str, tuple[int, int, int] | None]:
        """(busy, all) CPU ticks since boot of the "client" and "server" nodes and their CPUs (node_cpu_ticks)."""
        return {"client": node_cpu_ticks(self.client), "server": node_cpu_ticks(self.server)}

    def tester_port_mtu(self, indexes) -> int | None:
        """The smallest MTU of the tester ports `indexes` (their sysfs), or None where unknown (DPDK)."""
        tester = self.lab.tester
        mtus = [read_number(tester, f"/sys/class/net/{tester.port(index).name}/mtu") for index in indexes]
        known = [m for m in mtus if m is not None]
        return None if len(known) < len(mtus) or not known else min(known)


def read_sysctl(node, name: str) -> int:
    value = read_number(node, "/proc/sys/" + name.replace(".", "/"))
    if value is None:
        raise GeneratorError(f"node {node.name}: cannot read {name}")
    return value


def node_cpu_ticks(node) -> tuple[int, int, int] | None:
    """(busy, all) ticks of a node's CPUs since boot, from /proc/stat's "cpu" line (user nice system idle iowait irq
    softirq steal), and how many CPUs it has (its "cpuN" lines, one per online CPU): busy is all but idle and iowait,
    steal included (the hypervisor ran another guest while this one had work: no CPU for the endpoints either). None
    where it cannot be read. The nodes of a namespace lab share the host's kernel: each reads the host's."""
    try:
        result = subprocess.run(node.command(["cat", "/proc/stat"]), capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            return None
        lines = [line.split() for line in result.stdout.splitlines()]
        cpus = sum(1 for fields in lines if fields and re.fullmatch(r"cpu\d+", fields[0]))
        for fields in lines:
            if fields[:1] == ["cpu"]:
                ticks = [int(value) for value in fields[1:9]]
                return sum(ticks) - ticks[3] - ticks[4], sum(ticks), cpus
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    return None


def read_number(node, path: str) -> int | None:
    """The number a node's kernel file (sysfs, procfs) starts with, or None where it cannot be read."""
    result = subprocess.run(node.command(["cat", path]), capture_output=True, text=True, timeout=30)
    words = result.stdout.split()
    return int(words[0]) if result.returncode == 0 and words and words[0].isdigit() else None
