"""Small tools for lab tests: bring labs up and down, send raw test frames, read the tester's counters.

The frame sender here is deliberately simple (Python, a few hundred frames):
it proves that the lab forwards; measuring is the software tester's job.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from trexlab.generators.software import OVERRUN_NOTE, THROTTLE_NOTE

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("VENV", REPO / ".venv"))

SENDER = r'''
import socket, struct, sys, json
spec = json.loads(sys.argv[1])
def csum(data):
    if len(data) % 2: data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
mac = lambda m: bytes.fromhex(m.replace(":", ""))
payload = b"trexlab-test" + bytes(18)
udp_len = 8 + len(payload)
if spec["version"] == 4:
    src, dst = socket.inet_pton(socket.AF_INET, spec["src"]), socket.inet_pton(socket.AF_INET, spec["dst"])
    udp = struct.pack("!HHHH", 1024, 1024, udp_len, 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0, 64, 17, 0, src, dst)
    l3 = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + udp
    ethertype = 0x0800
else:
    src, dst = socket.inet_pton(socket.AF_INET6, spec["src"]), socket.inet_pton(socket.AF_INET6, spec["dst"])
    pseudo = src + dst + struct.pack("!IxxxB", udp_len, 17)
    udp0 = struct.pack("!HHHH", 1024, 1024, udp_len, 0) + payload
    udp = udp0[:6] + struct.pack("!H", csum(pseudo + udp0) or 0xffff) + udp0[8:]
    l3 = struct.pack("!IHBB16s16s", 6 << 28, udp_len, 17, 64, src, dst) + udp
    ethertype = 0x86DD
frame = mac(spec["dst_mac"]) + mac(spec["src_mac"]) + struct.pack("!H", ethertype) + l3
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((spec["port"], 0))
for _ in range(spec["count"]):
    s.send(frame)
'''


def run(*argv: str, check: bool = True, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=timeout, cwd=REPO,
                          env={**os.environ, **(env or {})})


#: Lab name -> the open file whose flock says this process uses the lab (held until the process ends).
_LABS_HELD: dict[str, object] = {}


def claim_lab(name: str) -> None:
    """This test process uses lab `name` until it ends; another process using that name fails here, at once.

    A lab's namespaces, links and inventory are the machine's, named by the lab: make test's parallel phases
    run test files on several pytest-xdist workers, and two files giving their labs one name on two workers
    configured and counted each other's traffic (test_local_lab's and test_siit_tayga_role's "ts", "td")."""
    if name in _LABS_HELD:
        return
    held = open(f"/tmp/trexlab-test-lab-{name}.lock", "a")  # noqa: SIM115 -- held for the process's lifetime
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        raise AssertionError(f"lab {name} is in use by another test process: give this test's lab a name of its "
                             "own, or put both tests in one xdist_group (tests/conftest.py)") from None
    _LABS_HELD[name] = held


def lab_env(name: str, topology: str = "single", networks: int = 1) -> dict:
    """The environment of scripts/lab.sh for lab `name`, which this process claims (claim_lab)."""
    claim_lab(name)
    return {"LAB_NAME": name, "TOPOLOGY": topology, "NETWORKS": str(networks), "VENV": str(VENV)}


def send_frames(netns: str, port: dict, version: int, dst: str, count: int) -> None:
    """Send count UDP test frames out of a tester port, addressed to the DUT's MAC."""
    spec = {"port": port["name"], "version": version, "count": count, "dst": dst,
            "src": (port["ipv4"] if version == 4 else port["ipv6"]).split("/")[0],
            "src_mac": port["mac"], "dst_mac": port["peer_mac"]}
    run("ip", "netns", "exec", netns, sys.executable, "-c", SENDER, json.dumps(spec), timeout=30)


def read_tester_counters(netns: str) -> dict[str, int]:
    """Packets per counter of the tester's netdev-ingress table (port0_ipv4, port1_ipv6, ...)."""
    out = run("ip", "netns", "exec", netns, "nft", "-j", "list", "counters", "table", "netdev", "trexlab_tester").stdout
    counters = {}
    for item in json.loads(out)["nftables"]:
        if "counter" in item:
            counters[item["counter"]["name"]] = item["counter"]["packets"]
    return counters


def lab_leftovers(name: str) -> list[str]:
    """Namespaces, management links, processes of a lab that still exist, and its hold on the host's receive
    backlog (terraform/labs/local/scripts/nslab.py)."""
    left = [n for n in run("ip", "netns", "list").stdout.split() if n.startswith(f"tl-{name}-")]
    left += [line.split(":")[1].strip().split("@")[0] for line in run("ip", "-o", "link").stdout.splitlines()
             if line.split(":")[1].strip().startswith(f"tl{name}m")]
    procs = run("pgrep", "-f", f".cache/labs/{name}/", check=False).stdout.split()
    hold = [f"lab {name} holds the receive backlog raised"] if name in backlog_holders() else []
    return left + [f"pid {p}" for p in procs] + hold


#: Where the namespace labs up on this host record their hold on net.core.netdev_max_backlog (nslab.py).
BACKLOG_STATE = Path("/run/trexlab/netdev_max_backlog.json")
BACKLOG_SYSCTL = Path("/proc/sys/net/core/netdev_max_backlog")
#: Where nslab.py is (the local lab's realiser, whose lock on BACKLOG_STATE backlog_and_holders takes).
NSLAB_DIR = REPO / "terraform" / "labs" / "local" / "scripts"


def backlog_holders() -> dict:
    """The labs holding the host's receive backlog raised (nslab.py's state), and what it records besides."""
    try:
        return json.loads(BACKLOG_STATE.read_text())["holders"]
    except FileNotFoundError:
        return {}


def backlog_and_holders(state: Path = BACKLOG_STATE, sysctl: Path = BACKLOG_SYSCTL) -> tuple[int, dict]:
    """The host's receive backlog and the labs holding it raised, as they were at one moment: read under nslab.py's
    lock on the state, which a lab's up and down hold while they change both (the state first). Read one after the
    other without it, a lab of another make test worker going up or down between the two reads gave holders and a
    value that never were together."""
    if str(NSLAB_DIR) not in sys.path:
        sys.path.insert(0, str(NSLAB_DIR))
    import nslab  # the local lab's realiser: standard library only, not a package

    with nslab._locked(state) as lock:
        value = int(sysctl.read_text())
        if state.exists():
            return value, json.loads(state.read_text())["holders"]
        # No lab holds it: the lock file and its directory go again, as the last lab down removes them.
        lock.unlink()
        with contextlib.suppress(OSError):  # another file there: not ours to remove
            state.parent.rmdir()
    return value, {}


@contextlib.contextmanager
def refused_port():
    """A TCP port on 127.0.0.1 that refuses connections while the block runs: bound by this process, never listening.
    A port bound and closed again (as the tests took one before) is free for any other process to take: make test's
    other workers bind ports there too (SSH tunnels, notebook kernels, fake servers), and one listening on it would
    answer the connection the test expects refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def notes_but_steal(result) -> list[str]:
    """A trial's notes but the ones that disclose what the shared machine did to the tester (generators/software.py):
    the hypervisor's steal during the trial (a fresh clone's make test saw 60 ms in a 0.5 s trial that sent and
    counted every frame), the kernel's realtime throttle stalling a sender (throttle_note, known by its name after
    the direction's: outside realtime load on the tester's CPUs may bring it), and a sender's last frame that left
    beyond the overrun tolerance (overrun_note, known the same way: a stall of the tester near the trial's end). None
    is the DUT's nor one of the counts a test checks; every other note still fails the test."""
    machine = rf"(forward|reverse): ({re.escape(THROTTLE_NOTE)} \(|{re.escape(OVERRUN_NOTE)}[ :])"
    return [note for note in result.notes if "(/proc/stat steal)" not in note and not re.match(machine, note)]


def playbook(lab, name: str, *extra: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """ansible-playbook of the repository on a lab's generated inventory (not checked: tests read rc)."""
    return subprocess.run([str(VENV / "bin" / "ansible-playbook"), "-i", str(lab.inventory), name, *extra],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})


def changed_count(output: str) -> int:
    """Sum of changed= over the play recap of an ansible-playbook output, whose hosts must all have run: a run that
    reached no host, or failed or found a host unreachable, changes nothing too, and an idempotence check ("changes
    nothing") would take it for a pass (a second absent that failed passed so)."""
    recap = [dict(re.findall(r"(\w+)=(\d+)", line)) for line in output.splitlines()
             if re.match(r"\S+\s+: ok=\d+\s+changed=\d+", line)]
    assert recap, f"no host in the play recap:\n{output[-3000:]}"
    assert all(r.get("failed") == "0" and r.get("unreachable") == "0" for r in recap), output[-3000:]
    return sum(int(r["changed"]) for r in recap)


def changed_tasks(output: str) -> list[str]:
    """'<task> <host>' for each task and host an ansible-playbook output reports changed: a check-mode
    run must report each change the real run then makes, task by task (a skipped command reports none); sorted,
    as hosts finish a task in any order."""
    changed, task = [], ""
    for line in output.splitlines():
        if line.startswith("TASK ["):
            task = line[6:line.index("]")]
        elif m := re.match(r"changed: \[([^]]+)\]", line):
            changed.append(f"{task} {m.group(1)}")
    return sorted(changed)


#: What node_state reads, by key: the commands whose output a role may change.
NODE_STATE = {"addr": ["ip", "-j", "addr"], "route4": ["ip", "-4", "route"], "route6": ["ip", "-6", "route"],
              "neigh": ["ip", "neigh", "show", "nud", "permanent"], "tc": ["tc", "qdisc", "show"],
              "nft": ["nft", "-s", "list", "ruleset"], "links": ["ip", "-o", "link"]}
#: A line no command of NODE_STATE prints: it ends each one's output in node_state's one remote call.
_STATE_END = "--- trexlab node_state: end of output ---"


def node_state(where) -> dict[str, str]:
    """What a role may touch on a node: addresses, routes, neighbours, qdiscs, nftables, links.

    ``where`` is a namespace name, or a trexlab.testbed.inventory.Node (a VM DUT is reached over SSH, in one login
    for all the commands: a login to the emulated DUT costs 1.2-1.4 s, seven of them 9 s, one with all seven
    commands 2.2 s, and the VM tests read a DUT's state before and after each role they apply)."""
    if isinstance(where, str):
        state = {key: run("ip", "netns", "exec", where, *argv).stdout for key, argv in NODE_STATE.items()}
    else:
        # set -e: a command that fails fails the call, as run(check=True) does each one above.
        script = "set -e; " + " ".join(f"{shlex.join(argv)}; echo {shlex.quote(_STATE_END)};"
                                       for argv in NODE_STATE.values())
        parts = run(*where.command(["sh", "-c", script])).stdout.split(_STATE_END + "\n")
        assert len(parts) == len(NODE_STATE) + 1 and parts[-1] == "", f"node_state of {where.name}: {parts[-1]!r}"
        state = dict(zip(NODE_STATE, parts[:-1], strict=True))
    # Neighbours are dumped in hash-table order, which changes when the table grew and shrank again: the set
    # of entries is the state, so compare them sorted.
    state["neigh"] = "\n".join(sorted(state["neigh"].splitlines()))
    return state


def gro(node) -> dict[str, str]:
    """Each test port's generic-receive-offload (on/off), in one login to the node."""
    names = [node.port(0).name, node.port(1).name]
    script = "for p in " + " ".join(names) + "; do ethtool -k $p | grep '^generic-receive-offload:'; done"
    lines = run(*node.command(["sh", "-c", script])).stdout.split()
    return dict(zip(names, lines[1::2], strict=True))


def set_gro(node, values: dict[str, str]) -> None:
    """Each named test port's generic-receive-offload set (port name -> on/off, as gro() reads them)."""
    script = " && ".join(f"ethtool -K {shlex.quote(port)} gro {shlex.quote(value)}" for port, value in values.items())
    run(*node.command(["sh", "-c", script]))


def gso_max_segs(node) -> int:
    """The most TCP segments per packet on a namespace node's test port 0 (only ip -d shows it; roles/tcp_endpoints
    sets 1 for wire-sized frames)."""
    return json.loads(run("ip", "-n", node.netns, "-j", "-d", "link", "show", "dev", node.port(0).name).stdout)[0][
        "gso_max_segs"]


def role_defaults_changed(monkeypatch, role: str, **defaults) -> None:
    """Make these a role's defaults, as if its meta/argument_specs.yml said so (trexlab.spec.experiment.role_options),
    for the rest of a test: what takes a role's default then shows these, and a copy of the real ones shows itself."""
    from trexlab.spec import experiment

    real = experiment.role_options

    def changed(name: str) -> dict:
        options = copy.deepcopy(real(name))
        if name == role:
            for key, value in defaults.items():
                options[f"{role}_{key}"]["default"] = value
        return options

    monkeypatch.setattr(experiment, "role_options", changed)


def static_inventory(name: str) -> str:
    """A static lab's inventory of one tester (two test ports) and one DUT, reached nowhere: for the checks that
    read an inventory before any host is touched."""
    return f"""
all:
  vars: {{trexlab_lab: {{name: {name}, kind: static, topology: single}}}}
  children:
    testers:
      hosts:
        tester:
          ansible_host: 192.0.2.10
          test_ports:
            - {{index: 0, name: p0, mac: "02:00:00:00:00:01", ipv4: 198.18.0.2/24, peer_mac: "02:00:00:00:01:00"}}
            - {{index: 1, name: p1, mac: "02:00:00:00:00:02", ipv4: 198.19.0.2/24, peer_mac: "02:00:00:00:01:01"}}
    duts:
      hosts:
        dut1: {{ansible_host: 192.0.2.20, test_ports: []}}
"""

def offline(argv: list[str]) -> list[str]:
    """argv in an empty network namespace where we may create one (root), else as is (see tf_env)."""
    if os.geteuid() == 0 and shutil.which("unshare"):
        return ["unshare", "--net", *argv]
    return argv


def tf_env(tmp_path, cli_config: str = "/dev/null", **extra: str) -> dict:
    return {"TF_CLI_CONFIG_FILE": cli_config, "TF_DATA_DIR": str(tmp_path / "tfdata"), "TF_IN_AUTOMATION": "1",
            "CHECKPOINT_DISABLE": "1", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
            **extra}


def terraform(module: str, *args: str, env: dict, timeout: float = 180, network: bool = False
              ) -> subprocess.CompletedProcess:
    argv = ["terraform", f"-chdir={module}", *args, "-no-color"]
    return run(*(argv if network else offline(argv)), env=env, check=False, timeout=timeout)


def terraform_test(module: str, tmp_path, cli_config: str = "/dev/null", network: bool = False, **extra: str) -> str:
    """terraform init + test of a module, offline unless it must reach the host's network (a real local lab);
    asserts both succeed and returns the output."""
    env = tf_env(tmp_path, cli_config, **extra)
    init = terraform(module, "init", "-backend=false", "-input=false", env=env, network=network)
    assert init.returncode == 0, init.stdout[-2000:] + init.stderr[-2000:]
    result = terraform(module, "test", env=env, timeout=300, network=network)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    out = result.stdout + result.stderr
    # Every run block the module's test files declare must have run and passed (a count written in the
    # test would go stale each time a run is added).
    declared = sum(len(re.findall(r'^\s*run\s+"', f.read_text(), re.M))
                   for f in (REPO / module / "tests").glob("*.tftest.hcl"))
    assert declared > 0 and f"{declared} passed, 0 failed" in out, out[-4000:]
    return out
