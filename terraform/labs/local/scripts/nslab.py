#!/usr/bin/env python3
"""Realise or remove a local namespace lab from the plan Terraform computed.

    NSLAB_PLAN='<json>' nslab.py up      create namespaces, links, management and sshd (idempotent)
    NSLAB_PLAN='<json>' nslab.py down    kill the lab's processes, remove its namespaces and links
    NSLAB_PLAN='<json>' nslab.py status  exit 0 when every piece of the lab is in place, else 1, naming
                                         what is not (one line each)
    nslab.py owners                      every lab with a namespace on this host and the state directories
                                         whose sshd runs in it (a tab between each)

``up`` first removes whatever an interrupted run of the same lab left, so it
always recovers. Only names of this lab (tl-<lab>-*, tl<lab>m*) are touched,
and only processes inside its namespaces are ended, by PID. The one host-wide
setting a lab changes, the receive backlog, is shared by every lab up on the
host (hold_backlog, release_backlog).
Standard library only: it runs with the system python3. The roles' state root comes from this checkout's
trexlab.rolevalues, which is standard library only too.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

# The checkout this script is part of (terraform/labs/local/scripts/ below it), whose package the system python3
# does not have installed: the roles' state root is rolevalues', not a copy here.
_CHECKOUT = str(Path(__file__).resolve().parents[4])
if _CHECKOUT not in sys.path:
    sys.path.insert(0, _CHECKOUT)
from trexlab.rolevalues import LAB_NAME, STATE_ROOT, node_state_dir  # noqa: E402

SSHD = "/usr/sbin/sshd"


def sh(*argv: str, check: bool = True, netns: str | None = None) -> subprocess.CompletedProcess:
    if netns:
        argv = ("ip", "netns", "exec", netns, *argv)
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise SystemExit(f"nslab: {' '.join(argv)}: {result.stderr.strip() or result.returncode}")
    return result


def namespaces() -> set[str]:
    out = sh("ip", "-j", "netns", "list", check=False).stdout.strip()
    return {n["name"] for n in json.loads(out)} if out else set()


def link_exists(name: str, netns: str | None = None) -> bool:
    return sh("ip", "link", "show", "dev", name, check=False, netns=netns).returncode == 0


def kill_namespace_processes(netns: str) -> None:
    """End every process inside the namespace, by PID: TERM, then KILL what is left."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 1.0)):
        pids = [int(p) for p in sh("ip", "netns", "pids", netns, check=False).stdout.split()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and sh("ip", "netns", "pids", netns, check=False).stdout.split():
            time.sleep(0.05)


def is_node_sshd(home: Path, pid: int) -> bool:
    """Whether pid is the sshd of the node whose files are in home (sshd -f <home>/sshd_config): a pid file outlives
    its process, and the kernel hands its number to another (pid_max is 32768 on some hosts: a make test wraps it
    within minutes). An exiting or zombie sshd has no command line: not running."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return str(home / "sshd_config") in cmdline


def kill_orphan_sshd(home: Path) -> None:
    """An sshd of this lab left running outside any namespace (one deleted by hand), found by its pid file."""
    try:
        pid = int((home / "sshd.pid").read_text())
    except (OSError, ValueError):
        return
    if is_node_sshd(home, pid):
        os.kill(pid, signal.SIGTERM)


def down(plan: dict) -> None:
    others = foreign_state_dirs(plan)
    if others:
        # A lab of the same name up from another state directory (another checkout): its namespaces, links, role
        # state and hold on the backlog carry this lab's names, and are not this lab's to remove.
        print(f"nslab: lab {plan['lab']}: its namespaces are up for {', '.join(sorted(others))}: left to that "
              "lab; only this state directory's files are removed", file=sys.stderr)
        for name in plan["nodes"]:
            remove_node_files(plan, name, role_state=False)
    else:
        teardown(plan)
        release_backlog(plan["lab"])
        forget_owner(plan)
    remove_lab_files(Path(plan["state_dir"]))


def sshd_state_dirs(netns: str) -> set[str]:
    """The state directories whose node sshd runs in the namespace (sshd -f <state_dir>/<node>/sshd_config)."""
    dirs = set()
    for pid in sh("ip", "netns", "pids", netns, check=False).stdout.split():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # sshd rewrites its command line into one string ('sshd: /usr/sbin/sshd -f <config> [listener] ...').
        config = re.search(r"sshd -f (/\S+)/[^/\s]+/sshd_config(\s|$)", cmdline)
        if config:
            dirs.add(os.path.realpath(config.group(1)))
    return dirs


#: The state directory each lab up on this host was made from, a file per lab name: its sshd tells it too, but
#: not once that sshd has died. On /run, which a reboot empties along with every namespace.
OWNERS = Path("/run/trexlab/owners")


def recorded_owner(lab: str, owners: Path = OWNERS) -> str | None:
    try:
        return (owners / lab).read_text().strip() or None
    except OSError:
        return None


def make_directory(path: Path) -> None:
    """path, made with its parents where missing, while the last lab down may remove it (the owners' records, the
    backlog's state): mkdir(exist_ok=True) raises FileExistsError when the directory was there for its mkdir and
    gone when it then checked that it is one, and FileNotFoundError when a parent went between its mkdirs. Either
    way it is made again; a file or link where the directory goes is raised (no lab could use it)."""
    while True:
        try:
            path.mkdir(parents=True, exist_ok=True)
            return
        except FileNotFoundError:
            continue
        except FileExistsError:
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                raise


def record_owner(plan: dict, owners: Path = OWNERS) -> None:
    """This state directory makes the lab (up, once refuse_foreign let it): written whole, then renamed. The last
    lab down removes the directory (forget_owner): one that went between this mkdir and the write is made again."""
    part = owners / f".{plan['lab']}.{os.getpid()}"
    while True:
        make_directory(owners)
        try:
            part.write_text(os.path.realpath(plan["state_dir"]) + "\n")
            part.replace(owners / plan["lab"])
            return
        except FileNotFoundError:
            continue


def forget_owner(plan: dict, owners: Path = OWNERS) -> None:
    """The lab is down (this state directory's: another's record stays). The last record's going takes the
    directories it made with it, each only while empty (the backlog's state shares /run/trexlab): lab-down leaves
    the host as it was."""
    if recorded_owner(plan["lab"], owners) == os.path.realpath(plan["state_dir"]):
        (owners / plan["lab"]).unlink(missing_ok=True)
    for directory in (owners, owners.parent):
        with contextlib.suppress(OSError):  # not empty (another lab's record, the backlog's state), or gone
            directory.rmdir()


def foreign_state_dirs(plan: dict) -> set[str]:
    """The other state directories whose lab has one of this lab's namespaces: a lab of the same name made from
    another checkout (each has its own .cache/labs/<name>), whose namespaces and links bear the same names. Told
    by the sshd running in them, and by the lab's recorded owner (record_owner), which outlives a dead sshd."""
    present = namespaces()
    ours = os.path.realpath(plan["state_dir"])
    spaces = [node["netns"] for node in plan["nodes"].values() if node.get("netns") in present]
    dirs = {d for netns in spaces for d in sshd_state_dirs(netns)}
    owner = recorded_owner(plan["lab"])
    if spaces and owner:
        dirs.add(owner)
    return dirs - {ours}


def refuse_foreign(plan: dict) -> None:
    """Stop before anything is removed or made if this lab's names are another state directory's lab: up removes
    whatever of this lab's names it finds (an interrupted run's leftovers), which would be that lab."""
    others = foreign_state_dirs(plan)
    if others:
        raise SystemExit(foreign_refusal(plan["lab"], others))


def foreign_refusal(lab: str, others: set[str]) -> str:
    return (f"nslab: lab {lab}: a lab of that name is up for another state directory ({', '.join(sorted(others))}: "
            "another checkout's): take it down there, or choose another lab name")


def refuse_foreign_name(lab: str, state_dir: str) -> None:
    """refuse_foreign before the lab's plan exists (make lab-up's check before any recipe, so that through make the
    refusal is one line, not Terraform's log and make's): the lab's namespaces found by their names (owners)."""
    others = owners().get(lab, set()) - {os.path.realpath(state_dir)}
    if others:
        raise SystemExit(foreign_refusal(lab, others))


def teardown(plan: dict) -> None:
    """Remove the lab's namespaces, links, processes and files (its hold on the receive backlog stays)."""
    present = namespaces()
    for node in plan["nodes"].values():
        remove_namespace_node(node, present)
    for name in plan["nodes"]:
        remove_node_files(plan, name)


#: net.core.netdev_max_backlog while a namespace lab is up: frames per CPU the host queues for its receive softirq.
#: Every frame a veth hands over waits in that queue (on the DUT's CPU with the RPS the DUT's ports use), so a
#: stall of that CPU drops whatever overflows it: the host's loss, counted as the DUT's. Linux's default 1,000 is
#: a stall of 25 ms at the 41 kfps of the reference DUT benchmark, and such stalls occur here (26 million drops
#: since boot, dispersion 12 %); 10,000 frames is 25 ms at the 400 kfps the software tester reaches on this kind
#: of machine and 240 ms at 41 kfps, and measured 0 drops over the same benchmark (dispersion 1.2 %).
BACKLOG = 10_000
BACKLOG_SYSCTL = Path("/proc/sys/net/core/netdev_max_backlog")
#: What the labs holding the raise and the value before it are recorded in (/run: gone at reboot, as the value is).
BACKLOG_STATE = Path("/run/trexlab/netdev_max_backlog.json")


@contextlib.contextmanager
def _locked(state: Path):
    """The state file's lock (flock on state.lock), held while the state is read and written.

    The last lab down removes the lock file and its directory: a process that locked a file since unlinked locks
    again, and one whose directory went between its mkdir and its open makes it again (make_directory: also during
    the mkdir)."""
    lock = state.with_suffix(".lock")
    while True:
        make_directory(lock.parent)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield lock
    finally:
        os.close(fd)


def _write_json(path: Path, data: dict) -> None:
    """Replace path atomically: a crash leaves the old state or the new one, never half of one."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, sort_keys=True) + "\n")
    os.replace(temporary, path)


def _live_holders(holders: dict, present: set[str]) -> dict:
    """The holders whose lab still has a namespace: a lab whose namespaces are all gone crashed or was removed
    by hand, and no longer holds the raise."""
    return {lab: spaces for lab, spaces in holders.items() if set(spaces) & present}


def hold_backlog(lab: str, netns: list[str], state: Path = BACKLOG_STATE, sysctl: Path = BACKLOG_SYSCTL,
                 present: set[str] | None = None) -> None:
    """Record that `lab` (its namespaces `netns`, already made) is up, and raise the host's receive backlog to
    BACKLOG if it is lower; the value before the first lab's raise is kept to put back (release_backlog)."""
    with _locked(state):
        data = json.loads(state.read_text()) if state.exists() else {}
        holders = _live_holders(data.get("holders", {}), namespaces() if present is None else present)
        current = int(sysctl.read_text())
        if not holders:
            # The first lab up: today's value is the one to put back, unless labs that are gone without their
            # lab-down (crashed) left their raise in place, when theirs still is.
            left_raised = data.get("raised") is not None and current == data["raised"]
            data = {"original": data["original"], "raised": data["raised"]} if left_raised else \
                {"original": current, "raised": None}
        holders[lab] = sorted(netns)
        data["holders"] = holders
        if current < BACKLOG:  # never lower a value set higher
            data["raised"] = BACKLOG
            _write_json(state, data)  # first: a crash after it still restores the value
            try:
                sysctl.write_text(f"{BACKLOG}\n")
            except OSError as error:  # a read-only /proc/sys (a container): the lab works, trials count host drops
                print(f"nslab: cannot raise {sysctl} to {BACKLOG} ({error.strerror}): the host's receive backlog "
                      "may drop frames, and software trials with such drops are invalid", file=sys.stderr)
        else:
            _write_json(state, data)


def release_backlog(lab: str, state: Path = BACKLOG_STATE, sysctl: Path = BACKLOG_SYSCTL,
                    present: set[str] | None = None) -> None:
    """Record that `lab` is down; once no lab holds the raise, put back the value from before it (unless someone
    set another value since) and remove the state."""
    if not state.exists():
        return
    with _locked(state) as lock:
        data = json.loads(state.read_text()) if state.exists() else {}
        holders = data.get("holders", {})
        holders.pop(lab, None)
        holders = _live_holders(holders, namespaces() if present is None else present)
        if holders:
            data["holders"] = holders
            _write_json(state, data)
            return
        if data.get("raised") is not None and int(sysctl.read_text()) == data["raised"]:
            sysctl.write_text(f"{data['original']}\n")
        state.unlink(missing_ok=True)
        lock.unlink()
        with contextlib.suppress(OSError):  # another file there: not ours to remove
            state.parent.rmdir()


# One namespace node at a time, so that other lab kinds (terraform/labs/vm: the tester) reuse them.
def remove_namespace_node(node: dict, present: set[str]) -> None:
    """Kill the node's processes, delete its namespace and its management link."""
    if node["netns"] in present:
        kill_namespace_processes(node["netns"])
        sh("ip", "netns", "delete", node["netns"], check=False)
    if link_exists(node["mgmt_root_if"]):
        sh("ip", "link", "delete", node["mgmt_root_if"], check=False)


# Where the roles keep what they must put back (saved sysctls, nft files, TRex): on a namespace node
# that is the host's file system, so it would outlive the node. The roles' defaults take the same root.
ROLE_STATE_ROOT = Path(STATE_ROOT)


def remove_node_files(plan: dict, name: str, role_state: bool = True) -> None:
    """Remove what the node left on the host: its sshd files and (role_state) the roles' state for it."""
    home = Path(plan["state_dir"]) / name
    kill_orphan_sshd(home)
    for file in ("sshd_config", "sshd.pid", "ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"):
        (home / file).unlink(missing_ok=True)
    if home.is_dir():
        home.rmdir()
    if not role_state:  # kept under the lab's name, not its state directory's
        return
    node_state = Path(node_state_dir(plan["lab"], name, str(ROLE_STATE_ROOT)))
    shutil.rmtree(node_state, ignore_errors=True)
    for directory in (node_state.parent, ROLE_STATE_ROOT):  # the last lab gone: the machine as it was
        with contextlib.suppress(OSError):  # not empty (other nodes, other labs) or already gone
            directory.rmdir()


#: The comment of the key pair ssh_keys makes: only a key with it is the lab's to remove.
KEY_COMMENT = "trexlab-lab"


def remove_lab_files(state: Path) -> None:
    """What up made in the state directory besides the nodes' files: the lab's key pair (only the one ssh_keys
    made: a key of one's own in that directory stays), authorized_keys and known_hosts; then the directory, if
    that leaves it empty (lab-up's also holds the Terraform state, and lab-down removes it)."""
    public = state / "id_ed25519.pub"
    try:
        ours = public.read_text().split()[2:] == [KEY_COMMENT]
    except OSError:
        ours = False
    if ours:
        (state / "id_ed25519").unlink(missing_ok=True)
        public.unlink()
    for file in ("authorized_keys", "known_hosts"):
        (state / file).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty, or already gone
        state.rmdir()


def ssh_keys(state: Path) -> None:
    state.mkdir(parents=True, exist_ok=True)
    key = state / "id_ed25519"
    if not key.exists():
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", KEY_COMMENT, "-f", str(key))
    (state / "authorized_keys").write_text((state / "id_ed25519.pub").read_text())
    os.chmod(state / "authorized_keys", 0o600)


def sshd_config(plan: dict, name: str, node: dict) -> Path:
    home = Path(plan["state_dir"]) / name
    home.mkdir(parents=True, exist_ok=True)
    host_key = home / "ssh_host_ed25519_key"
    if not host_key.exists():
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{node['netns']}", "-f", str(host_key))
    config = home / "sshd_config"
    config.write_text("\n".join([
        f"# sshd of lab node {name} (namespace {node['netns']}); written by nslab.py",
        f"ListenAddress [{node['ansible_host']}]:22",
        f"HostKey {host_key}",
        f"PidFile {home / 'sshd.pid'}",
        f"AuthorizedKeysFile {Path(plan['state_dir']) / 'authorized_keys'}",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PrintMotd no",
        "Subsystem sftp internal-sftp",
        # The nodes log in as the host's root, whose shell is bash: bash run by sshd at shell level 1 reads
        # ~/.bashrc, the host user's interactive set-up (pyenv init on the machine make test runs on: 0.2 CPU-s),
        # before every Ansible task and file transfer. A lab node needs none of it: its sessions start one level
        # up, where bash reads no startup file.
        "SetEnv SHLVL=1",
        "",
    ]))
    return config


def write_known_hosts(plan: dict) -> None:
    """The lab's known_hosts: the host key generated for each node's sshd, at its management address (port 22).

    Ansible and trexlab verify the nodes against this file only (StrictHostKeyChecking=yes): a node that
    answers with another key is not this lab's node.
    """
    lines = []
    for name, node in plan["nodes"].items():
        key_type, key = (Path(plan["state_dir"]) / name / "ssh_host_ed25519_key.pub").read_text().split()[:2]
        lines.append(f"{node['ansible_host']} {key_type} {key}\n")
    known_hosts = Path(plan["state_dir"]) / "known_hosts"
    known_hosts.write_text("".join(lines))


def add_namespace_node(node: dict) -> None:
    """The node's namespace and its management link from the root namespace."""
    ns = node["netns"]
    sh("ip", "netns", "add", ns)
    sh("ip", "link", "set", "lo", "up", netns=ns)
    sh("sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", netns=ns)
    sh("sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", netns=ns)
    # Management: a veth from the root namespace, one /127 per node (RFC 6164).
    sh("ip", "link", "add", node["mgmt_root_if"], "type", "veth", "peer", "name", "mgmt0", "netns", ns)
    sh("ip", "-6", "addr", "add", f"{node['mgmt_root']}/127", "dev", node["mgmt_root_if"], "nodad")
    sh("ip", "link", "set", node["mgmt_root_if"], "up")
    sh("ip", "-6", "addr", "add", f"{node['ansible_host']}/127", "dev", "mgmt0", "nodad", netns=ns)
    sh("ip", "link", "set", "mgmt0", "up", netns=ns)


def start_sshd(plan: dict, name: str, node: dict) -> None:
    config = sshd_config(plan, name, node)
    sh(SSHD, "-f", str(config), netns=node["netns"])


def refuse_taken_management(plan: dict) -> None:
    """Stop before anything is made if another lab holds one of this lab's management addresses.

    Two labs whose names map to the same management block would each route the block to their own link,
    and SSH would reach the other lab's nodes (refused keys at best).
    """
    ours = {ipaddress.ip_address(node["mgmt_root"]) for node in plan["nodes"].values()}
    for line in sh("ip", "-6", "-o", "addr", "show").stdout.splitlines():
        fields = line.split()
        address = ipaddress.ip_address(fields[3].split("/")[0])
        if address in ours:
            raise SystemExit(f"lab {plan['lab']}: its management address {address} is already on interface "
                             f"{fields[1]} (another lab's); choose another lab name")


def up(plan: dict) -> None:
    refuse_foreign(plan)
    teardown(plan)  # whatever an interrupted run left of this lab
    refuse_taken_management(plan)
    record_owner(plan)
    try:
        make(plan)
    except BaseException:
        # Nothing half made stays behind (as vmlab.py's up): a failed lab-up left the namespaces made so far, their
        # sshd and the raised backlog in place until the lab's next lab-down or lab-up.
        down(plan)
        raise


def make(plan: dict) -> None:
    """The lab's namespaces, links, sshd and known_hosts, from nothing (up has removed any earlier pieces)."""
    state = Path(plan["state_dir"])
    ssh_keys(state)
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    for node in plan["nodes"].values():
        add_namespace_node(node)
    # Once its namespaces exist: until then another lab's lab-down would count this one as gone.
    hold_backlog(plan["lab"], [node["netns"] for node in plan["nodes"].values()])
    for link in plan["links"]:
        a, b = link["a"], link["b"]
        a_ns, b_ns = plan["nodes"][a["node"]]["netns"], plan["nodes"][b["node"]]["netns"]
        # Created directly inside the namespaces: no name is ever taken in the root namespace.
        sh("ip", "link", "add", a["port"], "netns", a_ns, "address", a["mac"], "type", "veth",
           "peer", b["port"], "netns", b_ns, "address", b["mac"])
        sh("ip", "link", "set", a["port"], "up", netns=a_ns)
        sh("ip", "link", "set", b["port"], "up", netns=b_ns)
    for macvlan in plan.get("macvlans", []):
        add_endpoint_port(plan, macvlan)
    for name, node in plan["nodes"].items():
        start_sshd(plan, name, node)
    write_known_hosts(plan)
    wait_for_ssh(plan)
    wait_for_carrier(plan)


def add_endpoint_port(plan: dict, macvlan: dict) -> None:
    """A TCP endpoint's port: a macvlan child of a tester port, created straight into the endpoint's namespace.

    Its frames leave through the tester port's link, so client/server traffic crosses the same DUT ports and
    impairments as test frames, and nothing new sits between the tester and the DUT. Addresses, routes and
    neighbours come from roles/tcp_endpoints; the port never solicits routers or takes router advertisements.
    """
    lower_ns = plan["nodes"][macvlan["lower_node"]]["netns"]
    ns = plan["nodes"][macvlan["node"]]["netns"]
    port = macvlan["port"]
    sh("ip", "-n", lower_ns, "link", "add", port, "link", macvlan["lower_port"], "netns", ns,
       "address", macvlan["mac"], "type", "macvlan", "mode", "private")
    sh("sysctl", "-qw", f"net.ipv6.conf.{port}.router_solicitations=0", f"net.ipv6.conf.{port}.accept_ra=0",
       netns=ns)
    sh("ip", "link", "set", port, "up", netns=ns)


def wait_for_carrier(plan: dict, timeout: float = 10.0) -> None:
    """Return once every test port (and TCP endpoint port) is operationally up.

    A veth's carrier is propagated by the kernel's linkwatch, up to a second after 'ip link set up';
    until then the port has no link-local address and drops what it is given. The lab is up only when
    it can carry frames.
    """
    deadline = time.monotonic() + timeout
    ends = [end for link in plan["links"] for end in (link["a"], link["b"])] + plan.get("macvlans", [])
    for end in ends:
        netns = plan["nodes"][end["node"]]["netns"]
        if not wait_for_link_state(end["port"], "operstate", "up", deadline, netns):
            raise SystemExit(f"nslab: {end['node']} port {end['port']} has no carrier after {timeout:.0f} s")


def wait_for_link_state(port: str, attribute: str, value: str, deadline: float, netns: str | None = None) -> bool:
    """Poll /sys/class/net/<port>/<attribute> (in netns) until it reads value; False once the deadline passed."""
    while sh("cat", f"/sys/class/net/{port}/{attribute}", netns=netns).stdout.strip() != value:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for_ssh(plan: dict, timeout: float = 10.0) -> None:
    """Return once every node's sshd accepts connections on its management address."""
    deadline = time.monotonic() + timeout
    for name, node in plan["nodes"].items():
        while not ssh_answers(node["ansible_host"]):
            if time.monotonic() > deadline:
                raise SystemExit(f"nslab: sshd of {name} did not answer on [{node['ansible_host']}]:22")
            time.sleep(0.1)


def ssh_answers(address: str) -> bool:
    """Whether something accepts connections on the SSH port of address (within a second)."""
    try:
        with socket.create_connection((address, 22), timeout=1):
            return True
    except OSError:
        return False


def problems(plan: dict) -> list[str]:
    """What of the lab is not in place, one phrase each naming the node: empty when the lab is up."""
    present = namespaces()
    found = [p for name, node in plan["nodes"].items() if (p := namespace_node_problem(plan, name, node, present))]
    # A lab made before its inventory named a known_hosts has none: it is made again (lab-up), keys and all.
    if not (Path(plan["state_dir"]) / "known_hosts").is_file():
        found.append(f"no known_hosts in {plan['state_dir']}")
    return found


def namespace_node_problem(plan: dict, name: str, node: dict, present: set[str]) -> str | None:
    """Why the namespace node is not up (its namespace, management link or sshd gone), or None."""
    if node["netns"] not in present:
        return f"{name}: namespace {node['netns']} is gone"
    if not link_exists(node["mgmt_root_if"]):
        return f"{name}: management link {node['mgmt_root_if']} is gone"
    pid_file = Path(plan["state_dir"]) / name / "sshd.pid"
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return f"{name}: sshd is down (no pid in {pid_file})"
    if not is_node_sshd(pid_file.parent, pid):
        return f"{name}: sshd is down (pid {pid} of {pid_file} is not running its sshd_config)"
    return None


def realise(argv: list[str], plan_variable: str, up, down, problems, usage: str) -> int:
    """The command line of a lab's realiser: up, down or status of the plan Terraform passed in plan_variable.
    status prints what of the lab is down, one line each, and exits 1 if anything is."""
    if len(argv) != 1 or argv[0] not in ("up", "down", "status"):
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    plan = json.loads(os.environ[plan_variable])
    if argv[0] == "status":
        found = problems(plan)
        print(*found, sep="\n")
        return 1 if found else 0
    (up if argv[0] == "up" else down)(plan)
    return 0


#: A lab's namespaces on this host: tl-<lab>-<node>, the lab name as make lab-up allows it (rolevalues.LAB_NAME).
LAB_NAMESPACE = re.compile(rf"tl-({LAB_NAME.pattern})-[a-z0-9]+")


def owners() -> dict[str, set[str]]:
    """Lab name -> the state directories it was made from (its recorded owner, and any whose node sshd runs in one
    of its namespaces), for every lab with a namespace on this host, of any checkout. Empty: a lab made before
    owners were recorded whose sshd is down, or namespaces left over."""
    found: dict[str, set[str]] = {}
    for netns in sorted(namespaces()):
        match = LAB_NAMESPACE.fullmatch(netns)
        if match:
            found.setdefault(match.group(1), set()).update(sshd_state_dirs(netns))
    for lab, dirs in found.items():
        owner = recorded_owner(lab)
        if owner:
            dirs.add(owner)
    return found


def main() -> int:
    if sys.argv[1:] == ["owners"]:  # make lab-status: one line per lab, its name and its state directories
        for lab, dirs in owners().items():
            print(lab, *sorted(dirs), sep="\t")
        return 0
    if sys.argv[1:2] == ["foreign"] and len(sys.argv) == 4:  # make lab-up: nslab.py foreign <lab> <state_dir>
        refuse_foreign_name(sys.argv[2], sys.argv[3])
        return 0
    return realise(sys.argv[1:], "NSLAB_PLAN", up, down, problems,
                   "nslab.py owners | nslab.py foreign <lab> <state dir> | NSLAB_PLAN=<json> nslab.py up|down|status")


if __name__ == "__main__":
    sys.exit(main())
