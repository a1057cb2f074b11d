"""RFC 6349 with the TRex ASTF engine against a real TRex server (opt-in: CI cannot build or download TRex).

Set TREXLAB_TREX_SERVER to run it: ``tester`` for the server that roles/trex
runs on the lab's tester node (reached through an SSH tunnel), or the server's
``host`` (IPv4). The server must run in ASTF mode (t-rex-64 -i --astf; an STL
server cannot play TCP). TREXLAB_TREX_INVENTORY names the lab (default
inventory/generated/local/hosts.yml): a single-DUT lab, configured. E.g. with a
TRex v3.x release tarball::

    LAB_NAME=tx1 scripts/lab.sh up && LAB_NAME=tx1 scripts/lab.sh configure
    ansible-playbook -i inventory/generated/tx1/hosts.yml playbooks/tester-trex.yml \\
        -e trex_tarball=/path/v3.08.tar.gz -e trex_checksum=sha256:<hex> -e '{"trex_extra_args": ["--astf"]}'
    TREXLAB_TREX_SERVER=tester TREXLAB_TREX_INVENTORY=inventory/generated/tx1/hosts.yml \\
        pytest -s -m trex_live tests/trex/test_trex_astf_live.py

The DUT is made a reference DUT for the test's duration (roles/dut_reference:
an nftables token bucket of DUT_LIMIT frames/s per direction, which polices
TCP as well as UDP test traffic), so the path's bottleneck is known: declared
as the bottleneck bandwidth at 1518-byte frames, the maximum achievable TCP
throughput is DUT_LIMIT full-size segments per second. ``trexlab tcp --engine
trex`` must then measure, per direction of the download, upload and
bidirectional tests, an actual TCP throughput at or below that maximum (plus
what the bucket's burst allows) and not far below it, a TCP efficiency and a
buffer delay from TRex's counters and flow dump, with the result directory of
the iperf3 engine. The frame trials are skipped (MTU and BB declared): the
ASTF server owns the tester ports. Run with ``-s`` to see the figures.

These checks have not run against a real TRex (none can be installed where
they were written): they follow TRex's client documentation (lbr-trex-client
3.4.0). A run prints the server's build, which the notes of a passing run
must name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trexlab.plan.repetition import SUMMARY
from trexlab.results.store import PROVENANCE, RESULT, TRIALS
from trexlab.tcp import engines
from trexlab.tcp import metrics as tcp_metrics
from trexlab.testbed.inventory import load_lab

from labtools import REPO, playbook

SERVER = os.environ.get("TREXLAB_TREX_SERVER")
INVENTORY = os.environ.get("TREXLAB_TREX_INVENTORY", "inventory/generated/local/hosts.yml")

pytestmark = [
    pytest.mark.trex_live,
    pytest.mark.skipif(not SERVER, reason="needs a running TRex server in ASTF mode: set TREXLAB_TREX_SERVER (see "
                                          "module doc); CI cannot build or download TRex"),
]

#: Full-size frames/s per direction the policed DUT forwards (TCP segments and their ACKs alike): ~62 Mbit/s of
#: 1518-byte frames, well within TRex's software mode on a 2-vCPU machine.
DUT_LIMIT = 5_000
LIMIT_BURST = 1_000
MTU = 1500
TEST_DURATION = 10.0
OMIT = 2.0
#: A loss-based TCP over a policer without a queue saws below the rate: the least share of the maximum accepted.
LEAST_SHARE = 0.3


@pytest.fixture(scope="module")
def lab():
    lab = load_lab(REPO / INVENTORY)
    assert lab.topology == "single" and len(lab.duts) == 1, f"{INVENTORY}: needs a single-DUT lab"
    return lab


@pytest.fixture(scope="module")
def policed_dut(lab):
    def apply(state):
        settings = {"dut_reference_rate_fps": DUT_LIMIT, "dut_reference_burst_frames": LIMIT_BURST,
                    "dut_reference_state": state}
        result = playbook(lab, "playbooks/dut-reference.yml", "-e", json.dumps(settings))
        assert result.returncode == 0, result.stdout[-3000:]

    apply("present")
    yield lab.duts[0]
    apply("absent")


def test_trex_astf_measures_the_policed_path(lab, policed_dut, tmp_path):
    frame = MTU + tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES
    bb = tcp_metrics.bottleneck_from_frame_rate(DUT_LIMIT, frame)
    results = tmp_path / "tcp"
    argv = [sys.executable, "-m", "trexlab.cli", "tcp", "--engine", "trex", "--generator", "trex", "--inventory",
            str(REPO / INVENTORY), "--results", str(results), "--json", "--mtu", str(MTU),
            "--bottleneck-bandwidth", f"{bb:.0f}", "--tests", "download,upload,bidirectional",
            "--test-duration", str(TEST_DURATION), "--omit", str(OMIT), "--ceilings", str(tmp_path / "c.json")]
    if SERVER != "tester":
        argv += ["--trex-server", SERVER]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)["result"]
    maximum = tcp_metrics.max_achievable_tcp_throughput(bb, MTU)
    # The bucket's burst lets a little more through at the start of the measured period.
    ceiling = maximum * (1 + LIMIT_BURST / (DUT_LIMIT * TEST_DURATION))
    print(f"\nbaseline RTT {result['baseline_rtt_s'] * 1e3:.3f} ms, max achievable {maximum / 1e6:.2f} Mbit/s; "
          f"notes: {result['notes']}")
    assert result["engine"] == "trex" and result["baseline_rtt_s"] > 0
    # TRex's flow dump gives the smoothed RTT in whole ms (trexlab.tcp.engines.ASTF_RTT_UNIT_S): a figure between
    # steps of it is a misread unit (as 1/32 ms steps were).
    steps = result["baseline_rtt_s"] / engines.ASTF_RTT_UNIT_S
    assert steps == pytest.approx(round(steps)) and round(steps) >= 1, result["baseline_rtt_s"]
    for test in result["tests"]:
        for direction, d in test["directions"].items():
            print(f"{test['test']['name']} {direction}: {d['actual_tcp_throughput_bps'] / 1e6:.2f} Mbit/s, "
                  f"ratio {d['transfer_time_ratio']}, efficiency {d['tcp_efficiency_percent']} %, "
                  f"buffer delay {d['buffer_delay_percent']} %, retransmitted {d['retransmitted_bytes']} B")
            share = d["max_achievable_tcp_throughput_bps"] / maximum
            assert LEAST_SHARE * maximum * share <= d["actual_tcp_throughput_bps"] <= ceiling * share, (test, d)
            assert 0 < d["tcp_efficiency_percent"] <= 100 and d["buffer_delay_percent"] is not None
    # The files the iperf3 engine writes (tests/trex/test_trex_tcp_engine.py checks their shape against it).
    written = {str(p.relative_to(results)) for p in Path(results).rglob("*") if p.is_file()}
    assert {f"rep-001/{PROVENANCE}", f"rep-001/{RESULT}", f"rep-001/{TRIALS}", SUMMARY} <= written, written
