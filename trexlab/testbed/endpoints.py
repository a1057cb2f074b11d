"""The lab's TCP endpoints (client and server nodes) as the TCP procedures use them.

roles/tcp_endpoints configures them and playbooks/tcp-endpoints.yml keeps what
it applied beside the inventory (facts/<node>.json): the server's addresses,
iperf3 ports and download file. Everything here is read or checked before any
TCP traffic, so a lab without endpoints, or endpoints that were never
configured, fail with one line saying what to do.
"""

from __future__ import annotations

import math
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

    def window_floor(self) -> tuple[int, str]:
        """The smallest per-connection window both ends' kernels give as asked, and where that floor is set.

        iperf3 -w sets SO_SNDBUF and SO_RCVBUF on both ends; the kernel stores twice a requested size (socket(7)),
        but never less than its minimum (SOCK_MIN_SNDBUF/SOCK_MIN_RCVBUF): a smaller window silently got that.
        """
        floors = []
        for node in (self.client, self.server):
            send, receive = socket_buffer_floors(node)
            floors.append((math.ceil(max(send, receive) / 2),
                           f"the kernel of node {node.name} raises a smaller SO_SNDBUF/SO_RCVBUF to its minimum, "
                           f"{send}/{receive} bytes, instead of doubling it"))
        return max(floors)

    def cpu_ticks(self) -> dict[str, dict[int, tuple[int, int]] | None]:
        """(busy, all) ticks since boot of each online CPU of the "client" and "server" nodes (node_cpu_ticks)."""
        return {"client": node_cpu_ticks(self.client), "server": node_cpu_ticks(self.server)}

    def iperf3_cpus(self, port: int) -> dict[str, frozenset[int] | None]:
        """The CPUs the "client" and "server" iperf3 of a test on server port `port` may run on (their affinity, a
        cpuset's included; None: not read). The client's iperf3 runs as every command run on its node does
        (Node.command): what a command run that way may use is what it may use. The server's is the process listening
        on the port in the server node's network namespace (ss -p: only the sockets of the namespace the command runs
        in, so another lab's server on the same port is not it)."""
        client = allowed_cpus(self.client, ["cat", "/proc/self/status"])
        try:
            result = subprocess.run(self.server.command(["ss", "-Htlnp", f"sport = :{port}"]), capture_output=True,
                                    text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return {"client": client, "server": None}
        # Without root, ss names no other user's process: no PID, not read.
        pids = set(re.findall(r'\("iperf3",pid=(\d+),', result.stdout)) if result.returncode == 0 else set()
        server = allowed_cpus(self.server, ["cat", f"/proc/{pids.pop()}/status"]) if len(pids) == 1 else None
        return {"client": client, "server": server}

    def tcp_timestamps(self) -> dict[str, int | None]:
        """net.ipv4.tcp_timestamps of the "client" and "server" nodes' kernels (0: off; 1, 2: on, for IPv6 too; None:
        not read)."""
        return {"client": read_number(self.client, TCP_TIMESTAMPS), "server": read_number(self.server, TCP_TIMESTAMPS)}

    def tester_port_mtu(self, indexes) -> int | None:
        """The smallest MTU of the tester ports `indexes` (their sysfs), or None where unknown (DPDK)."""
        tester = self.lab.tester
        mtus = [read_number(tester, f"/sys/class/net/{tester.port(index).name}/mtu") for index in indexes]
        known = [m for m in mtus if m is not None]
        return None if len(known) < len(mtus) or not known else min(known)


#: Whether a kernel's TCP offers RFC 7323 timestamps on its connections (IPv4 and IPv6 alike), per network namespace.
TCP_TIMESTAMPS = "/proc/sys/net/ipv4/tcp_timestamps"
#: Asks a kernel for the socket buffers it gives a 1-byte SO_SNDBUF and SO_RCVBUF request: its minimums
#: (include/net/sock.h SOCK_MIN_SNDBUF, SOCK_MIN_RCVBUF), which follow the size of its struct sk_buff, so the
#: node's own kernel is asked rather than a figure assumed. Python: Ansible's requirement on every managed node.
SOCKET_BUFFER_FLOOR_PROBE = ("import socket\n"
                             "s = socket.socket()\n"
                             "for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):\n"
                             "    s.setsockopt(socket.SOL_SOCKET, option, 1)\n"
                             "    print(s.getsockopt(socket.SOL_SOCKET, option))\n")


def socket_buffer_floors(node) -> tuple[int, int]:
    """(SO_SNDBUF, SO_RCVBUF) bytes a node's kernel gives a socket that asks for less than it keeps."""
    try:
        result = subprocess.run(node.command(["python3", "-c", SOCKET_BUFFER_FLOOR_PROBE]), capture_output=True,
                                text=True, timeout=30)
        send, receive = (int(word) for word in result.stdout.split())
        if result.returncode == 0:
            return send, receive
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    raise GeneratorError(f"node {node.name}: cannot read the kernel's smallest socket buffers (python3 -c "
                         "setsockopt SO_SNDBUF/SO_RCVBUF)")


def read_sysctl(node, name: str) -> int:
    value = read_number(node, "/proc/sys/" + name.replace(".", "/"))
    if value is None:
        raise GeneratorError(f"node {node.name}: cannot read {name}")
    return value


def node_cpu_ticks(node) -> dict[int, tuple[int, int]] | None:
    """(busy, all) ticks since boot of each online CPU of a node, by its number, from /proc/stat's "cpuN" lines (user
    nice system idle iowait irq softirq steal), one per online CPU: busy is all but idle and iowait, steal included (the
    hypervisor ran another guest while this one had work: no CPU for the endpoints either). None where it cannot be
    read. The nodes of a namespace lab share the host's kernel: each reads the host's."""
    try:
        result = subprocess.run(node.command(["cat", "/proc/stat"]), capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            return None
        ticks = {}
        for fields in (line.split() for line in result.stdout.splitlines()):
            if fields and (found := re.fullmatch(r"cpu(\d+)", fields[0])):
                values = [int(value) for value in fields[1:9]]
                ticks[int(found.group(1))] = (sum(values) - values[3] - values[4], sum(values))
        return ticks or None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


#: The kernel's TCP counters a download's server reads around it (/proc/net/snmp's Tcp and /proc/net/netstat's TcpExt
#: lines), by the name trexlab keeps them under: the segments it sent (retransmissions not included: RFC 4022's
#: tcpOutSegs), the segments it sent again, the duplicates of those the receiver reported (D-SACK, RFC 2883: a
#: retransmission of a segment that was not lost) and its retransmission timeouts.
TCP_COUNTERS = {"segments_sent": ("Tcp", "OutSegs"), "retransmitted_segments": ("Tcp", "RetransSegs"),
                "duplicate_segments_reported": ("TcpExt", "TCPDSACKRecvSegs"),
                "retransmission_timeouts": ("TcpExt", "TCPTimeouts")}


def node_tcp_counters(node) -> dict[str, int] | None:
    """TCP_COUNTERS of a node's kernel since it started counting (a namespace node: its namespace's own), None where
    they cannot be read. They count every connection of the node: one transfer's alone while nothing else talks
    TCP there."""
    try:
        result = subprocess.run(node.command(["cat", "/proc/net/snmp", "/proc/net/netstat"]), capture_output=True,
                                text=True, timeout=30)
        if result.returncode != 0:
            return None
        # Each group is a line of names and a line of values, both led by "Tcp:", "TcpExt:", ...
        lines = [line.split() for line in result.stdout.splitlines() if line.strip()]
        values = {(names[0].rstrip(":"), name): value for names, numbers in zip(lines[::2], lines[1::2], strict=True)
                  if names[0] == numbers[0] for name, value in zip(names[1:], numbers[1:], strict=True)}
        return {key: int(values[where]) for key, where in TCP_COUNTERS.items()}
    except (OSError, subprocess.TimeoutExpired, KeyError, ValueError):
        return None


def counted_between(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int] | None:
    """What node_tcp_counters counted from before to after; None where either was not read."""
    if before is None or after is None:
        return None
    return {key: after[key] - before[key] for key in TCP_COUNTERS}


def cpu_list(text: str) -> frozenset[int]:
    """The CPUs of a kernel CPU list ("0-3,8"; cpuset(7)'s list format, as Cpus_allowed_list shows it); ValueError
    where it is not one."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(f"CPU range {part!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def allowed_cpus(node, argv: list[str]) -> frozenset[int] | None:
    """The CPUs a process may run on, from the Cpus_allowed_list line of its /proc/<pid>/status that argv prints on
    the node (its affinity mask: a cpuset that holds it narrows the mask too); None where it cannot be read."""
    try:
        result = subprocess.run(node.command(argv), capture_output=True, text=True, timeout=30)
        found = re.search(r"^Cpus_allowed_list:\s*(\S+)$", result.stdout, re.MULTILINE)
        return cpu_list(found.group(1)) if result.returncode == 0 and found else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def read_number(node, path: str) -> int | None:
    """The number a node's kernel file (sysfs, procfs) starts with, or None where it cannot be read."""
    result = subprocess.run(node.command(["cat", path]), capture_output=True, text=True, timeout=30)
    words = result.stdout.split()
    return int(words[0]) if result.returncode == 0 and words and words[0].isdigit() else None
