#!/usr/bin/env python3
"""Realise or remove a VM lab from the plan Terraform computed; prepare its guest image and accelerator.

    vmlab.py prepare <cache dir> <tfvars.json>  guest image (built or cached) and accelerator -> Terraform variables
    VMLAB_PLAN='<json>' vmlab.py up       tester namespace with sshd, taps, one QEMU per DUT, wait for SSH
    VMLAB_PLAN='<json>' vmlab.py down     stop the QEMUs (by PID), remove taps, namespace and runtime files
    VMLAB_PLAN='<json>' vmlab.py status   exit 0 when every piece of the lab is in place

The tester node, and the client and server nodes (TCP endpoints: macvlan children of the tester ports), are
made exactly as the local lab makes them (terraform/labs/local/scripts/nslab.py).
Every QEMU is started directly (no daemonizing wrapper), so the PID recorded is QEMU's own; every wait is
bounded, and a VM that does not answer SSH in time is stopped and its console shown. ``up`` first removes
whatever an interrupted run of the same lab left. Standard library only: it runs with the system python3.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "local" / "scripts"))
import nslab  # noqa: E402  (the local lab's realiser: namespace nodes, sshd, keys)
from nslab import link_exists, sh  # noqa: E402

QEMU = "qemu-system-x86_64"
BOOT_TIMEOUT = 180.0  # s until a VM answers SSH: under TCG a boot takes about 5 s alone, more when CPUs are busy
PROBE_TIMEOUT = 10.0  # s for a KVM boot that powers off at once (about 2 s); KVM that hangs is caught by this
CARRIER_TIMEOUT = 20.0
KERNEL_ARGS = "console=ttyS0 panic=-1 quiet loglevel=3"
# The CPU model under emulation. 'max' offers AVX2, XSAVE of AVX state and more, which glibc, CPython and the
# kernel then use, and which TCG emulates slowly; plain x86-64 (qemu64: SSE2) runs the same guest (Debian amd64,
# Jool, nftables, netem) faster: six Ansible tasks into one guest, alternated on the same host, 25.5 s against
# 32.5 s (median of 4 pairs, ratio 0.77); python3 start-up 0.89 of max. Without la57 or without AVX it was no faster.
TCG_CPU = "qemu64"


def say(line: str) -> None:
    print(f"vmlab: {line}", file=sys.stderr, flush=True)


# -- preparation: image and accelerator ---------------------------------------------------------------------
def qemu_version() -> str:
    return sh(QEMU, "--version").stdout.splitlines()[0]


def kvm_works(image: Path, work: Path) -> bool:
    """Boot the guest with KVM, asking it only to power off; True when it did so in time.

    /dev/kvm may exist and still hang (nested virtualisation without support): only a real boot tells.
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    console = work / "kvm-probe.log"
    console.unlink(missing_ok=True)
    argv = [QEMU, "-accel", "kvm", "-cpu", "host", "-m", "512", "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot", "-serial", f"file:{console}", "-kernel", str(image / "vmlinux"),
            "-initrd", str(image / "initrd.cpio"), "-append", f"{KERNEL_ARGS} trexlab.probe=1"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        stop_pid(proc.pid)
        proc.wait()
    text = console.read_text(errors="replace") if console.exists() else ""
    console.unlink(missing_ok=True)
    return "trexlab-probe: booted" in text


def choose_accel(image: Path, cache: Path) -> str:
    """kvm or tcg: TREXLAB_VM_ACCEL when set, else a probe, kept per host kernel and QEMU version."""
    wanted = os.environ.get("TREXLAB_VM_ACCEL", "auto")
    if wanted not in ("auto", "kvm", "tcg"):
        raise SystemExit(f"vmlab: TREXLAB_VM_ACCEL={wanted}: allowed auto, kvm, tcg")
    if wanted != "auto":
        return wanted
    key = f"{os.uname().release} | {qemu_version()}"
    record = cache / "accel.json"
    try:
        known = json.loads(record.read_text())
        if known.get("key") == key:
            return known["accel"]
    except (OSError, ValueError, KeyError):
        pass
    say("does KVM work here? booting the guest once with KVM to find out")
    accel = "kvm" if kvm_works(image, cache) else "tcg"
    record.write_text(json.dumps({"key": key, "accel": accel}) + "\n")
    return accel


def prepare(cache: Path, tfvars: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    script = Path(__file__).resolve().parent / "image.sh"
    built = subprocess.run([str(script), str(cache)], stdout=subprocess.PIPE, text=True)
    if built.returncode != 0:
        raise SystemExit(built.returncode)
    image = Path(built.stdout.strip().splitlines()[-1])
    accel = choose_accel(image, cache)
    if accel == "tcg":
        say("no usable KVM: the DUTs are emulated (TCG); fine for function, not for device performance figures")
    tfvars.parent.mkdir(parents=True, exist_ok=True)
    tfvars.write_text(json.dumps({"image_dir": str(image), "accel": accel}, indent=2) + "\n")


# -- processes --------------------------------------------------------------------------------------------
def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie of ours counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def stop_pid(pid: int) -> None:
    """TERM, then KILL after two seconds; return once the process is gone."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid):
                return
            time.sleep(0.05)


def qemu_pids(home: Path) -> list[int]:
    """PIDs of QEMUs of this VM: the recorded one, and any other whose command line names its directory
    (one started by an up that was interrupted before it recorded the PID)."""
    pids = set()
    try:
        pids.add(int((home / "qemu.pid").read_text()))
    except (OSError, ValueError):
        pass
    marker = f"{home}/".encode()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "cmdline").read_bytes():
                    pids.add(int(proc.name))
            except OSError:
                continue
    ours = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if QEMU.encode() in cmdline and marker in cmdline:  # never a reused PID of something else
            ours.append(pid)
    return sorted(ours)


# -- the lab ------------------------------------------------------------------------------------------------
def vm_nodes(plan: dict) -> dict[str, dict]:
    return {name: node for name, node in plan["nodes"].items() if node["netns"] is None}


def namespace_nodes(plan: dict) -> dict[str, dict]:
    """The tester and the TCP endpoints (client, server): namespaces of the host."""
    return {name: node for name, node in plan["nodes"].items() if node["netns"] is not None}


def tester(plan: dict) -> tuple[str, dict]:
    return next((name, node) for name, node in plan["nodes"].items() if node["role"] == "tester")


def home(plan: dict, name: str) -> Path:
    return Path(plan["state_dir"]) / name


def socket_path(plan: dict, node: str, port: str) -> str:
    path = str(home(plan, node) / f"{port}.sock")
    if len(path) > 107:
        raise SystemExit(f"vmlab: {path}: longer than a unix socket path may be (107): use a shorter state directory")
    return path


def qemu_argv(plan: dict, name: str, node: dict) -> list[str]:
    vm, h = plan["vm"], home(plan, name)
    ports = [f"mgmt0={node['mgmt_mac']}"] + [f"{p['name']}={p['mac']}" for p in node["test_ports"]]
    key = (Path(plan["state_dir"]) / "id_ed25519.pub").read_text().split()[1]
    append = " ".join([KERNEL_ARGS, f"trexlab.hostname={name}", f"trexlab.ports={','.join(ports)}",
                       f"trexlab.mgmt={node['ansible_host']}/127", f"trexlab.sshkey={key}"])
    accel = ["-accel", "kvm", "-cpu", "host"] if vm["accel"] == "kvm" else ["-accel", "tcg", "-cpu", TCG_CPU]
    argv = ["taskset", "-c", ",".join(map(str, node["host_cpus"])), QEMU, "-name", f"trexlab-{plan['lab']}-{name}",
            *accel, "-smp", "1", "-m", str(vm["memory_mib"]), "-nodefaults", "-no-user-config",
            "-display", "none", "-no-reboot", "-serial", f"file:{h / 'console.log'}", "-pidfile", str(h / "qemu.pid"),
            "-kernel", vm["kernel"], "-initrd", vm["initrd"], "-append", append,
            "-device", "virtio-rng-pci",
            "-netdev", f"tap,id=mgmt0,ifname={node['mgmt_root_if']},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=mgmt0,mac={node['mgmt_mac']}"]
    for port in node["test_ports"]:
        # RSS as a NIC has it, so that dut_tuning's 'ethtool -N ... rx-flow-hash' really applies.
        argv += ["-netdev", netdev(plan, name, port["name"]),
                 "-device", f"virtio-net-pci,netdev={port['name']},mac={port['mac']},rss=on,hash=on"]
    return argv


def netdev(plan: dict, name: str, port: str) -> str:
    """QEMU's backend of one DUT port: the link's tap, or a socket pair to the other VM."""
    for link in plan["links"]:
        ends = {(link["a"]["node"], link["a"]["port"]): link["b"], (link["b"]["node"], link["b"]["port"]): link["a"]}
        other = ends.get((name, port))
        if other is None:
            continue
        if link["tap"]:
            return f"tap,id={port},ifname={link['tap']},script=no,downscript=no"
        return (f"dgram,id={port},local.type=unix,local.path={socket_path(plan, name, port)},"
                f"remote.type=unix,remote.path={socket_path(plan, other['node'], other['port'])}")
    raise SystemExit(f"vmlab: {name} port {port} is on no link of the plan")


def start_vm(plan: dict, name: str, node: dict) -> None:
    h = home(plan, name)
    h.mkdir(parents=True, exist_ok=True)
    sh("ip", "tuntap", "add", "dev", node["mgmt_root_if"], "mode", "tap")
    sh("ip", "-6", "addr", "add", f"{node['mgmt_root']}/127", "dev", node["mgmt_root_if"], "nodad")
    sh("ip", "link", "set", node["mgmt_root_if"], "up")
    with open(h / "qemu.log", "wb") as log:
        proc = subprocess.Popen(qemu_argv(plan, name, node), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)  # taskset execs QEMU: this PID is QEMU's
    (h / "qemu.pid").write_text(f"{proc.pid}\n")


def attach_tester_ports(plan: dict) -> None:
    """Once QEMU holds each tap (carrier up), move it into the tester's namespace as the tester port."""
    tester_name, tester_node = tester(plan)
    ns = tester_node["netns"]
    deadline = time.monotonic() + CARRIER_TIMEOUT
    for link in plan["links"]:
        if not link["tap"]:
            continue
        end = link["a"] if link["a"]["node"] == tester_name else link["b"]
        sh("ip", "link", "set", "dev", link["tap"], "address", end["mac"])
        sh("ip", "link", "set", "dev", link["tap"], "up")
        if not nslab.wait_for_link_state(link["tap"], "carrier", "1", deadline):
            raise SystemExit(f"vmlab: tap {link['tap']} has no carrier after {CARRIER_TIMEOUT:.0f} s: "
                             "its QEMU did not attach (see qemu.log in the state directory)")
        sh("ip", "link", "set", "dev", link["tap"], "netns", ns)
        sh("ip", "link", "set", "dev", link["tap"], "name", end["port"], netns=ns)
        sh("ip", "link", "set", "dev", end["port"], "up", netns=ns)


def wait_for_endpoint_ports(plan: dict) -> None:
    """Return once every TCP endpoint's port (a macvlan of a tester port) is operationally up."""
    deadline = time.monotonic() + CARRIER_TIMEOUT
    for macvlan in plan.get("macvlans", []):
        netns = plan["nodes"][macvlan["node"]]["netns"]
        if not nslab.wait_for_link_state(macvlan["port"], "operstate", "up", deadline, netns):
            raise SystemExit(f"vmlab: {macvlan['node']} port {macvlan['port']} has no carrier after "
                             f"{CARRIER_TIMEOUT:.0f} s")


def wait_for_vms(plan: dict) -> None:
    """Return once every VM answers on its SSH port; stop early, showing the console, if a QEMU ended."""
    deadline = time.monotonic() + BOOT_TIMEOUT
    for name, node in vm_nodes(plan).items():
        h = home(plan, name)
        pid = int((h / "qemu.pid").read_text())
        while not nslab.ssh_answers(node["ansible_host"]):
            failure = None
            if not alive(pid):
                failure = "QEMU ended"
            elif time.monotonic() > deadline:
                failure = f"no SSH after {BOOT_TIMEOUT:.0f} s"
            if failure:
                console = (h / "console.log").read_text(errors="replace") if (h / "console.log").exists() else ""
                qlog = (h / "qemu.log").read_text(errors="replace") if (h / "qemu.log").exists() else ""
                raise SystemExit(f"vmlab: VM {name}: {failure}\n--- qemu.log\n{qlog[-2000:]}\n"
                                 f"--- console.log\n{console[-3000:]}")
            time.sleep(0.2)


def up(plan: dict) -> None:
    start = time.monotonic()
    nslab.refuse_foreign(plan)
    down(plan)  # whatever an interrupted run left of this lab
    nslab.refuse_taken_management(plan)
    nslab.record_owner(plan)
    state = Path(plan["state_dir"])
    for path in (plan["vm"]["kernel"], plan["vm"]["initrd"]):
        if not Path(path).is_file():
            raise SystemExit(f"vmlab: guest image file {path} is missing: lab-up prepares it (scripts/lab.sh)")
    nslab.ssh_keys(state)
    Path("/run/sshd").mkdir(exist_ok=True)
    hosts = namespace_nodes(plan)
    for name, node in hosts.items():
        nslab.add_namespace_node(node)
        nslab.start_sshd(plan, name, node)
    # A fresh known_hosts: the namespaces' generated keys; each new guest's key is recorded at first contact.
    nslab.write_known_hosts({"state_dir": plan["state_dir"], "nodes": hosts})
    for link in plan["links"]:
        if link["tap"]:
            sh("ip", "tuntap", "add", "dev", link["tap"], "mode", "tap")
    try:
        for name, node in vm_nodes(plan).items():
            start_vm(plan, name, node)
        attach_tester_ports(plan)
        for macvlan in plan.get("macvlans", []):  # on the tester ports, now in the tester's namespace
            nslab.add_endpoint_port(plan, macvlan)
        nslab.wait_for_ssh({"nodes": hosts})
        wait_for_endpoint_ports(plan)
        wait_for_vms(plan)
    except BaseException:
        down(plan)  # nothing half made stays behind
        raise
    say(f"lab {plan['lab']}: {len(vm_nodes(plan))} VM(s) ({plan['vm']['accel']}) up in "
        f"{time.monotonic() - start:.0f} s")


def down(plan: dict) -> None:
    # A lab of the same name up from another state directory (another checkout) bears this lab's namespace and
    # link names: only this state directory's QEMUs (qemu_pids: by their directory) and files are this lab's.
    others = nslab.foreign_state_dirs(plan)
    if others:
        say(f"lab {plan['lab']}: its namespaces are up for {', '.join(sorted(others))}: left to that lab")
    for name, node in vm_nodes(plan).items():
        h = home(plan, name)
        for pid in qemu_pids(h):
            stop_pid(pid)
        if not others and link_exists(node["mgmt_root_if"]):
            sh("ip", "link", "delete", node["mgmt_root_if"], check=False)
        for file in ("qemu.pid", "qemu.log", "console.log", *(f"{p['name']}.sock" for p in node["test_ports"])):
            (h / file).unlink(missing_ok=True)
        if h.is_dir():
            h.rmdir()
    present = nslab.namespaces()
    for name, node in namespace_nodes(plan).items():  # the tester's ports (taps) and their macvlans go with them
        if not others:
            nslab.remove_namespace_node(node, present)
        nslab.remove_node_files(plan, name, role_state=not others)
    for link in plan["links"]:
        if not others and link["tap"] and link_exists(link["tap"]):  # a tap not yet moved into the namespace
            sh("ip", "link", "delete", link["tap"], check=False)
    if not others:
        nslab.forget_owner(plan)
    nslab.remove_lab_files(Path(plan["state_dir"]))


def problems(plan: dict) -> list[str]:
    """What of the lab is not in place, one phrase each naming the node: empty when the lab is up."""
    present = nslab.namespaces()
    found = [p for name, node in namespace_nodes(plan).items()
             if (p := nslab.namespace_node_problem(plan, name, node, present))]
    for name, node in vm_nodes(plan).items():
        pid_file = home(plan, name) / "qemu.pid"
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            found.append(f"{name}: its VM is down (no pid in {pid_file})")
            continue
        if not alive(pid) or pid not in qemu_pids(home(plan, name)):
            found.append(f"{name}: its VM is down (pid {pid} of {pid_file} is no QEMU of it)")
        elif not link_exists(node["mgmt_root_if"]):
            found.append(f"{name}: management link {node['mgmt_root_if']} is gone")
    return found


def main() -> int:
    if sys.argv[1:2] == ["prepare"] and len(sys.argv) == 4:
        prepare(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    return nslab.realise(sys.argv[1:], "VMLAB_PLAN", up, down, problems,
                         "vmlab.py prepare <cache dir> <tfvars.json> | VMLAB_PLAN=<json> vmlab.py up|down|status")


if __name__ == "__main__":
    sys.exit(main())
