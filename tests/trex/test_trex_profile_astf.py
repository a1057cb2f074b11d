"""The ASTF profiles compiled by TRex's own client API, without a server (PyPI lbr-trex-client, TRex v3.x's client).

Each profile is loaded as ASTFClient.load_profile loads it (ASTFProfile.load with the tunables as keyword
arguments, which the client turns into trex-console's ``-t --name value`` list) and turned into the JSON the
client would upload (ASTFProfile.to_json_str). For the RFC 6349 profile, the tunables are the ones the trex
engine gives every test of a whole RFC 6349 plan, and the JSON must carry them: who sends, the send loop
(non-blocking, paced with a delay when a bitrate is asked), windows and MSS in both ends' TCP settings, DSCP in
the client's ToS only, one connection per ``limit`` and the server port.
"""

import json
import subprocess
import sys

import pytest

from trexlab.paths import paths
from trexlab.procedures import rfc6349
from trexlab.tcp import metrics as tcp_metrics
from trexlab.tcp.engines import ASTF_PROFILE, TRexAstfEngine

PROFILES = paths().trex_profiles

#: Runs in its own interpreter: TRex's client bundles its own `zmq` (pyzmq-ctypes), which cannot share a process
#: with the pyzmq that other tests load. Prints, per (profile, tunables), the profile's JSON or the error it raised.
COMPILE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import lbr_trex_client  # puts its bundled `trex` package on sys.path
from trex.astf.api import ASTFProfile
out = []
for path, tunables in json.loads(sys.stdin.read()):
    try:
        out.append(json.loads(ASTFProfile.load(path, **tunables).to_json_str()))
    except Exception as exc:
        out.append({"error": str(exc)})
print(json.dumps(out))
"""


def compiled(*requests) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", COMPILE], input=json.dumps(requests), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def plan():
    """Every test of an RFC 6349 run on a 1 Gbit/s path of 1 ms RTT, MTU 1500, and the baseline RTT test."""
    params = rfc6349.Params(engine="trex")
    bb, rtt = 1e9, 1e-3
    bdp = tcp_metrics.bdp_bytes(bb, rtt)
    window = tcp_metrics.window_per_connection(bdp, params.connections)
    mss = tcp_metrics.mss_bytes(1500)
    engine = TRexAstfEngine(None, [5201 + i for i in range(len(params.dscp))], server="192.0.2.1")
    baseline = rfc6349.TcpTest("baseline rtt", "upload", 1, bitrate_bps=bb / 100, port=5201, mss=mss)
    tests = [baseline, *rfc6349.plan_tests(params, engine.ports, bdp, window, 4, mss)]
    return [(test, engine.tunables(test)) for test in tests]


BAD = [{"connections": 0}, {"direction": "sideways"}, {"dscp": 64}]
HTTP = {"cps": 10, "response_size": 32768}


@pytest.fixture(scope="module")
def profiles():
    """Everything compiled in one client process (its start takes seconds): the plan's, the bad, the HTTP one."""
    tests = plan()
    requests = [(str(ASTF_PROFILE), tunables) for _, tunables in tests]
    requests += [(str(ASTF_PROFILE), bad) for bad in BAD] + [(str(PROFILES / "astf_http.py"), HTTP)]
    out = compiled(*requests)
    return tests, out[:len(tests)], out[len(tests):len(tests) + len(BAD)], out[-1]


def commands(program: dict) -> list[str]:
    return [c["name"] for c in program["commands"]]


def test_every_rfc6349_test_compiles_with_its_tunables(profiles):
    tests, jsons, _, _ = profiles
    assert len(jsons) == 14
    for (test, _), profile in zip(tests, jsons, strict=True):
        assert "error" not in profile, (test.name, profile)
        [template] = profile["templates"]
        client = profile["program_list"][template["client_template"]["program_index"]]
        server = profile["program_list"][template["server_template"]["program_index"]]
        # One connection per limit, to the test's server port, which the server's association rule answers.
        assert template["client_template"]["limit"] == test.connections
        assert template["client_template"]["port"] == test.port
        assert template["server_template"]["assoc"] == [{"port": test.port}]
        # Who sends: a non-blocking send loop on the sending side(s); every side waits for what it receives.
        senders = {"download": ("server",), "upload": ("client",), "bidirectional": ("client", "server")}
        for side, program in (("client", client), ("server", server)):
            sends = side in senders[test.direction]
            assert ("tx" in commands(program)) == sends, (test.name, side, commands(program))
            assert commands(program)[-1] == "rx"
            if sends:
                assert commands(program)[:2] == ["tx_mode", "set_var"] and "jmp_nz" in commands(program)
                buffer = profile["buf_list"][next(c for c in program["commands"] if c["name"] == "tx")["buf_index"]]
                if test.bitrate_bps:
                    # One MSS per wait of MSS x 8 / bitrate: the connection carries about the bitrate.
                    [delay] = [c["usec"] for c in program["commands"] if c["name"] == "delay"]
                    assert buffer["size"] == test.mss
                    assert delay == round(test.mss * 8 / test.bitrate_bps * 1e6)
                else:
                    assert "delay" not in commands(program) and buffer["size"] > 1 << 16
        # TCP settings on both ends: the window as send and receive buffer, MSS = MTU - 40; DSCP on the client.
        for info in (profile["c_glob_info"], profile["s_glob_info"]):
            assert info["tcp"]["mss"] == test.mss
            if test.window_bytes:
                assert info["tcp"]["rxbufsize"] == info["tcp"]["txbufsize"] == test.window_bytes
            else:
                assert "rxbufsize" not in info["tcp"]
        assert profile["c_glob_info"].get("ip", {}).get("tos") == (None if test.dscp is None else test.dscp << 2)
        assert "ip" not in profile["s_glob_info"]
        ranges = {d["dir"]: (d["ip_start"], d["ip_end"]) for d in profile["ip_gen_dist_list"]}
        assert ranges == {"c": ("198.18.0.2", "198.18.0.2"), "s": ("198.19.0.2", "198.19.0.2")}


def test_bad_tunables_are_refused_in_one_line(profiles):
    # TRex's client puts a traceback before the profile's error: its last line is what the engine reports.
    bad = [b["error"].strip().splitlines()[-1] for b in profiles[2]]
    assert bad[0] == "ValueError: --connections=0: allowed >= 1"
    assert bad[2] == "ValueError: --dscp=64: allowed -1..63"
    assert bad[1]  # argparse's own refusal of a choice


def test_every_tunable_has_help_as_trex_console_shows_it():
    # trex-console's "start -f profile -t --help" prints the profile's argparse help.
    sys.path.insert(0, str(PROFILES))
    try:
        import astf_tcp_throughput as profile
    finally:
        sys.path.pop(0)
    actions = [a for a in profile.parser()._actions if a.dest != "help"]
    assert {a.dest for a in actions} >= {"direction", "connections", "window", "mss", "dscp", "bitrate", "port"}
    assert all(a.help for a in actions)
    assert set(TRexAstfEngine(None, [5201], server="x").tunables(rfc6349.TcpTest("t"))) == {
        a.option_strings[0][2:] for a in actions if a.dest != "bytes"}


def test_the_http_profile_compiles(profiles):
    profile = profiles[3]
    assert "error" not in profile, profile
    assert profile["templates"][0]["client_template"]["cps"] == 10
