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

What the role changes on the DUT is planned here too (``plan``): one shell script, every value in it quoted,
that applies the configuration and records it, or removes exactly what the record says was applied. On an
emulated DUT (the VM lab) each remote call costs seconds, so the role makes two: a probe and this script.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import shlex

from .addressing import eamt_entries
from .params import InvalidParameter
from .rolevalues import DUT_CONFIG_MARKERS

_INSTANCE = re.compile(r"^[A-Za-z0-9_-]{1,15}\Z")


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


#: The files the role keeps in its state directory: its record of what it applied (the campaign's marker of a
#: siit_jool block left applied: rolevalues.DUT_CONFIG_MARKERS), and Jool's file.
RECORD = DUT_CONFIG_MARKERS["siit_jool"]
CONFIG_FILE = "siit_jool.jool.json"
#: What the probe reports where Jool cannot run at all (no loadable modules): nothing in place.
NOTHING = {"jool": "none", "loaded": False, "instance": False, "record": None}


def config_text(config: dict) -> str:
    """The configuration as the role writes it for ``jool_siit file handle``: one line, keys sorted, so that
    the same configuration is always the same text (its digest is what the record names)."""
    return json.dumps(config, sort_keys=True)


def plan(state: str, networks: int, instance: str, pool6: str, state_dir: str, host: dict | None) -> dict:
    """What roles/siit_jool runs on a DUT, given what its probe (files/can-load-jool.sh) found there.

    host is the probe's reading (jool, loaded, instance, record), or None where it found no loadable modules.
    Returns {"config", "install": whether Jool's packages must be installed first, "script": the one shell
    script to run ('' where nothing changes), "record": the record the script leaves (None on absent)}.

    present: where the instance is missing or the record names another configuration, the record first says
    whether this role loads the module (so that absent unloads it even after a failure half way), the module is
    loaded where it is not, Jool creates or replaces the instance from its file (atomically), and then the
    record names the configuration by its digest. absent: the instance is removed where it exists, the module
    unloaded only where the record says this role loaded it, and the record and the file forgotten. An instance
    the record does not name is not this role's: present refuses it (InvalidParameter), absent leaves it."""
    if state not in ("present", "absent"):
        raise InvalidParameter("state", state, "present or absent")
    if not isinstance(state_dir, str) or not state_dir.startswith("/") or "\0" in state_dir:
        raise InvalidParameter("state_dir", state_dir, "an absolute path")
    config = jool_config(networks, instance, pool6)
    host = {**NOTHING, **(host or {})}
    if not isinstance(host["record"], (dict, type(None))):
        raise InvalidParameter(f"{state_dir}/{RECORD}", host["record"], "the record this role writes (a JSON object)")
    previous = {"config_sha256": None, "instance": None, "loaded_module": False, **(host["record"] or {})}
    # An instance of another name that an earlier run of this role made (a sweep over the instance): removed
    # as well, so that what this role applied is always the one instance its record names.
    other = previous["instance"] if previous["instance"] not in (None, config["instance"]) else None
    if other is not None and not _INSTANCE.match(str(other)):
        raise InvalidParameter(f"{state_dir}/{RECORD}: instance", other, "1-15 characters A-Z a-z 0-9 _ -")
    remove_other = [f"jool_siit instance remove {shlex.quote(other)} 2>/dev/null || true"] if other else []
    record_file, config_file = (shlex.quote(f"{state_dir.rstrip('/')}/{name}") for name in (RECORD, CONFIG_FILE))
    # Only an instance this role made (its record names it; the earlier format named it in its config) is ever
    # replaced or removed: a spec naming an instance the DUT already had would otherwise take it over and remove it.
    made = config["instance"] in (previous["instance"], (previous.get("config") or {}).get("instance"))
    if state == "present" and host["instance"] and not made:
        raise InvalidParameter("instance", config["instance"], "an instance this role makes: the DUT has a Jool "
                               "instance of that name that it did not make, which it neither replaces nor removes")
    if state == "absent":
        script = []
        if (host["instance"] and made) or host["record"] is not None:  # else nothing of this role is there
            script = [f"jool_siit instance remove {shlex.quote(config['instance'])}"] if host["instance"] and made \
                else []
            script += remove_other + (["modprobe -r jool_siit"] if previous["loaded_module"] else [])
            script += [f"rm -f {record_file} {config_file}"]
        return {"config": config, "install": False, "record": None, "script": _script(script)}
    text = config_text(config)
    loads = bool(previous["loaded_module"] or not host["loaded"])
    record = {"config_sha256": hashlib.sha256(text.encode()).hexdigest(), "instance": config["instance"],
              "loaded_module": loads}
    script = []
    if not host["instance"] or previous["config_sha256"] != record["config_sha256"]:
        script = ["umask 022", f"mkdir -p {shlex.quote(state_dir)}",
                  f"printf '%s\\n' {shlex.quote(json.dumps({**record, 'config_sha256': None}))} >{record_file}"]
        script += remove_other + ([] if host["loaded"] else ["modprobe jool_siit"])
        script += [f"printf '%s\\n' {shlex.quote(text)} >{config_file}", f"jool_siit file handle {config_file}",
                   f"printf '%s\\n' {shlex.quote(json.dumps(record))} >{record_file}"]
    return {"config": config, "install": host["jool"] == "install", "record": record, "script": _script(script)}


def _script(commands: list[str]) -> str:
    """The commands as one shell script that stops at the first failure; '' for none."""
    return "".join(f"{line}\n" for line in ["set -e", *commands]) if commands else ""
