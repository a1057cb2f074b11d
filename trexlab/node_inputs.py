"""Values that reach a node's shell, files, nftables rules or SSH command line, checked in one place.

trexlab runs as root on the tester and the DUTs, and an experiment spec or a lab declaration is text that people
share: a value that ends up in a command, a ruleset or a path must be exactly what its field means and nothing
more. The roles (through filter_plugins), the inventory loader and the run plan all use these checks, so that a
bad value is refused with one line before anything runs, whichever way it comes in.
"""

from __future__ import annotations

import posixpath
import re

from trexlab.params import InvalidParameter

# Where the roles keep a node's state: <root>/<lab>/<node>/... (every role's *_state_dir default lives there).
NODE_STATE_ROOT = "/var/lib/trexlab"

# Linux takes an interface name of 1..15 bytes (IFNAMSIZ 16 with its NUL) without '/', ':' or white space, and
# not '.' or '..'. trexlab takes the subset that is safe unquoted in a shell, an nft string and a sysfs path, and
# cannot be read as a command-line option: letters, digits, '.', '_', '-', not starting with '-' or '.'.
_IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,14}")
IFNAME_RULE = "1-15 characters A-Z a-z 0-9 . _ - (not starting with . or -), as a Linux interface name"

# A path under a node's state directory: plain components only (no '..', no white space or shell characters).
_PATH_COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")

# A login name as useradd takes it (no leading '-': ssh would read '-oProxyCommand=...' as an option).
_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}\$?")
USER_RULE = "a login name: a-z 0-9 _ - (1-32 characters, starting with a-z or _)"


def check_ifname(name: str, value: object) -> str:
    """value as an interface name (field `name` in the error), else InvalidParameter."""
    if not isinstance(value, str) or not _IFNAME.fullmatch(value):
        raise InvalidParameter(name, value, IFNAME_RULE)
    return value


def node_state_dir(lab: str, node: str) -> str:
    """The directory the roles keep a node's state in."""
    return posixpath.join(NODE_STATE_ROOT, lab, node)


def check_state_path(name: str, value: object, state_dir: str) -> str:
    """value as an absolute path strictly inside state_dir (a node's state directory), else InvalidParameter."""
    allowed = f"an absolute path inside {state_dir}/ of plain names (A-Z a-z 0-9 . _ -, no ..)"
    if not isinstance(value, str) or not value.startswith(state_dir.rstrip("/") + "/"):
        raise InvalidParameter(name, value, allowed)
    parts = value[len(state_dir.rstrip("/")) + 1:].rstrip("/").split("/")
    if not all(_PATH_COMPONENT.fullmatch(p) for p in parts) or any(p in (".", "..") for p in parts):
        raise InvalidParameter(name, value, allowed)
    return value


def check_ssh_user(name: str, value: object) -> str:
    if not isinstance(value, str) or not _USER.fullmatch(value):
        raise InvalidParameter(name, value, USER_RULE)
    return value


def check_ssh_port(name: str, value: object) -> int:
    """A TCP port as an integer 1..65535 (a string such as '22 -oProxyCommand=x' is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not re.fullmatch(r"[0-9]{1,5}", str(value)) \
            or not 1 <= int(value) <= 65535:
        raise InvalidParameter(name, value, "a TCP port 1..65535")
    return int(value)
