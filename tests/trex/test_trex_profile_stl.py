"""The STL profile compiled by TRex's own client API, without a server (PyPI lbr-trex-client, TRex v3.x's client).

Each stream becomes the JSON the client would send to the server (STLStream.to_json): frame bytes, rate mode,
inter-stream gap, pg_id and the field-engine program. The program is then run here on many frames, the way the
server's field engine runs it (a variable per frame, written into the frame at its offset through its mask), to
check what reaches the wire: RFC 4814 section 4.5 ports (destination 1..49151, source 1024..65535) spread over
their whole ranges (chi-square over the range, entropy of the full 16 bits, not the 15 of a 16-bit TRex random
variable) and every destination network, on IPv4, IPv6 and SIIT frame sizes, with 1 and 256 networks.
The profile is also loaded the way trex-console loads it (`-t --help`, and both forms of `-t`).
"""

import base64
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from trexlab.generators import create_generator
from trexlab.generators.trex import PROFILE as PROFILE_PATH
from trexlab.generators.trex import profile_module
from trexlab.trial import TrialSpec

import fake_trex

PROFILE = profile_module()
FRAMES = 1 << 21  # frames the field engine is run for: about 32 per destination port
#: What a 16-bit TRex random variable yields (measured, see the profile): 15 random bits.
TREX_16_BIT_RANDOM_BITS = 15


#: Runs in its own interpreter: TRex's client bundles its own `zmq` (pyzmq-ctypes), which cannot share a process
#: with the pyzmq that other tests load. Prints the JSON of the streams of each requested (direction, ip_version,
#: frame_size, networks, options) as STLStream.to_json() makes it for the server.
COMPILE = """
import importlib.util, json, sys, warnings
warnings.simplefilter("ignore")
import lbr_trex_client  # puts its bundled `trex` package on sys.path
from trex.stl.api import STLStream
spec = importlib.util.spec_from_file_location("profile", sys.argv[1])
profile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(profile)
out = []
for direction, ip_version, frame_size, networks, options in json.loads(sys.stdin.read()):
    streams = profile.register().get_streams(direction=direction, port_id=direction, frame_size=frame_size,
                                             ip_version=ip_version, port_mode="rfc4814", networks=networks,
                                             **options)
    assert all(isinstance(s, STLStream) for s in streams)
    out.append([s.to_json() for s in streams])
print(json.dumps(out))
"""


def compiled(*requests) -> list[list[dict]]:
    """Each request's streams as the client compiles them: (direction, ip_version, frame_size, networks,
    options)."""
    done = subprocess.run([sys.executable, "-c", COMPILE, str(PROFILE_PATH)], input=json.dumps(requests),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


class Frames:
    """Many frames of one stream, stored as the packet plus the bytes the field engine wrote (per offset)."""

    def __init__(self, packet: bytes, count: int):
        self.packet, self.count, self.written = packet, count, {}

    def write(self, offset: int, value: np.ndarray, width: int) -> None:
        assert offset + width <= len(self.packet), "a write beyond the frame"
        for k in range(width):
            self.written[offset + k] = ((value >> (8 * (width - 1 - k))) & 0xFF).astype(np.uint8)

    def byte(self, offset: int) -> np.ndarray:
        return self.written.get(offset, np.full(self.count, self.packet[offset], dtype=np.uint8)).astype(np.int64)

    def field16(self, offset: int) -> np.ndarray:
        return self.byte(offset) << 8 | self.byte(offset + 1)


def run_field_engine(stream: dict, count: int, seed: int = 1) -> Frames:
    """The stream's frames after its field-engine program (the server's semantics: random variables uniform
    over [min, max], inc variables counting from init and wrapping, writes big-endian at their offset, masked
    writes of the variable's low bits; checksums are left to the NIC/TRex)."""
    rng = np.random.default_rng(seed)
    frames = Frames(base64.b64decode(stream["packet"]["binary"]), count)
    values, sizes = {}, {}
    for ins in stream["vm"]["instructions"]:
        if ins["type"] == "flow_var":
            low, high, size = ins["min_value"], ins["max_value"], ins["size"]
            span = high - low + 1
            if ins["op"] == "random" and size < 4:  # TRex's 16-bit random: only 15 bits of randomness
                values[ins["name"]] = low + rng.integers(0, 1 << TREX_16_BIT_RANDOM_BITS, count) % span
            elif ins["op"] == "random":
                values[ins["name"]] = rng.integers(low, high + 1, count)
            elif ins["op"] == "inc":
                values[ins["name"]] = low + (ins["init_value"] - low + np.arange(count) * ins["step"]) % span
            else:
                raise AssertionError(f"unexpected op {ins['op']}")
            sizes[ins["name"]] = size
        elif ins["type"] == "write_flow_var":
            frames.write(ins["pkt_offset"], values[ins["name"]] + ins["add_value"], sizes[ins["name"]])
        elif ins["type"] == "write_mask_flow_var":
            value = ((values[ins["name"]] >> ins["shift"]) & ins["mask"]) + ins["add_value"]
            frames.write(ins["pkt_offset"], value, ins["pkt_cast_size"])
        elif ins["type"] != "fix_checksum_hw":
            raise AssertionError(f"unexpected instruction {ins['type']}")
    return frames


def chi_square_passes(counts: np.ndarray) -> bool:
    """Uniform at the 0.1 % level (Wilson-Hilferty approximation of the chi-square quantile)."""
    expected = counts.sum() / len(counts)
    statistic = float(((counts - expected) ** 2 / expected).sum())
    k = len(counts) - 1
    quantile = k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ** 3
    return statistic < quantile


def entropy_bits(values: np.ndarray) -> float:
    counts = np.bincount(values)
    p = counts[counts > 0] / len(values)
    return float(-(p * np.log2(p)).sum())


CASES = [  # (ip_version, frame_size) per tester port, destination networks
    ((4, 4), (64, 64), 1),
    ((4, 4), (1518, 1518), 256),
    ((6, 6), (84, 84), 1),
    ((6, 6), (1518, 1518), 256),
    ((6, 4), (84, 64), 256),  # SIIT: IPv6 on port 0, IPv4 on port 1
]


LATENCY_OPTIONS = {"rate": 900.0, "latency_rate": 100.0, "tag_delay": 2.0}


@pytest.fixture(scope="module")
def streams() -> dict:
    """Every case's streams per direction, compiled in one client process."""
    requests = [(direction, ip_version[direction], frame_size[direction], networks, LATENCY_OPTIONS)
                for ip_version, frame_size, networks in CASES for direction in (0, 1)]
    return dict(zip([tuple(r[:4]) for r in requests], compiled(*requests), strict=True))


@pytest.mark.parametrize(("ip_version", "frame_size", "networks"), CASES)
def test_streams_compile_and_their_field_engine_spreads_rfc4814_ports(streams, ip_version, frame_size, networks):
    for direction in (0, 1):
        version, size = ip_version[direction], frame_size[direction]
        test, warmup, latency = streams[(direction, version, size, networks)]
        assert [s["flow_stats"]["rule_type"] for s in (test, warmup, latency)] == ["stats", "stats", "latency"]
        assert [s["flow_stats"]["stream_id"] for s in (test, warmup, latency)] == [2 * direction + 1,
                                                                                  2 * direction + 101,
                                                                                  2 * direction + 2]
        assert (latency["isg"], latency["mode"]["type"]) == (2e6, "continuous")
        assert (warmup["mode"]["type"], warmup["mode"]["total_pkts"]) == ("single_burst", 200)
        for stream in (test, warmup, latency):
            assert len(base64.b64decode(stream["packet"]["binary"])) == size - 4  # the FCS is the NIC's
            assert stream["vm"] == test["vm"]  # the latency stream carries the test stream's flows
            # The server writes the port's own source MAC and its configured destination (flags 0): the
            # template's explicit zeros would otherwise be sent as they are, to a MAC no DUT has.
            assert stream["flags"] == 0 and base64.b64decode(stream["packet"]["binary"])[:12] == bytes(12)
        variables = {i["name"]: i for i in test["vm"]["instructions"] if i["type"] == "flow_var"}
        assert variables["source_port"]["size"] == variables["destination_port"]["size"] == 4
        assert ("network" in variables) == (networks > 1)

        at = PROFILE.field_offsets(version)
        frames = run_field_engine(latency, FRAMES, seed=direction + 1)
        source, destination = frames.field16(at["source_port"]), frames.field16(at["destination_port"])
        assert source.min() >= 1024 and source.max() <= 65535
        assert destination.min() >= 1 and destination.max() <= 49151
        for values, (low, high) in ((source, (1024, 65535)), (destination, (1, 49151))):
            # The whole range, not a 15-bit part of it: both ends are reached and 64 equal bins are uniform.
            assert values.min() - low < 64 and high - values.max() < 64
            counts = np.bincount((values - low) * 64 // (high - low + 1), minlength=64)
            assert chi_square_passes(counts), counts
            assert entropy_bits(values) > math.log2(high - low + 1) - 0.05
        assert entropy_bits(source) > 15.9  # 16 bits' worth of source ports, not 15
        networks_seen = np.unique(frames.byte(at["network_byte"]))
        assert len(networks_seen) == networks and networks_seen.max() == networks - 1


def test_a_16_bit_random_variable_would_fail_these_checks():
    # The checks above can fail: the field engine with TRex's 16-bit random (15 bits) misses most of the range.
    [[stream]] = compiled((0, 4, 64, 1, {"rate": 1000.0}))
    for ins in stream["vm"]["instructions"]:
        if ins["type"] == "flow_var":
            ins["size"] = 2
        if ins["type"] == "write_mask_flow_var":
            ins["type"] = "write_flow_var"
    source = run_field_engine(stream, FRAMES).field16(PROFILE.field_offsets(4)["source_port"])
    assert source.max() == 1024 + (1 << TREX_16_BIT_RANDOM_BITS) - 1
    assert entropy_bits(source) < 15.1
    counts = np.bincount((source - 1024) * 64 // 64512, minlength=64)
    assert not chi_square_passes(counts)


#: Loads the profile the way trex-console's `start -f <profile> -p <port> -t ...` does (STLProfile.load, which
#: answers None when the profile's argparse exits for --help), in its own interpreter as COMPILE does. Prints
#: the help text and, per request, the JSON of the streams.
CONSOLE = """
import contextlib, io, json, sys, warnings
warnings.simplefilter("ignore")
import lbr_trex_client
from trex.stl.api import STLProfile
help_text = io.StringIO()
with contextlib.redirect_stdout(help_text):
    assert STLProfile.load(sys.argv[1], direction=0, port_id=0, tunables=["--help"]) is None
out = {"help": help_text.getvalue(), "streams": []}
for port_id, options in json.loads(sys.stdin.read()):
    profile = STLProfile.load(sys.argv[1], direction=port_id % 2, port_id=port_id, **options)
    out["streams"].append([s.to_json() for s in profile.get_streams()])
print(json.dumps(out))
"""


def trexlab_keyword_arguments() -> set[str]:
    """The keyword arguments trexlab's generator passes to get_streams, recorded from a trial on the fake API."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        api = fake_trex.install(monkeypatch)
        generator = create_generator("trex", server="192.0.2.1", api=api, client=fake_trex.FakeClient(), warmup=False)
        generator.clock, generator.sleep = generator.client.clock, generator.client.clock.sleep
        seen, get_streams = set(), generator.profile.get_streams
        generator.profile.get_streams = lambda **kwargs: seen.update(kwargs) or get_streams(**kwargs)
        generator.run_trial(TrialSpec(offered_load=100, duration=1))
    return seen


def test_trex_console_lists_every_tunable_and_loads_the_profile_with_them():
    requests = [
        # -t --ip_version 6 --frame_size 128 ... (the console's argparse form) on port 1: the reverse direction.
        (1, {"tunables": ["--ip_version", "6", "--frame_size", "128", "--port_mode", "rfc4814", "--networks", "16",
                          "--rate", "900", "--latency_rate", "100", "--tag_delay", "2"]}),
        # -t ip_version=4,dont_fragment=true (the older form): the console passes the decoded values as keyword
        # arguments and the same as a list of text tunables.
        (0, {"ip_version": 4, "dont_fragment": True, "tunables": ["--ip_version", "4", "--dont_fragment", "True"]}),
    ]
    done = subprocess.run([sys.executable, "-c", CONSOLE, str(PROFILE_PATH)], input=json.dumps(requests),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    # Everything trexlab sets is a tunable a console user sees (and can set) too.
    context = {"direction", "port_id"}  # TRex's, not the profile's
    listed = set(re.findall(r"--(\w+)", out["help"])) - {"help"}
    assert trexlab_keyword_arguments() - context <= listed, out["help"]
    for name in listed:  # each with its help text
        assert re.search(rf"--{name}\b[^\n]*\n?\s+\w", out["help"]), name

    (test, warmup, latency), (fixed,) = out["streams"]
    assert [s["flow_stats"]["stream_id"] for s in (test, warmup, latency)] == [3, 103, 4]  # port 1's pg_ids
    frame = base64.b64decode(test["packet"]["binary"])
    assert len(frame) == 128 - 4 and frame[12:14] == b"\x86\xdd"
    assert frame[38:54].hex() == "20010002000080000000000000000002"  # reverse: to 2001:2:0:80xx::2
    variables = {i["name"]: i for i in test["vm"]["instructions"] if i["type"] == "flow_var"}
    assert variables["network"]["max_value"] == 15 and variables["source_port"]["size"] == 4
    assert (warmup["mode"]["total_pkts"], latency["isg"]) == (200, 2e6)
    frame = base64.b64decode(fixed["packet"]["binary"])
    assert frame[12:14] == b"\x08\x00" and frame[20] & 0x40 and fixed["vm"]["instructions"] == []


def test_bad_tunables_name_the_tunable_and_the_command_line_wins(capsys):
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake_trex.install(monkeypatch)
        profile = PROFILE.register()
        with pytest.raises(ValueError, match=r"^networks=257: allowed 1\.\.256$"):
            profile.get_streams(networks=257)
        with pytest.raises(ValueError, match=r"^port_mode='rfc4815': allowed fixed, rfc4814$"):
            profile.get_streams(port_mode="rfc4815")
        # The command line's tunables override the keyword arguments.
        [stream] = profile.get_streams(tunables=["--networks", "4"], networks=257)
        assert stream.packet.vm.instructions[0][1]["max_value"] == 3
        with pytest.raises(SystemExit):  # the console prints argparse's message and refuses the profile
            profile.get_streams(tunables=["--ip_version", "5"])
        assert "--ip_version: invalid choice: 5" in capsys.readouterr().err


def test_with_frames_every_stream_is_a_single_burst_of_its_share():
    # trexlab's trials give the port's frames: the latency stream its count, the warm-up stream its rate x tag_delay,
    # the test stream the rest, each a burst that ends by itself (compiled by the real client: its JSON for TRex).
    options = {"rate": 750.0, "latency_rate": 250.0, "tag_delay": 1.0, "frames": 3000, "latency_frames": 500}
    [streams] = compiled((0, 4, 128, 1, options))
    assert [(s["mode"]["type"], s["mode"]["total_pkts"]) for s in streams] == [
        ("single_burst", 2250), ("single_burst", 250), ("single_burst", 500)]
    [continuous] = compiled((0, 4, 128, 1, {"rate": 750.0}))  # trex-console's: continuous, start -d stops it
    assert [s["mode"]["type"] for s in continuous] == ["continuous"]
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake_trex.install(monkeypatch)
        with pytest.raises(ValueError, match=r"^frames=750: allowed >= 751 \(latency and warm-up frames"):
            PROFILE.register().get_streams(**{**options, "frames": 750})
