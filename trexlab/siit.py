"""SIIT with Jool as exact commands: what roles/siit_jool runs, planned here and unit-tested.

The set-up of Lencse & Szilagyi 2024, Fig. 8: the jool_siit module, one
instance in netfilter mode, and for each destination network x the explicit
address mappings 2001:2:0:80xx::/120 <-> 198.18.x.0/24 and
2001:2:0:90xx::/120 <-> 198.19.x.0/24 (xx = x in hex), optionally a pool6
prefix. The same instance serves as NAT64 or NAT46: Jool translates whatever
matches, and the translated packet follows the DUT's ordinary routes
(roles/dut_routing), so one script fits the single and both dual DUTs.
"""

from __future__ import annotations

import ipaddress
import re

from trexlab.addressing import eamt_entries
from trexlab.params import InvalidParameter

_INSTANCE = re.compile(r"^[A-Za-z0-9_-]{1,15}$")


def jool_commands(networks: int, instance: str = "benchmarking", pool6: str = "") -> list[str]:
    """The commands that create the instance and its mappings, in order (after modprobe jool_siit)."""
    if not _INSTANCE.match(str(instance)):
        raise InvalidParameter("instance", instance, "1-15 characters A-Z a-z 0-9 _ -")
    if pool6:
        try:
            prefix = ipaddress.IPv6Network(pool6)
        except ValueError:
            raise InvalidParameter("pool6", pool6, "an IPv6 prefix such as 64:ff9b::/96") from None
        if prefix.prefixlen not in (32, 40, 48, 56, 64, 96):
            raise InvalidParameter("pool6", pool6, "a prefix length of RFC 6052: 32, 40, 48, 56, 64 or 96")
    commands = [f'jool_siit instance add "{instance}" --netfilter' + (f" --pool6 {pool6}" if pool6 else "")]
    commands += [f'jool_siit -i "{instance}" eamt add {v6} {v4}' for v6, v4 in eamt_entries(int(networks))]
    return commands
