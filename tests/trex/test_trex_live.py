"""Issue 5's acceptance against a real TRex server (opt-in: CI cannot build or download TRex).

Set TREXLAB_TREX_SERVER to run it: ``tester`` for the server that roles/trex
runs on the lab's tester node (reached through an SSH tunnel), or the server's
``host`` (IPv4; TRex binds nothing else). TREXLAB_TREX_INVENTORY names the lab
(default inventory/generated/local/hosts.yml): a single-DUT lab, configured
(make configure), with swtester built. E.g. with a TRex v3.x release tarball::

    LAB_NAME=tx1 scripts/lab.sh up && LAB_NAME=tx1 scripts/lab.sh configure
    ansible-playbook -i inventory/generated/tx1/hosts.yml playbooks/tester-trex.yml \\
        -e trex_tarball=/path/v3.08.tar.gz -e trex_checksum=sha256:<hex>
    TREXLAB_TREX_SERVER=tester TREXLAB_TREX_INVENTORY=inventory/generated/tx1/hosts.yml \\
        pytest -m trex_live tests/trex/test_trex_live.py

The DUT is made a reference DUT for the test's duration (roles/dut_reference:
an nftables token bucket per direction, removed afterwards): a sharp capacity
of DUT_LIMIT frames/s per direction plus a LIMIT_BURST-frame burst, far below
both testers' self-test ceilings on a 2-vCPU machine (TRex in software mode
about 40 kfps, swtester about 560 kfps, 64 B, bidirectional), so both measure
the DUT. It is low on purpose: the DUT namespace forwards through a 1000-frame
backlog on a CPU that other work shares, and at 20 kfps a 50 ms stall of that
CPU already loses frames (more from a burstier sender), which would measure
the machine, not the policer. ``trexlab throughput`` with each generator must
find its loss-free rate (ReferenceDut.loss_free_rate), and the two results
must agree within 10 %; ``trexlab latency --generator trex`` must report
median and 99.9th percentile per direction from TRex's HDR histograms,
measured on the same policed DUT below its capacity (RFC 8219 measures latency
at the throughput rate, not in overload). Run with ``-s`` to see the figures.

Captured evidence (issue 21): a capture on the DUT's ingress ports (an AF_PACKET
socket with kernel timestamps inside the DUT node, frames leaving the DUT left
out) checks what the generator reports against what reached the DUT:

* send-time truth: each direction's start skew that the trial recorded
  (DirectionResult.send_start) agrees with the captured one within
  CAPTURE_AGREEMENT; a start-up burst beyond the trial contract's tolerance
  (frames ahead of the paced schedule, counted on the capture) never passes
  unflagged, and the generator's frames_ahead (a lower bound) never exceeds
  the captured count;
* tags after the warm-up: with tag_delay the first latency frame (TRex's
  signature at the payload's tail, where test frames carry trexlab's pattern)
  reaches the DUT no earlier than tag_delay after the first test frame;
* the latency stream's flows: with RFC 4814 ports and 16 networks, latency
  frames carry destination ports in 1..49151 (nearly all distinct), source
  ports in 1024..65535 and all 16 destination networks.

These checks cannot run where TRex is not installed (CI, the machine they
were written on): they have not yet run against a real TRex. They were written
from the capture that issue 21 reports (TRex v3.08 from source, software mode,
low_end); a run prints the server's build (``-s``), which the notes of a
passing run must name. The capture script itself was checked on a loopback
interface.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trexlab.generators import create_generator
from trexlab.generators.trex import profile_module
from trexlab.reference_dut import from_settings
from trexlab.spec.experiment import with_role_defaults
from trexlab.testbed.inventory import load_lab
from trexlab.trial import SEND_OVERRUN_TOLERANCE, TrialSpec

from labtools import REPO, playbook

SERVER = os.environ.get("TREXLAB_TREX_SERVER")
INVENTORY = os.environ.get("TREXLAB_TREX_INVENTORY", "inventory/generated/local/hosts.yml")

pytestmark = [
    pytest.mark.trex_live,
    pytest.mark.skipif(not SERVER, reason="needs a running TRex server: set TREXLAB_TREX_SERVER (see module doc); "
                                          "CI cannot build or download TRex"),
]

#: frames/s per direction the policed DUT forwards; its token bucket adds LIMIT_BURST frames per trial.
DUT_LIMIT = 5_000
LIMIT_BURST = 1_000
TRIAL_DURATION = 5.0
REFERENCE = from_settings(with_role_defaults("reference", {"rate_fps": DUT_LIMIT, "burst_frames": LIMIT_BURST}))


@pytest.fixture(scope="module")
def lab():
    lab = load_lab(REPO / INVENTORY)
    duts = [n for n in lab.nodes.values() if n.role == "dut"]
    assert lab.topology == "single" and len(duts) == 1, f"{INVENTORY}: needs a single-DUT lab"
    return lab


def reference_dut(lab, state: str) -> None:
    settings = {"dut_reference_rate_fps": DUT_LIMIT, "dut_reference_burst_frames": LIMIT_BURST,
                "dut_reference_state": state}
    result = playbook(lab, "playbooks/dut-reference.yml", "-e", json.dumps(settings))
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.fixture(scope="module")
def policed_dut(lab):
    reference_dut(lab, "present")
    yield lab.duts[0]
    reference_dut(lab, "absent")


def trexlab(procedure: str, generator: str, results: Path, *flags: str) -> dict:
    argv = [sys.executable, "-m", "trexlab.cli", procedure, "--generator", generator, "--inventory",
            str(REPO / INVENTORY), "--results", str(results), "--json", "--frame-size", "64", "--receive-tail", "1",
            "--ceilings", str(results.parent / "ceilings.json"), *flags]
    if generator == "trex" and SERVER != "tester":
        argv += ["--generator-opt", f"server={SERVER}"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def trials(results: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(results.glob("rep-*/trials.jsonl"))
            for line in path.read_text().splitlines()]


def test_throughput_of_trex_and_software_agree_on_the_same_dut(lab, policed_dut, tmp_path):
    search = ["--trial-duration", str(TRIAL_DURATION), "--loss-tolerance-percent", "0", "--max-rate", "10000",
              "--min-rate", "500", "--resolution", "25"]
    found = {}
    for generator in ("trex", "software"):
        run = tmp_path / generator
        found[generator] = trexlab("throughput", generator, run, *search)["result"]["throughput_fps"]
        # Below its ceiling: no trial the tester passed was stretched or lost frames in the tester itself.
        for trial in trials(run):
            if trial["loss_ratio"] == 0:
                assert not trial["stretched"], trial
                assert all(d["tester_drops"] == 0 for d in trial["directions"].values()), trial
    capacity = REFERENCE.loss_free_rate(TRIAL_DURATION)
    print(f"\nthroughput fps per direction: {found}, DUT capacity {capacity:.0f}")
    for generator, fps in found.items():
        assert fps is not None and 0.9 * capacity <= fps <= capacity * 1.01, (generator, fps, capacity)
    assert abs(found["trex"] - found["software"]) <= 0.1 * min(found.values()), found


def test_trex_latency_reports_median_and_99_9th_percentile_per_direction(lab, policed_dut, tmp_path):
    # Below the policer's rate, so every tagged frame crosses the DUT: the policer is requested here
    # rather than left over from the throughput test, and the figures don't depend on test order.
    out = trexlab("latency", "trex", tmp_path / "latency", "--rate", str(int(0.9 * DUT_LIMIT)),
                  "--trial-duration", "10", "--tag-delay", "5", "--tagged-frames", "1000")
    directions = out["result"]["directions"]
    assert set(directions) == {"forward", "reverse"}
    for direction, stats in directions.items():
        print(f"\n{direction}: median {stats['typical'] * 1e6:.0f} us, 99.9th percentile "
              f"{stats['worst_case'] * 1e6:.0f} us, max {stats['max'] * 1e6:.0f} us, {stats['samples']} samples")
        assert stats["samples"] >= 1000  # TRex may send one frame more than rate x duration
        typical, worst = stats["typical"], stats["worst_case"]
        assert math.isfinite(typical) and math.isfinite(worst) and 0 < typical <= worst <= stats["max"] < 1.0


#: s: how closely the recorded start skew must agree with the captured one (the counter reads' resolution,
#: an RPC round trip through the SSH tunnel, plus the capture's own timestamping).
CAPTURE_AGREEMENT = 0.005
#: Frames/s per direction of the captured trials: below the policer, slow enough for a Python capture.
CAPTURE_RATE = 2_000
#: Runs inside the DUT node: every UDP/IPv4 frame arriving on the given interfaces (not those the DUT sends),
#: with the kernel's receive timestamp, for the given seconds; one JSON line per frame on stdout.
CAPTURE = r"""
import json, select, socket, struct, sys, time
SO_TIMESTAMPNS = 35
names, seconds = sys.argv[1].split(","), float(sys.argv[2])
socks = {}
for name in names:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((name, 0))
    socks[s] = name
print(json.dumps({"ready": True}), flush=True)
end = time.monotonic() + seconds
frames = []
while time.monotonic() < end:
    for s in select.select(list(socks), [], [], 0.1)[0]:
        data, anc, _, addr = s.recvmsg(2048, 64)
        if addr[2] == socket.PACKET_OUTGOING or data[12:14] != b"\x08\x00" or data[23] != 17:
            continue
        sec, nsec = struct.unpack("qq", anc[0][2][:16])
        frames.append([socks[s], sec + nsec * 1e-9, data[30:34].hex(), *struct.unpack("!HH", data[34:38]),
                       data[-16:].hex()])
for frame in frames:
    print(json.dumps(frame))
"""


def capture(dut, seconds: float, run_trial):
    """(trial result, captured frames per DUT port index): frames are (time, destination, source port,
    destination port, payload tail)."""
    ports = [dut.port(0).name, dut.port(1).name]
    proc = subprocess.Popen(dut.command(["python3", "-c", CAPTURE, ",".join(ports), str(seconds)]),
                            stdout=subprocess.PIPE, text=True)
    assert json.loads(proc.stdout.readline()) == {"ready": True}
    result = run_trial()
    out, _ = proc.communicate(timeout=seconds + 60)
    frames = {0: [], 1: []}
    for line in out.splitlines():
        name, t, dst, sport, dport, tail = json.loads(line)
        frames[ports.index(name)].append((t, bytes.fromhex(dst), sport, dport, bytes.fromhex(tail)))
    return result, frames


def trex_generator(lab):
    return create_generator("trex", lab=lab, **({} if SERVER == "tester" else {"server": SERVER}))


def frames_ahead(times: list[float], rate: float) -> int:
    """Frames that reached the DUT ahead of a paced schedule from the first one (a burst or a fast pace)."""
    return max((i - math.floor(rate * (t - times[0])) for i, t in enumerate(times)), default=0)


def test_capture_confirms_send_start_skew_and_no_unflagged_burst(lab, policed_dut):
    generator = trex_generator(lab)
    try:
        spec = TrialSpec(offered_load=CAPTURE_RATE, duration=2.0, receive_tail=0.5)
        result, frames = capture(policed_dut, 8.0, lambda: generator.run_trial(spec))
    finally:
        generator.close()
    starts = {}
    for index, direction in ((0, "forward"), (1, "reverse")):
        times = sorted(t for t, *_ in frames[index])
        d = result.directions[direction]
        assert len(times) >= 0.99 * d.frames_sent, (direction, len(times), d.frames_sent)
        starts[direction] = times[0]
        ahead = frames_ahead(times, CAPTURE_RATE)
        print(f"\n{direction}: captured span {times[-1] - times[0]:.4f} s, {ahead} frames ahead of schedule; "
              f"reported send_duration {d.send_duration:.4f} s, frames_ahead {d.frames_ahead}, "
              f"send_start {d.send_start}")
        # A burst beyond the tolerance never passes unflagged, and the reported lower bound is one.
        assert result.stretched or ahead <= SEND_OVERRUN_TOLERANCE * d.frames_intended + 1, (ahead, result.notes)
        assert d.frames_ahead <= ahead + 2
    print(f"TRex server: {generator.server_version}")
    skew = starts["reverse"] - starts["forward"]
    recorded = result.directions["reverse"].send_start - result.directions["forward"].send_start
    print(f"start skew: captured {skew * 1e3:.2f} ms, recorded {recorded * 1e3:.2f} ms")
    assert abs(skew - recorded) <= CAPTURE_AGREEMENT


def test_capture_shows_tags_after_the_warm_up_on_the_test_streams_flows(lab, policed_dut):
    generator = trex_generator(lab)
    tag_delay, duration = 2.0, 4.0
    try:
        spec = TrialSpec(offered_load=CAPTURE_RATE, duration=duration, receive_tail=0.5, directions="forward",
                         port_mode="rfc4814", destination_networks=16, latency_mode="tagged",
                         latency_frames=500, tag_delay=tag_delay)
        result, frames = capture(policed_dut, duration + 8.0, lambda: generator.run_trial(spec))
    finally:
        generator.close()
    # Test frames end with trexlab's payload pattern (the field engine rewrites ports, addresses and checksums
    # only); TRex writes its latency signature over the tail of latency frames.
    pattern = profile_module().test_frame(0, 4, spec.frame_size[0])[-16:]
    test_times = [t for t, *_rest, tail in frames[0] if tail == pattern]
    tagged = [(t, dst, sport, dport) for t, dst, sport, dport, tail in frames[0] if tail != pattern]
    print(f"\n{len(tagged)} latency frames captured; first {tagged[0][0] - min(test_times):.3f} s after the "
          f"first test frame (tag_delay {tag_delay} s)")
    assert len(tagged) >= 0.99 * result.directions["forward"].tags_sent > 0
    assert tagged[0][0] - min(test_times) >= tag_delay - CAPTURE_AGREEMENT
    destination_ports = [dport for *_, dport in tagged]
    assert all(1 <= p <= 49151 for p in destination_ports)
    assert all(1024 <= sport <= 65535 for _, _, sport, _ in tagged)
    assert len(set(destination_ports)) >= 0.95 * len(destination_ports)  # 500 draws from 49151: ~2.5 repeats
    assert {dst[2] for _, dst, _, _ in tagged} == set(range(16))
