"""swtester's command line: bad arguments, a missing interface or no permission give one line and exit 2.

No lab needed: every check here happens before a frame is sent. Run with the release build and with
AddressSanitizer/UndefinedBehaviorSanitizer.
"""

import os
import subprocess

import pytest

from trexlab.trial import MAX_FRAME_SIZE, MIN_FRAME_SIZE_BY_VERSION

from labtools import REPO, run

PORTS = ["--port0", "lo", "--port1", "lo", "--mac0", "02:00:00:00:00:01", "--mac1", "02:00:00:00:00:02",
         "--peer0", "02:00:00:00:00:02", "--peer1", "02:00:00:00:00:01", "--rate", "1000", "--duration", "0.01"]


@pytest.fixture(scope="module", params=["swtester", "swtester-asan"])
def binary(request):
    run("make", "-s", "-C", "swtester", request.param)
    return str(REPO / "swtester" / request.param)


def swtester(binary: str, *argv: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, binary, *argv], capture_output=True, text=True, timeout=30)


def replace(argv: list[str], flag: str, value: str) -> list[str]:
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


@pytest.mark.parametrize(("argv", "message"), [
    (replace(PORTS, "--rate", "fast"), "rate=fast: allowed 1..1e+09"),
    (replace(PORTS, "--mac0", "02:00"), "mac0=02:00: allowed a MAC address"),
    ([*PORTS, "--directions", "up"], "directions: allowed bi, forward, reverse"),
    ([*PORTS, "--send-method", "xdp"], "send-method: allowed auto, tx_ring, sendmmsg"),
    ([*PORTS, "--receive-method", "xdp"], "receive-method: allowed auto, bpf, ring"),
    ([*PORTS, "--version0", "6", "--size0", str(MIN_FRAME_SIZE_BY_VERSION[6] - 1)],
     f"size0={MIN_FRAME_SIZE_BY_VERSION[6] - 1}: IPv6 test frames need at least {MIN_FRAME_SIZE_BY_VERSION[6]} bytes"),
    ([*PORTS, "--version1", "4", "--size1", str(MIN_FRAME_SIZE_BY_VERSION[4] - 1)],
     f"size1={MIN_FRAME_SIZE_BY_VERSION[4] - 1}: allowed {MIN_FRAME_SIZE_BY_VERSION[4]}..{MAX_FRAME_SIZE}"),
    ([*PORTS, "--latency", "tagged"], "tagged: >= 1 with --latency tagged"),
    ([*PORTS, "--tag-delay", "0.01"], "tag-delay=0.01: allowed 0 <= tag-delay < duration (0.01 s)"),
    ([*PORTS, "--latency", "tagged", "--tagged", "6", "--tag-delay", "0.005"],
     "tagged=6: allowed 1..5, the frames sent after tag-delay"),
    (PORTS[4:], "port0 and port1: both test ports must be named"),
    ([*PORTS, "--bogus"], "unrecognized option '--bogus'"),
    ([*PORTS, "--rate"], "option '--rate' requires an argument"),
    (replace(PORTS, "--port1", "nosuchport"), "interface nosuchport: no such interface"),
])
def test_bad_input_is_one_line_naming_it(binary, argv, message):
    result = swtester(binary, *argv)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to an unprivileged user")
def test_no_permission_for_packet_sockets_is_one_line(binary):
    result = swtester(binary, *PORTS, prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    assert result.returncode == 2
    assert result.stderr.strip() == "swtester: no permission for AF_PACKET sockets: run as root (CAP_NET_RAW)"


def test_help_goes_to_stdout(binary):
    result = swtester(binary, "--help")
    assert result.returncode == 0 and "--port0" in result.stdout
