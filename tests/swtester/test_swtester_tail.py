"""swtester's receiver counts every frame received within the receive tail, even those it had not read when the tail
ended: a receiver the machine held up then (a stopped vCPU, a busy CPU) stopped at the tail's end by the clock alone
and counted the frames still waiting in its ring as lost. Nor does its receive ring drop frames that arrive at a low
rate while it is held up for longer than 64 block timeouts (128 ms), as it did with 64 blocks.

Two namespaces of their own: the tester's ports p0 and p1, and a bridge between them that forwards at half the
offered rate (tbf: this kernel has no netem), so frames keep arriving for about DURATION after the sender is done.
The whole tester is stopped (SIGSTOP) for the last few hundred of them, until after the tail's end, or for 350 ms
right after its sender is done. ~2 s and ~1 s per build."""

import json
import os
import signal
import subprocess
import time

import pytest

from labtools import run

pytestmark = pytest.mark.lab

RATE, DURATION, TAIL = 20_000, 0.5, 1.0
#: bit/s the bridge forwards: half the offered load of 60-byte frames (64 B less the FCS a veth has not).
SHAPED = RATE // 2 * 60 * 8


@pytest.fixture(scope="module")
def namespaces(tester_and_dut):
    tester, dut = tester_and_dut
    run("ip", "-n", dut, "link", "add", "br0", "type", "bridge")
    for port in ("q0", "q1"):
        run("ip", "-n", dut, "link", "set", port, "master", "br0")
    run("ip", "-n", dut, "link", "set", "br0", "up")
    run("tc", "-n", dut, "qdisc", "add", "dev", "q1", "root", "tbf", "rate", f"{SHAPED}bit", "burst", "1600",
        "limit", "10000000")
    return tester, dut


def threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except FileNotFoundError:
        return 0


def queued(dut: str) -> int:
    """Frames waiting in the bridge's shaper."""
    return json.loads(run("tc", "-j", "-s", "-n", dut, "qdisc", "show", "dev", "q1").stdout)[0]["qlen"]


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "swtester did not get there in time"
        time.sleep(0.002)


def forward_when_stopped(binary: str, tester: str, duration: float, tail: float, stop) -> dict:
    """swtester's forward direction, at RATE for `duration` with `tail`, its receive ring alone counting; once its
    sender is done, stop(process, done) stops the whole tester (SIGSTOP) for a while (done: time.monotonic() then)."""
    argv = ["ip", "netns", "exec", tester, binary, "--port0", "p0", "--port1", "p1", "--directions", "forward",
            "--mac0", "02:00:00:00:00:01", "--mac1", "02:00:00:00:00:02",
            "--peer0", "02:00:00:00:00:02", "--peer1", "02:00:00:00:00:01", "--receive-method", "ring",
            "--rate", str(RATE), "--duration", str(duration), "--tail", str(tail)]
    # ip netns exec execs swtester in its own process: the pid is swtester's.
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Its threads: main, the receiver, the sender; the sender's end starts the tail.
        wait_for(lambda: threads(process.pid) == 3)
        wait_for(lambda: threads(process.pid) < 3)
        stop(process, time.monotonic())
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, stderr
    forward = json.loads(stdout)["directions"]["forward"]
    assert forward["sent"] == round(RATE * duration)
    return forward


def test_frames_received_within_the_tail_count_however_late_the_receiver_reads_them(binary, namespaces):
    tester, dut = namespaces

    def stop(process, done):
        # Stopped for the shaper's last 300 frames (15 ms of the offered load, 30 ms at the bridge: fewer blocks of
        # the receive ring than it has), and until after the tail's end.
        wait_for(lambda: queued(dut) <= 300)
        process.send_signal(signal.SIGSTOP)
        time.sleep(max(0.0, done + TAIL + 0.15 - time.monotonic()))
        process.send_signal(signal.SIGCONT)

    forward = forward_when_stopped(binary, tester, DURATION, TAIL, stop)
    intended = round(RATE * DURATION)
    assert forward["tester_drops"] == 0
    assert forward["received"] == intended, (
        f"{intended - forward['received']} frames received within the tail were not counted")


def test_a_receiver_stalled_at_a_low_rate_drops_nothing_in_its_ring(binary, namespaces):
    """The receive ring had 64 blocks, and the kernel hands a block that is not full to the receiver after the block
    timeout (2 ms): at a low rate each block holds 2 ms of frames, so a receiver held up for more than 64 of them
    (128 ms; the realtime throttle alone stops a thread for 50 ms) found the ring full, and the kernel dropped the
    frames after it (PACKET_STATISTICS tp_drops), counted as the DUT's loss. Here the tester is stopped for STALL
    right after its sender is done for `stall` (350 ms), while the bridge still forwards the frames queued in its
    shaper (10 kfps: 20 frames a block, 175 blocks)."""
    tester, _ = namespaces
    duration, tail, stall = 0.3, 0.6, 0.35

    def stop(process, done):
        process.send_signal(signal.SIGSTOP)
        time.sleep(stall)
        process.send_signal(signal.SIGCONT)

    forward = forward_when_stopped(binary, tester, duration, tail, stop)
    intended = round(RATE * duration)
    assert forward["tester_drops"] == 0 and forward["received"] == intended, (
        f"the receive ring dropped {forward['tester_drops']} frames, {intended - forward['received']} counted lost")
