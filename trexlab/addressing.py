"""The address plan of docs/architecture.md, in one place.

Forward test frames (tester port 0 -> port 1) go to destination network x of
198.19.x.0/24 and 2001:2:0:90xx::/64; reverse frames to 198.18.x.0/24 and
2001:2:0:80xx::/64 (xx = x in two hex digits), as in Lencse & Szilagyi 2024.
The host inside each network is .2 / ::2, the tester port's own host number.
"""

from __future__ import annotations

from trexlab.params import check_choice, check_range

MAX_NETWORKS = 256


def destination(x: int, direction: str) -> dict[str, str]:
    """Destination network x of a direction: networks and the test frames' destination host."""
    check_range("destination network", x, 0, MAX_NETWORKS - 1, integer=True)
    check_choice("direction", direction, ("forward", "reverse"))
    v4_second, v6_group = (19, 0x9000) if direction == "forward" else (18, 0x8000)
    v6 = f"2001:2:0:{v6_group + x:x}"
    return {
        "ipv4_net": f"198.{v4_second}.{x}.0/24",
        "ipv6_net": f"{v6}::/64",
        "ipv4_host": f"198.{v4_second}.{x}.2",
        "ipv6_host": f"{v6}::2",
    }


def eamt_entries(networks: int) -> list[tuple[str, str]]:
    """SIIT explicit address mappings (IPv6 prefix, IPv4 prefix) for 1..256 networks (Lencse 2024, Fig. 8)."""
    check_range("networks", networks, 1, MAX_NETWORKS, integer=True)
    entries = []
    for x in range(networks):
        entries.append((f"2001:2:0:{0x8000 + x:x}::/120", f"198.18.{x}.0/24"))
        entries.append((f"2001:2:0:{0x9000 + x:x}::/120", f"198.19.{x}.0/24"))
    return entries
