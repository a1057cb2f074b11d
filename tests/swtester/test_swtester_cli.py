"""swtester's command line: bad arguments, a missing interface or no permission give one line and exit 2.

No lab needed: every check here happens before a frame is sent. Run with the release build and with
AddressSanitizer/UndefinedBehaviorSanitizer.
"""

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from trexlab.trial import MAX_FRAME_SIZE, MIN_FRAME_SIZE_BY_VERSION, MIN_SIIT_IPV6_FRAME_SIZE

from labtools import REPO, run

PORTS = ["--port0", "lo", "--port1", "lo", "--mac0", "02:00:00:00:00:01", "--mac1", "02:00:00:00:00:02",
         "--peer0", "02:00:00:00:00:02", "--peer1", "02:00:00:00:00:01", "--rate", "1000", "--duration", "0.01"]


def swtester(binary: str, *argv: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, binary, *argv], capture_output=True, text=True, timeout=30)


def replace(argv: list[str], flag: str, value: str) -> list[str]:
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


@pytest.mark.parametrize(("argv", "message"), [
    (replace(PORTS, "--rate", "fast"), "rate=fast: allowed 0.001..1e+09"),
    (replace(PORTS, "--mac0", "02:00"), "mac0=02:00: allowed a MAC address"),
    ([*PORTS, "--directions", "up"], "directions: allowed bi, forward, reverse"),
    ([*PORTS, "--send-method", "xdp"], "send-method: allowed auto, tx_ring, sendmmsg"),
    ([*PORTS, "--receive-method", "xdp"], "receive-method: allowed auto, bpf, ring, tcx"),
    ([*PORTS, "--receive-method", "tcx", "--timeout", "1"],
     "receive-method tcx: allowed only without --latency and --timeout"),
    ([*PORTS, "--version0", "6", "--version1", "6", "--size0", str(MIN_FRAME_SIZE_BY_VERSION[6] - 1)],
     f"size0={MIN_FRAME_SIZE_BY_VERSION[6] - 1}: IPv6 test frames need at least {MIN_FRAME_SIZE_BY_VERSION[6]} bytes"),
    ([*PORTS, "--version0", "6", "--version1", "4", "--size0", str(MIN_SIIT_IPV6_FRAME_SIZE - 1)],
     f"size0={MIN_SIIT_IPV6_FRAME_SIZE - 1}: IPv6 test frames of SIIT need at least {MIN_SIIT_IPV6_FRAME_SIZE} bytes"),
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


#: Ports that exist nowhere: every argument below is refused before swtester looks its ports up, and swtester before
#: these refusals named the missing port instead (it sends nothing either way).
NO_PORTS = replace(replace(PORTS, "--port0", "tl-noport0"), "--port1", "tl-noport1")


@pytest.mark.parametrize(("argv", "message"), [
    # strtod reads "nan", which every range check let through: a NaN tail never ended the receiver, a NaN timeout
    # counted nothing late, a NaN tag delay, rate or duration made the frame counts undefined.
    (replace(NO_PORTS, "--rate", "nan"), "rate=nan: allowed 0.001..1e+09"),
    (replace(NO_PORTS, "--duration", "nan"), "duration=nan: allowed 0.001..3600"),
    ([*NO_PORTS, "--tail", "nan"], "tail=nan: allowed 0..60"),
    ([*NO_PORTS, "--timeout", "nan"], "timeout=nan: allowed 0..3600"),
    ([*NO_PORTS, "--tag-delay", "nan"], "tag-delay=nan: allowed 0..3600"),
    # A fraction was cut off without a word: 100-byte frames for --size0 100.5, two threads for --threads 2.5.
    ([*NO_PORTS, "--size0", "100.5"], "size0=100.5: allowed 64..9018 (an integer)"),
    ([*NO_PORTS, "--version1", "4.5"], "version1=4.5: allowed 4..6 (an integer)"),
    ([*NO_PORTS, "--threads", "2.5"], "threads=2.5: allowed 1..8 (an integer)"),
    ([*NO_PORTS, "--networks", "0x10"], "networks=0x10: allowed 1..256 (an integer)"),
    ([*NO_PORTS, "--latency", "tagged", "--tagged", "1.5"], "tagged=1.5: allowed 1..10000000 (an integer)"),
    ([*NO_PORTS, "--trial-id", "7.5"], "trial-id=7.5: allowed 0..65535 (an integer)"),
    ([*NO_PORTS, "--cpus", "0,0.5"], "cpus=0.5: allowed 0..1023 (an integer)"),
    ([*NO_PORTS, "--cpus", ",".join(["0"] * 1025)], "cpus: allowed at most 1024 CPUs"),
    # An octet above ff kept its low byte, and text after the sixth octet was ignored.
    (replace(NO_PORTS, "--mac0", "02:00:00:00:00:100"), "mac0=02:00:00:00:00:100: allowed a MAC address"),
    (replace(NO_PORTS, "--peer1", "02:00:00:00:00:01x"), "peer1=02:00:00:00:00:01x: allowed a MAC address"),
    (replace(NO_PORTS, "--mac1", "-2:00:00:00:00:02"), "mac1=-2:00:00:00:00:02: allowed a MAC address"),
    # Sequence numbers are 32 bits: frame 2^32 + k came back as frame k, counted a duplicate and the frame lost.
    (replace(replace(NO_PORTS, "--rate", "1e9"), "--duration", "4.3"),
     "rate=1000000000, duration=4.3: 4300000000 frames per direction, allowed 1..4294967296"),
    (replace(replace(NO_PORTS, "--rate", "1"), "--duration", "0.4"),
     "rate=1, duration=0.4: 0 frames per direction, allowed 1..4294967296"),
    # An argument that is no option was ignored: the trial ran without the DF bit asked as "--df 1".
    ([*NO_PORTS, "--df", "1"], "1: not an option (swtester takes options only)"),
])
def test_hostile_arguments_are_refused_not_clamped(binary, argv, message):
    result = swtester(binary, *argv)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


def cpus_allowed(pid: int) -> list[str]:
    """The CPUs each thread of process pid may run on (its status's Cpus_allowed_list), [] once it has ended."""
    try:
        return [line.split("\t")[1] for t in os.listdir(f"/proc/{pid}/task")
                for line in Path(f"/proc/{pid}/task/{t}/status").read_text().splitlines()
                if line.startswith("Cpus_allowed_list:")]
    except (OSError, IndexError):
        return []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for AF_PACKET sockets and network namespaces")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_every_cpu_of_a_long_list_is_taken(binary):
    """A ninth CPU and later were dropped without a word: the tenth place of --cpus (reverse sender 8 with
    --threads 8) went to the list's second CPU. A 0.5 s trial of 500 frames on the loopback of a namespace of its
    own: while it sends, exactly one thread (that sender) is pinned to the tenth CPU."""
    first, tenth = sorted(os.sched_getaffinity(0))[:2]
    cpus = ",".join([str(first)] * 9 + [str(tenth)])
    process = subprocess.Popen(["unshare", "-n", "sh", "-c", 'ip link set dev lo up && exec "$@"', "sh", binary,
                                *replace(replace(PORTS, "--rate", "1000"), "--duration", "0.5"), "--threads", "8",
                                "--cpus", cpus, "--tail", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    places: list[str] = []
    try:
        deadline = time.monotonic() + 10
        while process.poll() is None and time.monotonic() < deadline:
            places = cpus_allowed(process.pid)  # unshare and sh exec swtester in the same process
            if len(places) == 19 and sum("," not in p and "-" not in p for p in places) == 18:
                break  # main, and 2 receivers and 16 senders each pinned to its CPU
            time.sleep(0.005)
        process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0 and len(places) == 19, places
    assert places.count(str(tenth)) == 1, places


def test_a_rate_below_one_frame_per_second_is_taken_where_the_trial_holds_frames(binary):
    """trexlab's searches may offer less than 1 fps (a min_rate > 0): swtester refused any rate below 1 fps, in the
    middle of a search. The port lookup that follows the argument checks is what fails here."""
    result = swtester(binary, *replace(replace(NO_PORTS, "--rate", "0.5"), "--duration", "4"))
    assert result.returncode == 2 and "interface tl-noport0: no such interface" in result.stderr, result.stderr


def test_a_cpu_the_process_may_not_run_on_is_refused(binary):
    """Pinning a thread to it failed unseen, and the thread ran anywhere while provenance named the CPU."""
    result = swtester(binary, *NO_PORTS, "--cpus", "0,1", prefix=("taskset", "-c", "0"))
    assert result.returncode == 2
    assert result.stderr.strip() == "swtester: cpus=1: not a CPU this process may run on (1 allowed)"


def test_a_report_that_cannot_be_written_exits_2(binary):
    """The report is the trial's result: one lost to a full disk or a closed pipe exited 0 all the same."""
    with open("/dev/full", "w") as full:
        result = subprocess.run([binary, "--help"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip() == "swtester: writing the report to stdout failed: No space left on device"
    if os.geteuid() != 0:
        pytest.skip("--probe needs root for its AF_PACKET sockets")
    # --probe's answer, on the loopback of a network namespace of its own (nothing is sent).
    with open("/dev/full", "w") as full:
        result = subprocess.run(["unshare", "-n", binary, *PORTS, "--probe"], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=30)
    assert result.returncode == 2 and "writing the report to stdout failed" in result.stderr, result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for AF_PACKET sockets and network namespaces")
def test_a_receiving_port_whose_mtu_is_below_its_frames_is_refused(binary):
    """A trial in one direction checked the sending port's MTU only: the receiving port dropped every frame above
    its own, and the trial counted them all as the DUT's loss. Two veth pairs in a namespace of its own (nothing is
    sent: the refusal comes first)."""
    setup = ("ip link add name x0 type veth peer name x1 && ip link add name y0 type veth peer name y1 && "
             "ip link set dev x0 mtu 9000 && ip link set dev x1 mtu 9000 && "
             "for port in x0 x1 y0 y1; do ip link set dev $port up; done && exec \"$@\"")
    ports = replace(replace(PORTS, "--port0", "x0"), "--port1", "y0")
    argv = [*ports, "--directions", "forward", "--tail", "0"]
    # The forward frames are port 0's (size0), whatever size port 1 sends: it checked size1, so port 0's 9018 B
    # frames passed beside a size1 of 1518 and y0 dropped every one.
    for size1 in ("9018", "1518"):
        result = swtester(binary, *argv, "--size0", "9018", "--size1", size1,
                          prefix=("unshare", "-n", "sh", "-c", setup, "sh"))
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.strip() == ("swtester: size0=9018: port y0's MTU is 1500, it receives frames up to 1518 "
                                         "bytes")
    # Translated by a SIIT DUT, port 0's IPv6 frames arrive 20 B shorter as IPv4: the message says so.
    result = swtester(binary, *argv, "--size0", "1558", "--size1", "1518", "--version0", "6",
                      prefix=("unshare", "-n", "sh", "-c", setup, "sh"))
    assert result.stderr.strip() == ("swtester: size0=1558 (1538 bytes translated): port y0's MTU is 1500, it receives "
                                     "frames up to 1518 bytes")
    # Frames y0 takes pass (--probe: the same checks, nothing sent).
    result = swtester(binary, *argv, "--size0", "1518", "--size1", "9018", "--probe",
                      prefix=("unshare", "-n", "sh", "-c", setup, "sh"))
    assert result.returncode == 0, result.stderr


def preloaded(tmp_path, source: str) -> str:
    """swtester's release build with a library of `source` preloaded (the kernel or libc failing on demand):
    AddressSanitizer's build replaces those functions itself, and refuses a library loaded before it."""
    shim = tmp_path / "shim.c"
    shim.write_text("#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <errno.h>\n" + source)
    run("cc", "-shared", "-fPIC", "-o", str(tmp_path / "shim.so"), str(shim), "-ldl")
    run("make", "-s", "-C", "swtester", "swtester")
    return f"LD_PRELOAD={tmp_path / 'shim.so'}"


def refused_setsockopt(level: str, name: str, error: str) -> str:
    """A preloaded library's source (preloaded) in which the kernel refuses socket option `name` of `level` with
    errno `error` (their C names), and takes every other."""
    return f"""
#include <linux/if_packet.h>
#include <sys/socket.h>
int setsockopt(int fd, int level, int name, const void *value, socklen_t len) {{
    if (level == {level} && name == {name}) {{ errno = {error}; return -1; }}
    int (*real)(int, int, int, const void *, socklen_t) =
        (int (*)(int, int, int, const void *, socklen_t))dlsym(RTLD_NEXT, "setsockopt");
    return real(fd, level, name, value, len);
}}
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for AF_PACKET sockets")
def test_a_thread_that_cannot_start_is_one_line_not_a_hang(tmp_path):
    """pthread_create's failure was not looked at: the direction's receiver waited for a sender that never ran,
    and swtester never ended."""
    preload = preloaded(tmp_path, """
#include <pthread.h>
/* The first thread (the receiver) starts, the next (a sender) cannot. */
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
    static int calls;
    if (++calls >= 2) return EAGAIN;
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT, "pthread_create");
    return real(t, a, f, arg);
}
""")
    argv = ["unshare", "-n", "env", preload, str(REPO / "swtester" / "swtester"), *PORTS, "--directions", "forward",
            "--tail", "0"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "swtester: could not start a thread: Resource temporarily unavailable"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for AF_PACKET sockets and network namespaces")
@pytest.mark.parametrize(("method", "call"), [
    ("sendmmsg", "int sendmmsg(int fd, struct mmsghdr *m, unsigned n, int f)"),
    # the ring's sendto(fd, NULL, 0, flags, the port)
    ("tx_ring", "ssize_t sendto(int fd, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)"),
])
def test_a_port_that_takes_no_frame_ends_the_trial_with_the_frames_unsent(tmp_path, method, call):
    """A port whose queue never takes a frame (ENOBUFS on every send: its link down, say) kept the sender retrying
    for ever, in the realtime class, and swtester never ended. It now stops at the trial's end (110 % of its
    duration), as a sender too slow does, and reports what it sent."""
    preload = preloaded(tmp_path, f"#include <sys/socket.h>\n{call} {{ errno = ENOBUFS; return -1; }}\n")
    argv = ["unshare", "-n", "sh", "-c", 'ip link set dev lo up && exec "$@"', "sh", "env", preload,
            str(REPO / "swtester" / "swtester"), *replace(PORTS, "--duration", "0.2"), "--directions", "forward",
            "--send-method", method, "--tail", "0"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert result.returncode == 0, result.stderr
    forward = json.loads(result.stdout)["directions"]["forward"]
    assert forward["intended"] == 200 and forward["sent"] == forward["received"] == 0 and not forward["valid"]
    assert forward["send_duration"] < 0.2 * 1.1 + 0.1


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for AF_PACKET sockets and network namespaces")
@pytest.mark.parametrize("mode", ["--probe", "trial"])
def test_a_fallbacks_reason_is_a_json_string_whatever_the_port_is_named(tmp_path, mode):
    """A transmit ring refused on a port named p"0\\ (a quote and a backslash, which Linux allows): its name went
    into the report's fallback reason as it was, and the report was no JSON. The trial sends 10 frames on a veth
    pair in a namespace of its own."""
    preload = preloaded(tmp_path, refused_setsockopt("SOL_PACKET", "PACKET_TX_RING", "ENOMEM"))
    port = 'p"0\\'
    ports = replace(replace(PORTS, "--port0", port), "--port1", "p1")
    setup = (f"ip link add name {shlex.quote(port)} type veth peer name p1 && ip link set dev {shlex.quote(port)} up "
             '&& ip link set dev p1 up && exec "$@"')
    argv = ["unshare", "-n", "sh", "-c", setup, "sh", "env", preload, str(REPO / "swtester" / "swtester"), *ports,
            "--tail", "0", *(["--probe"] if mode == "--probe" else [])]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert result.returncode == 0, result.stderr
    forward = json.loads(result.stdout)["directions"]["forward"]
    assert forward["send_method"] == "sendmmsg"
    assert forward["send_method_fallback"] == f"PACKET_TX_RING refused on {port}: Cannot allocate memory"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to an unprivileged user")
def test_no_permission_for_packet_sockets_is_one_line(binary):
    result = swtester(binary, *PORTS, prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    assert result.returncode == 2
    assert result.stderr.strip() == "swtester: no permission for AF_PACKET sockets: run as root (CAP_NET_RAW)"


def test_help_goes_to_stdout(binary):
    result = swtester(binary, "--help")
    assert result.returncode == 0 and "--port0" in result.stdout
    # Each line of options on a line of its own (--tail's line ran on into --cpus's).
    lines = result.stdout.splitlines()
    assert all(line.startswith(("usage: ", "       [")) and "]       [" not in line for line in lines)
