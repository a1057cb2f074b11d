"""Values that reach a host: checked in the run plan, before any host is touched.

trexlab runs as root on the tester and the DUTs, and a spec is something people share: every string that a
role or a generator puts on a command line, into a path or into a ruleset is checked here first, by what
the host itself allows (Linux interface names), by where it may point (paths below the node's own state
directory, which a role's ``absent`` removes) and, for addresses, by RFC 2544 / RFC 5180's benchmarking
ranges, so that test traffic never leaves them unless the lab (not the spec) says it may.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re

from .addressing import MAX_NETWORKS
from .params import LIST_ITEMS_MAX, MAX_PORT, InvalidParameter

#: RFC 2544 (IPv4) and RFC 5180 (IPv6) address ranges for benchmarking.
BENCHMARKING_NETWORKS = (ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:2::/48"))
#: Translation prefixes an SIIT DUT may use besides the benchmarking range the seeds' explicit mappings lie
#: in (2001:2:0:80xx::/120, Lencse & Szilagyi 2024): RFC 6052's well-known prefix, which only embeds the
#: (benchmarking) IPv4 addresses of the test frames.
TRANSLATION_PREFIXES = (ipaddress.ip_network("64:ff9b::/96"),)
#: TAYGA's own IPv4 address (roles/siit_tayga), the source of its ICMP errors: RFC 7600's IPv4 dummy address,
#: which no test frame is sent to.
SIIT_DUMMY_IPV4 = ipaddress.ip_address("192.0.0.8")
#: The root of the nodes' state directories, <STATE_ROOT>/<lab>/<node> (node_state_dir, their one source: the
#: roles' defaults take it through the filter trexlab.lab.node_state_dir).
STATE_ROOT = "/var/lib/trexlab"
#: Where roles/trex installs TRex (its trex_root) and the trex generator looks for it (trex_root, their one source):
#: TRex's own guide's directory on a node with a disk of its own; on a namespace node, which shares the host's disk,
#: a subdirectory of the node's state directory, where lab-down removes it with the rest.
TREX_SYSTEM_ROOT = "/opt/trex"
TREX_SUBDIR = "trex"
#: What each DUT configuration block's role keeps in the DUT's state directory (node_state_dir) while the block is
#: applied, and removes with state absent: a file, or for siit roles/siit_tayga's default directory (any directory
#: below the state directory holding TAYGA_CONFIG is one too; TAYGA_DEVICE_RECORD there names the device it made).
#: Their one source: the campaign looks for them to refuse points on a DUT left configured (campaign.dut_config_left),
#: the roles name them through the filter trexlab.lab.dut_state_name.
DUT_CONFIG_MARKERS = {"reference": "dut_reference.json", "impairment": "netem.json", "siit": "tayga",
                      "siit_jool": "siit_jool.json"}
TAYGA_CONFIG = "tayga.conf"
TAYGA_DEVICE_RECORD = "device"
#: roles/trex's link, below its trex_root, to the TRex release it runs (trex_current, its one source: the role's
#: trex_current_dir takes it through the filter trexlab.lab.trex_current, the trex generator loads the client from it).
TREX_CURRENT = "current"

# Every whole-value pattern here ends with \Z, the string's end: $ also matches before a final newline, so "siit0\n"
# passed for an interface name and "/var/lib/trexlab/l/n/tayga\n" for a state directory. (LAB_NAME, a part of
# nslab.py's namespace pattern too, has no anchors: it is used with fullmatch).
#: A lab's name, make lab-up's LAB_NAME (its one rule: scripts/common.sh and the Makefile read LAB_NAME_MAX from this
#: line, nslab.py and the inventory take LAB_NAME). It becomes part of the lab's namespace names (tl-<lab>-<node>,
#: files under /run/netns: _NAMESPACE below), of the management links and taps in the root namespace (tl<lab>m<n>,
#: tl<lab>t<i>: interface names, 15 characters, which leave it 11) and of the paths below .cache/labs/<lab>/, where
#: the VM lab's unix sockets must stay within 107 bytes: kept short, and plain letters and digits, which every one of
#: those names and a shell take as they are.
LAB_NAME_MAX = 6
LAB_NAME = re.compile(rf"[a-z0-9]{{1,{LAB_NAME_MAX}}}")
LAB_NAME_FORM = f"1-{LAB_NAME_MAX} characters a-z 0-9"
#: A network namespace's name: a file under /run/netns (at most NAME_MAX = 255 bytes, no '/', not . or ..), not an
#: interface name: the 15 characters of interface names made every lab named with LAB_NAME_MAX characters unusable
#: (its tester's namespace tl-<6>-tester has 16).
_NAMESPACE = re.compile(r"^[A-Za-z0-9_.@-]{1,255}\Z")

#: Linux interface names: at most IFNAMSIZ - 1 = 15 bytes, no '/', ':' or whitespace (dev_valid_name); also
#: none of a shell's metacharacters, since roles and nftables rules carry them.
_INTERFACE = re.compile(r"^[A-Za-z0-9_.@-]{1,15}\Z")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,15}\Z")
_PATH_PART = re.compile(r"^[A-Za-z0-9_.-]+\Z")
_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")
_ALGORITHM = re.compile(r"^[a-z0-9_]{0,32}\Z")


def check_interface(name: str, value: object) -> str:
    """A Linux interface name (tester and DUT ports, TUN devices)."""
    if not isinstance(value, str) or not _INTERFACE.match(value) or value in (".", ".."):
        raise InvalidParameter(name, value, "a Linux interface name: 1-15 characters A-Z a-z 0-9 _ . @ -")
    return value


def check_instance(name: str, value: object) -> str:
    """An instance name (Jool): 1-15 characters, nothing a shell or a path would read."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidParameter(name, value, "1-15 characters A-Z a-z 0-9 _ -")
    return value


def node_state_dir(lab_name: str, node: str, root: str = STATE_ROOT) -> str:
    """A node's state directory, where the roles keep what absent puts back (root: another one, for tests)."""
    return posixpath.join(root, lab_name, node)


def trex_current(root: str) -> str:
    """The link to the TRex release that runs, below a TRex installation root (trex_root, or the role's own)."""
    return posixpath.join(root, TREX_CURRENT)


def trex_root(lab_name: str, node: str, namespace: bool) -> str:
    """A node's TRex installation root (roles/trex: trex_root; namespace: the node is a namespace of this host)."""
    return posixpath.join(node_state_dir(lab_name, node), TREX_SUBDIR) if namespace else TREX_SYSTEM_ROOT


def check_state_subdir(name: str, value: object, lab=None) -> str:
    """A directory a role creates and, on absent, removes: strictly below the node's state directory.

    Without a lab only the shape is checked (absolute, normal, below STATE_ROOT/<lab>/<node>/); with one it must
    lie below the DUT's own state directory, so with several DUTs (each with its own) none may be given."""
    allowed = f"a directory below the node's state directory {node_state_dir('<lab>', '<node>')}/"
    if not isinstance(value, str) or not value.startswith("/") or posixpath.normpath(value) != value:
        raise InvalidParameter(name, value, allowed)
    parts = value.split("/")[1:]
    root = STATE_ROOT.split("/")[1:]
    if parts[:len(root)] != root or len(parts) < len(root) + 3 or not all(_PATH_PART.match(p) for p in parts) \
            or any(p in (".", "..") for p in parts):
        raise InvalidParameter(name, value, allowed)
    if lab is not None:
        duts = lab.duts
        if len(duts) != 1:
            raise InvalidParameter(name, value, f"none: the lab has {len(duts)} DUTs, each uses its own default")
        own = node_state_dir(lab.name, duts[0].name)
        if not value.startswith(own + "/"):
            raise InvalidParameter(name, value, f"a directory below {own}/")
    return value


def is_benchmarking(address) -> bool:
    return any(address.version == net.version and address in net for net in BENCHMARKING_NETWORKS)


def check_address(name: str, value: object, allow_other: bool = False, extra: tuple = ()) -> str:
    """An address or address/prefix (interface form, e.g. 198.18.0.2/24) in a benchmarking range."""
    if not isinstance(value, str):
        raise InvalidParameter(name, value, "an IPv4 or IPv6 address")
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError:
        raise InvalidParameter(name, value, "an IPv4 or IPv6 address") from None
    if allow_other or is_benchmarking(interface.ip) or interface.ip in extra:
        return value
    raise InvalidParameter(name, value, "an address in 198.18.0.0/15 or 2001:2::/48 (benchmarking ranges; a lab "
                                        "that must use others declares allow_non_benchmarking_addresses: true)")


def check_prefix(name: str, value: object, allow_other: bool = False) -> str:
    """An IPv6 translation prefix (RFC 6052): '' for none, else inside 2001:2::/48 or the well-known prefix."""
    if value == "":
        return value
    allowed = "an IPv6 prefix inside 2001:2::/48 or 64:ff9b::/96, or ''"
    if not isinstance(value, str):
        raise InvalidParameter(name, value, allowed)
    try:
        prefix = ipaddress.IPv6Network(value)
    except ValueError:
        raise InvalidParameter(name, value, allowed) from None
    if prefix.prefixlen not in (32, 40, 48, 56, 64, 96):
        raise InvalidParameter(name, value, "a prefix length of RFC 6052: 32, 40, 48, 56, 64 or 96")
    inside = any(prefix.subnet_of(net) for net in (*BENCHMARKING_NETWORKS, *TRANSLATION_PREFIXES)
                 if isinstance(net, ipaddress.IPv6Network))
    if not (inside or allow_other):
        raise InvalidParameter(name, value, allowed)
    return value


#: The largest HTTP file roles/tcp_endpoints makes on the server node, MiB (the role's own assertion).
HTTP_FILE_MIB_MAX = 1048576
#: Bytes in a MiB, the unit the HTTP file's size is declared in.
MIB = 1 << 20


def http_file_bytes(mib: int) -> int:
    """The served file's size in bytes (roles/tcp_endpoints makes it, campaigns plan the endpoint facts with it)."""
    return int(mib) * MIB


def check_networks(name: str, networks) -> None:
    """A number of destination networks: a whole number 1..MAX_NETWORKS (a spec's dut block, a role's variable)."""
    if isinstance(networks, bool) or not isinstance(networks, int) or not 1 <= networks <= MAX_NETWORKS:
        raise InvalidParameter(name, networks, f"1..{MAX_NETWORKS}")


def check_dut_block(block: str, settings: dict, lab=None, allow_other: bool = False) -> None:
    """The values of a spec's dut.<block> that reach a DUT (types are checked against the role's spec)."""
    if block in ("siit", "siit_jool") and "networks" in settings:  # else the role refuses it, on the DUT
        check_networks("networks", settings["networks"])
    if block == "siit":
        if "device" in settings:
            check_interface("device", settings["device"])
        if "dir" in settings:
            check_state_subdir("dir", settings["dir"], lab)
        if "prefix" in settings:
            check_prefix("prefix", settings["prefix"], allow_other)
        if "ipv4_addr" in settings:
            check_address("ipv4_addr", settings["ipv4_addr"], allow_other, extra=(SIIT_DUMMY_IPV4,))
        if "ipv6_addr" in settings:
            check_address("ipv6_addr", settings["ipv6_addr"], allow_other)
        for i, cpu in enumerate(settings.get("cpus") or ()):
            if isinstance(cpu, bool) or not isinstance(cpu, int) or not 0 <= cpu < 4096:
                raise InvalidParameter(f"cpus[{i}]", cpu, "a CPU number 0..4095")
    elif block == "siit_jool":
        if "instance" in settings:
            check_instance("instance", settings["instance"])
        if "pool6" in settings:
            check_prefix("pool6", settings["pool6"], allow_other)


def check_endpoints_block(settings: dict) -> None:
    """The strings of a spec's endpoints block that reach the client and server nodes."""
    if "http_file" in settings and (not isinstance(settings["http_file"], str)
                                    or not _FILE_NAME.match(settings["http_file"])):
        raise InvalidParameter("http_file", settings["http_file"], "a file name: A-Z a-z 0-9 _ . - (no '/')")
    if "congestion_control" in settings and (not isinstance(settings["congestion_control"], str)
                                             or not _ALGORITHM.match(settings["congestion_control"])):
        raise InvalidParameter("congestion_control", settings["congestion_control"],
                               "a congestion control name such as cubic or reno, or ''")
    if "http_file_mib" in settings and (isinstance(settings["http_file_mib"], bool)
                                        or not isinstance(settings["http_file_mib"], int)
                                        or not 1 <= settings["http_file_mib"] <= HTTP_FILE_MIB_MAX):
        raise InvalidParameter("http_file_mib", settings["http_file_mib"], f"1..{HTTP_FILE_MIB_MAX} MiB")
    for key in ("http_port",):
        if key in settings and (isinstance(settings[key], bool) or not isinstance(settings[key], int)
                                or not 1 <= settings[key] <= MAX_PORT):
            raise InvalidParameter(key, settings[key], f"a TCP port 1..{MAX_PORT}")
    ports = settings.get("iperf3_ports") or ()
    # One iperf3 server per port on the server node, for one concurrent test each: rfc6349 runs at most as many as its
    # dscp list holds (LIST_ITEMS_MAX). A spec of 60,000 ports started 60,000 servers; a port twice, or the HTTP
    # port, failed the role half way.
    if len(ports) > LIST_ITEMS_MAX:
        raise InvalidParameter("iperf3_ports", f"<{len(ports)} values>", f"at most {LIST_ITEMS_MAX} TCP ports (one "
                                                                         "iperf3 server each, one per concurrent test)")
    for i, port in enumerate(ports):
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= MAX_PORT:
            raise InvalidParameter(f"iperf3_ports[{i}]", port, f"a TCP port 1..{MAX_PORT}")
        if port in ports[:i] or port == settings.get("http_port"):
            raise InvalidParameter(f"iperf3_ports[{i}]", port, "a TCP port no other server of the node is given "
                                                               "(each iperf3 server and nginx listen on their own)")


def check_lab(lab) -> None:
    """The inventory's values that reach commands and rules: node names, users, ports, interface names and the
    test addresses. Raises InvalidParameter naming the node and key."""
    allow_other = lab.allow_non_benchmarking_addresses
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z", str(lab.name)):
        raise InvalidParameter("all.vars.trexlab_lab.name", lab.name, "a lab name: A-Z a-z 0-9 _ . - (it names the "
                                                                      "state directory on every node)")
    for node in lab.nodes.values():
        where = f"{node.name}"
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z", node.name):
            raise InvalidParameter("host", node.name, "a host name: A-Z a-z 0-9 _ . - (inventory host names "
                                                      "become directory names)")
        if not re.match(r"^[a-z_][a-z0-9_-]{0,31}\Z", str(node.ansible_user)):
            raise InvalidParameter(f"{where}.ansible_user", node.ansible_user, "a user name (no ssh option)")
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}\Z", str(node.ansible_host)):
            raise InvalidParameter(f"{where}.ansible_host", node.ansible_host, "a host name or address")
        if node.netns is not None and (not _NAMESPACE.match(str(node.netns)) or str(node.netns) in (".", "..")):
            raise InvalidParameter(f"{where}.trexlab_netns", node.netns,
                                   "a namespace name: 1-255 characters A-Z a-z 0-9 _ . @ - (a file under /run/netns)")
        for port in node.test_ports:
            label = f"{where}.test_ports[{port.index}]"
            check_interface(f"{label}.name", port.name)
            for family in ("ipv4", "ipv6"):
                value = getattr(port, family)
                if value is not None:
                    check_address(f"{label}.{family}", value, allow_other)
