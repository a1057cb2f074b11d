"""roles/trex on a namespace node over SSH, with a tarball made here instead of TRex.

The fake release has TRex's layout where the role looks (a top directory and
t-rex-64); its t-rex-64 records its arguments, runs a start helper as TRex's
does (``$PYTHON3`` or python3 running dpdk_setup_ports.py --dump-pci-description,
which lists NICs with ``lspci -Dvmmn`` and ``netstat -tn`` and asks
``platform.linux_distribution()``, gone since Python 3.8: on a real TRex v3.08
every start logged both tracebacks), makes the DPDK runtime directory of the
configured file prefix as TRex does, and listens on the RPC port 4501 on the
node's loopback (IPv4 only, like TRex), greeting every connection, which is all
the role checks of a running server.  So the test proves fetch/verify/unpack,
the rendered trex_cfg.yaml, a server log without a traceback, the supervised
service (start, restart after a crash, stop), the generator's SSH tunnel to the
node's loopback, idempotence and state=absent.
"""

import hashlib
import os
import platform
import socket
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from trexlab.generators.trex import SSHTunnel

import labtools
from labtools import changed_count, run

# Configuration and frame counts at low rates, nothing that a busy CPU changes: make test runs it beside
# other such tests (the `unmeasured` marker).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]

FAKE_SERVER = """#!/bin/sh
# Stands in for TRex: records how it was started, runs the start helper as t-rex-64 does (its failure does not
# stop the server), makes DPDK's runtime directory and answers on the RPC port.
echo "$@" > "$(dirname "$0")/started-with"
cd "$(dirname "$0")" && ${PYTHON3:-python3} dpdk_setup_ports.py --dump-pci-description
prefix=$(sed -n 's/^ *prefix: "\\(.*\\)"$/\\1/p' "$(echo "$@" | sed 's/.*--cfg \\([^ ]*\\).*/\\1/')")
[ -z "$prefix" ] || mkdir -p "/run/dpdk/$prefix"
exec python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 4501))
s.listen()
while True:
    c = s.accept()[0]
    c.sendall(b"fake trex\\n")
    c.close()
'
"""


# What TRex's start helper does that matters here: the commands it runs and the Python it needs.
FAKE_HELPER = """import platform, subprocess
devices = subprocess.check_output(["lspci", "-Dvmmn"], text=True).count("Slot:")
subprocess.check_output(["netstat", "-tn"])
print(f"start helper: {devices} PCI devices on {platform.linux_distribution()[0]}")
"""


@pytest.fixture(scope="module")
def lab(lab_factory):
    # The role runs on the tester alone, and a loopback lab's tester is the same node as a single-DUT lab's (its
    # ports' peers are each other): no DUT to bring up and configure first (lab-up and configure took 8 s instead
    # of 12 s with this file running alone, about four times that in make test's busy phase 2). Nor is the lab
    # configured (playbooks/site.yml): the role reads the ports from the inventory and sets up what TRex needs.
    return lab_factory("tx", "loopback", configure=False)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("ttx-release")
    top = root / "v9.99"
    top.mkdir()
    (top / "t-rex-64").write_text(FAKE_SERVER)
    (top / "t-rex-64").chmod(0o755)
    (top / "dpdk_setup_ports.py").write_text(FAKE_HELPER)
    tarball = root / "v9.99.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(top, arcname="v9.99")
    return tarball, "sha256:" + hashlib.sha256(tarball.read_bytes()).hexdigest()


def playbook(lab, *extra: str) -> subprocess.CompletedProcess:
    return labtools.playbook(lab, "playbooks/tester-trex.yml", *extra, timeout=240)


def rpc_answers(netns: str) -> bool:
    probe = "import socket; socket.create_connection(('127.0.0.1', 4501), timeout=1)"
    return run("ip", "netns", "exec", netns, "python3", "-c", probe, check=False).returncode == 0


#: The supervisor's pause before it restarts a server that died (trex-supervise.sh.j2; trex.service.j2's RestartSec).
RESTART_SEC = 2


def fake_servers(netns: str) -> list[int]:
    """The PIDs of the namespace's processes that serve the fake's RPC port (its command line names 4501)."""
    pids = run("ip", "netns", "pids", netns).stdout.split()
    return [int(p) for p in pids if "4501" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]


def started_s(pid: int) -> float:
    """When process pid started, on CLOCK_BOOTTIME (/proc/<pid>/stat's 22nd field, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def wait_until(condition, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_role_installs_runs_and_removes_a_release(lab, release):
    tarball, checksum = release
    tester = lab.tester
    root = Path(f"/var/lib/trexlab/{lab.name}/{tester.name}/trex")
    version = ["-e", "trex_version=v9.99", "-e", f"trex_tarball={tarball}"]

    wrong = playbook(lab, *version, "-e", "trex_checksum=sha256:" + "0" * 64)
    assert wrong.returncode != 0 and "the tarball's is " + checksum in wrong.stdout
    # Refused on the controller before anything on the node: no directory made, no tarball copied there.
    assert not root.exists() and not rpc_answers(tester.netns)

    try:
        first = playbook(lab, *version, "-e", f"trex_checksum={checksum}")
        assert first.returncode == 0, first.stdout[-3000:]
        assert changed_count(first.stdout) > 0
        assert os.readlink(root / "current") == str(root / "v9.99")
        assert rpc_answers(tester.netns)
        args = (root / "current" / "started-with").read_text().split()
        assert args[:2] == ["-i", "--hdrh"] and args[args.index("--cfg") + 1] == str(root / "trex_cfg.yaml")
        assert "--no-scapy-server" in args  # TRex's scapy server fails as nobody under /root and stops TRex
        # The start helper ran and found what it needs: lspci, netstat, platform.linux_distribution.
        log = (root / "trex.log").read_text()
        assert "Traceback" not in log and "Error" not in log, log
        assert f"PCI devices on {platform.freedesktop_os_release()['NAME']}" in log, log

        config = yaml.safe_load((root / "trex_cfg.yaml").read_text())[0]
        assert config["interfaces"] == [tester.port(0).name, tester.port(1).name]
        assert config["low_end"] is True  # this machine has fewer than 4 CPUs
        assert config["low_end_core"] == tester.cpus[0]
        assert (config["zmq_rpc_port"], config["zmq_pub_port"]) == (4501, 4500)
        # Namespace nodes share /run/dpdk: each server its own DPDK file prefix.
        assert config["prefix"] == f"trexlab-{lab.name}-{tester.name}"
        assert Path("/run/dpdk", config["prefix"]).is_dir()
        assert [p["dest_mac"] for p in config["port_info"]] == [tester.port(0).peer_mac, tester.port(1).peer_mac]

        # The generator reaches the server on the node's loopback through the node's sshd.
        tunnel = SSHTunnel(tester, (4501,))
        try:
            with socket.create_connection(("127.0.0.1", tunnel.local_ports[0]), timeout=5) as conn:
                assert conn.makefile("rb").readline() == b"fake trex\n"
        finally:
            tunnel.close()

        again = playbook(lab, *version, "-e", f"trex_checksum={checksum}")
        assert again.returncode == 0 and changed_count(again.stdout) == 0, again.stdout[-3000:]

        # The supervisor restarts a server that dies, as systemd's Restart=on-failure with RestartSec=2 would: a
        # new server process, started no sooner than 2 s after the old one died (not at once, in a loop that
        # would spin on a server that fails at start).
        [killed] = fake_servers(tester.netns)
        died = time.clock_gettime(time.CLOCK_BOOTTIME)
        os.kill(killed, 9)
        assert wait_until(lambda: rpc_answers(tester.netns), 10)
        [restarted] = fake_servers(tester.netns)
        assert restarted != killed and not Path(f"/proc/{killed}").exists()
        # One clock tick (10 ms) of /proc's start time is the margin.
        assert started_s(restarted) - died >= RESTART_SEC - 0.02, started_s(restarted) - died
    finally:
        gone = playbook(lab, *version, "-e", f"trex_checksum={checksum}", "-e", "trex_state=absent")
    assert gone.returncode == 0 and changed_count(gone.stdout) > 0, gone.stdout[-3000:]
    assert not root.exists() and not rpc_answers(tester.netns)
    assert not Path("/run/dpdk", f"trexlab-{lab.name}-{tester.name}").exists()
    again = playbook(lab, *version, "-e", f"trex_checksum={checksum}", "-e", "trex_state=absent")
    assert again.returncode == 0 and changed_count(again.stdout) == 0, again.stdout[-3000:]


def test_rpc_probe_sees_a_closed_port():
    # rpc_answers must be able to say no, or the assertions above prove nothing.
    with labtools.refused_port() as port:
        assert subprocess.run(["python3", "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}), 1)"],
                              capture_output=True).returncode != 0
