"""The address plan of docs/architecture.md, in one place.

Forward test frames (tester port 0 -> port 1) go to destination network x of
198.19.x.0/24 and 2001:2:0:90xx::/64; reverse frames to 198.18.x.0/24 and
2001:2:0:80xx::/64 (xx = x in two hex digits), as in Lencse & Szilagyi 2024.
The host inside each network is .2 / ::2, the tester port's own host number.
"""

from __future__ import annotations

from .params import check_choice, check_range

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


def eamt_prefix(x: int, direction: str) -> str:
    """The IPv6 /120 that SIIT maps onto destination network x's IPv4 /24 (Lencse 2024, Fig. 8)."""
    return destination(x, direction)["ipv6_net"].replace("::/64", "::/120")


def eamt_entries(networks: int) -> list[tuple[str, str]]:
    """SIIT explicit address mappings (IPv6 prefix, IPv4 prefix) for 1..MAX_NETWORKS networks (Lencse 2024, Fig. 8)."""
    check_range("networks", networks, 1, MAX_NETWORKS, integer=True)
    return [(eamt_prefix(x, direction), destination(x, direction)["ipv4_net"])
            for x in range(networks) for direction in ("reverse", "forward")]


def siit_translator_routes(networks: int, ipv6_side: str) -> list[str]:
    """Prefixes a SIIT DUT routes into its translator, given which of its ports faces IPv6.

    Frames arriving on the left port go forward, to the forward destinations in the
    left port's family; frames arriving on the right go to the reverse destinations
    in the right port's family. Translated frames then follow the ordinary routes.
    IPv4 /24s are routed as two /25s so that they win over the DUT port's connected
    /24 (network 0 is the tester ports' own); IPv6 /120s already beat the /64s.
    """
    check_range("networks", networks, 1, MAX_NETWORKS, integer=True)
    check_choice("ipv6_side", ipv6_side, ("left", "right"))
    family = {"forward": 6 if ipv6_side == "left" else 4, "reverse": 4 if ipv6_side == "left" else 6}
    routes = []
    for direction in ("forward", "reverse"):
        for x in range(networks):
            if family[direction] == 6:
                routes.append(eamt_prefix(x, direction))
            else:
                base = destination(x, direction)["ipv4_net"].removesuffix(".0/24")
                routes += [f"{base}.0/25", f"{base}.128/25"]
    return routes
