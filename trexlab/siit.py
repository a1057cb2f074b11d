"""SIIT with Jool as one atomic configuration: what roles/siit_jool loads, planned here and unit-tested.

The set-up of Lencse & Szilagyi 2024, Fig. 8: the jool_siit module, one
instance in netfilter mode, and for each destination network x the explicit
address mappings 2001:2:0:80xx::/120 <-> 198.18.x.0/24 and
2001:2:0:90xx::/120 <-> 198.19.x.0/24 (xx = x in hex), optionally a pool6
prefix. The same instance serves as NAT64 or NAT46: Jool translates whatever
matches, and the translated packet follows the DUT's ordinary routes
(roles/dut_routing), so one configuration fits the single and both dual DUTs.

The role hands it to ``jool_siit file handle`` as one JSON file (Jool's atomic configuration): the instance
is created, or replaced as a whole, in one step that either applies completely or not at all, instead of up
to 513 commands (1 + 2 x 256 networks) of which a failure could leave some applied. Fields the file omits
take Jool's defaults, so the file alone says what the instance is.
"""

from __future__ import annotations

import ipaddress
import re

from .addressing import eamt_entries
from .params import InvalidParameter

_INSTANCE = re.compile(r"^[A-Za-z0-9_-]{1,15}$")


def jool_config(networks: int, instance: str = "benchmarking", pool6: str = "") -> dict:
    """The instance as Jool's atomic configuration file describes it (``jool_siit file handle``): its name, the
    netfilter framework, pool6 when given, and the explicit address mappings in the order of eamt_entries."""
    if not _INSTANCE.match(str(instance)):
        raise InvalidParameter("instance", instance, "1-15 characters A-Z a-z 0-9 _ -")
    config: dict = {"instance": str(instance), "framework": "netfilter"}
    if pool6:
        try:
            prefix = ipaddress.IPv6Network(pool6)
        except ValueError:
            raise InvalidParameter("pool6", pool6, "an IPv6 prefix such as 64:ff9b::/96") from None
        if prefix.prefixlen not in (32, 40, 48, 56, 64, 96):
            raise InvalidParameter("pool6", pool6, "a prefix length of RFC 6052: 32, 40, 48, 56, 64 or 96")
        config["global"] = {"pool6": str(prefix)}
    config["eamt"] = [{"ipv6 prefix": v6, "ipv4 prefix": v4} for v6, v4 in eamt_entries(int(networks))]
    return config
