"""The fake TRex clients (fake_trex, fake_astf) held to TRex's own client API (PyPI lbr-trex-client, TRex v3.x's
client): every call a fake accepts must be one the real client accepts, and what a fake returns must have the real
client's shape. A fake more lenient than TRex would let the tests on it pass where a real TRex box fails.

The real client runs in its own interpreter (its bundled zmq cannot share a process with the pyzmq other tests
load); it reports its signatures, constants and, fed a server reply shaped as trex-core's
src/stx/stl/trex_stl_fs.cpp (CFlowStatRuleMgr::dump_json) sends it, the statistics its CPgIdStats makes of it.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import fake_astf
import pytest

from trexlab.generators import trex as trex_generator
from trexlab.tcp import engines

import fake_trex

#: Runs in the real client's interpreter. Reads [[module, class, member], ...] and prints, per entry, its parameters
#: as [name, kind, has a default]; then the constants the profile takes from trex.stl.api and the shapes of the
#: statistics the client returns.
REAL = """
import inspect, json, sys, warnings
warnings.simplefilter("ignore")
import lbr_trex_client  # puts its bundled `trex` package on sys.path
from trex.stl import api as stl
from trex.astf import api as astf
from trex.stl.trex_stl_stats import CPgIdStats
from trex.common.stats.trex_global_stats import GlobalStats
from trex.common.stats.trex_port_stats import PortStatsSum

def shape(value):
    # Keys as repr, so an int key (a port, a pg_id) is told from a str one; a histogram's keys are its data.
    if not isinstance(value, dict):
        return None
    return {repr(k): None if k == "histogram" else shape(v) for k, v in value.items()}

request = json.loads(sys.stdin.read())
out = {"signatures": {}}
for module, name, member in request["signatures"]:
    target = getattr(getattr({"stl": stl, "astf": astf}[module], name), member, None)
    out["signatures"][f"{module}.{name}.{member}"] = None if target is None else [
        [p.name, p.kind.name, p.default is not p.empty] for p in inspect.signature(target).parameters.values()]
out["constants"] = {name: getattr(stl, name) for name in request["constants"]}
out["missing"] = {module: [n for n in names if not hasattr({"stl": stl, "astf": astf}[module], n)]
                  for module, names in request["api_names"].items()}
out["L4_TYPE"] = {name: getattr(stl.CTRexVmInsFixHwCs, name) for name in ("L4_TYPE_UDP", "L4_TYPE_TCP", "L4_TYPE_IP")}
out["STLError is TRexError"] = stl.STLError is stl.TRexError


class Reply:
    def __init__(self, data):
        self._data = data
    def __bool__(self):
        return True
    def data(self):
        return self._data


class Rpc:  # the server's answers to get_active_pgids and get_pgid_stats
    def __init__(self, reply):
        self.reply = reply
    def transmit(self, method, params=None):
        if method == "get_active_pgids":
            return Reply({"ids": {"latency": [2], "flow_stats": [1]}})
        return Reply(self.reply)


stats = CPgIdStats(Rpc(request["server_pgid_stats"])).get_stats([1, 2])
out["get_pgid_stats"] = shape(stats)
# A reply without "rb" (a NIC that counts no received bytes) nor port 1 (a dummy port): pg_id 1's figures.
reply = json.loads(json.dumps(request["server_pgid_stats"]))
for entry in reply["flow_stats"].values():
    del entry["rb"]
    for per_port in entry.values():
        del per_port["1"]
out["pg_id 1 without rb nor port 1"] = CPgIdStats(Rpc(reply)).get_stats([1, 2])["flow_stats"][1]
# Replies without a figure the client reads unchecked (a latency pg_id's "lat", the first pg_id's "tp") or without
# "tp" of another pg_id: what trexlab makes of the client's failure, or the client's tx_pkts of that pg_id.
sys.path.insert(0, request["trexlab"])
from trexlab.generators.trex import reply_lacking
out["lacking"] = {}
for figure, pg_id in request["lacking"]:
    reply = json.loads(json.dumps(request["server_pgid_stats"]))
    del reply["latency" if figure == "lat" else "flow_stats"][str(pg_id)][figure]
    try:
        out["lacking"][f"{figure} {pg_id}"] = CPgIdStats(Rpc(reply)).get_stats([1, 2])["flow_stats"][pg_id]["tx_pkts"]
    except KeyError as exc:
        out["lacking"][f"{figure} {pg_id}"] = reply_lacking(exc)
out["port"] = PortStatsSum().to_dict()  # no port added: every figure one no server sent
out["global"] = GlobalStats(None).to_dict()
print(json.dumps(out))
"""

#: The server's get_pgid_stats reply for a test stream (pg_id 1) and a latency stream (pg_id 2) on ports 0 and 1, as
#: trex-core's CFlowStatRuleMgr::dump_json builds it: per pg_id and per port (str keys) rx/tx packets and bytes
#: ("rb" only where the interface counts received bytes) and rates; for a latency pg_id its histogram ("lat", with
#: "hdrh" from a server started with --hdrh; src/time_histogram.cpp CTimeHistogram::dump_json) and its sequence
#: errors ("er", each only when non-zero); the "g" entry only when a port has errors; the pg_ids' "ver_id".
PER_PORT = {"0": 0, "1": 0}
SERVER_PGID_STATS = {
    "flow_stats": {pg: {key: PER_PORT for key in ("rp", "rb", "tp", "tb", "rbs", "rps", "tbs", "tps")}
                   for pg in ("1", "2")},
    "latency": {"2": {"lat": {"total_max": 0, "total_min": 0, "last_max": 0, "average": 0.0,
                              "histogram": {"10": 1}, "hdrh": "HISTFAAAAA", "jit": 0},
                      "er": {"dup": 1}}},
    "ver_id": {"1": 1, "2": 1},
}

#: Figures left out of SERVER_PGID_STATS, one at a time: those the client reads unchecked ("lat" of latency pg_id 2,
#: "tp" of pg_id 1, the first) and one it checks ("tp" of pg_id 2).
LACKING = (("lat", 2), ("tp", 1), ("tp", 2))

#: The real clients, by API module and class, each with the fake that stands in for it in the tests.
CLIENTS = {("stl", "STLClient"): fake_trex.FakeClient, ("astf", "ASTFClient"): fake_astf.FakeAstfClient}
#: The other classes of trex.stl.api the STL profile builds streams with, and the members it uses.
STL_CLASSES = {"STLStream": ("__init__", "get_pg_id"), "STLTXCont": ("__init__",),
               "STLTXSingleBurst": ("__init__",), "STLFlowStats": ("__init__",),
               "STLFlowLatencyStats": ("__init__",),
               "STLPktBuilder": ("__init__", "is_default_src_mac", "is_default_dst_mac"),
               "STLVM": ("__init__", "var", "write", "write_mask", "fix_chksum_hw")}
CONSTANTS = ("STLStreamDstMAC_CFG_FILE", "STLStreamDstMAC_PKT", "STLStreamDstMAC_ARP")
#: Where trexlab calls each API's client (self.client / client): the STL generator, and the ASTF engine with the
#: session both share (connect, get_server_version, disconnect).
CALLERS = {"stl": (inspect.getsource(trex_generator),),
           "astf": (inspect.getsource(engines), inspect.getsource(trex_generator.TRexSession))}
POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
VARIADIC = ("VAR_POSITIONAL", "VAR_KEYWORD")


def called_client_methods(api: str) -> set[str]:
    return {name for source in CALLERS[api] for name in re.findall(r"\bclient\.(\w+)\(", source)}


#: The fakes' own helpers for tests, which no real client has.
FAKE_HELPERS = {"call_names", "rate", "rtt", "up", "refreshed_at"}


def public_methods(fake) -> list[str]:
    return sorted(name for name, member in vars(fake).items() if callable(member) and not name.startswith("_"))


def checked() -> list[tuple[str, str, str]]:
    """Every public method of the fake clients and the client's constructor; the STL classes' members."""
    return ([(module, name, method) for (module, name), fake in CLIENTS.items()
             for method in ["__init__", *public_methods(fake)]]
            + [("stl", name, member) for name, members in STL_CLASSES.items() for member in members])


def fake_api_names() -> dict[str, list[str]]:
    """What the fake trex.stl.api and trex.astf.api modules offer (the generator, the engine and the profile take
    from them)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        stl = fake_trex.install(monkeypatch)
    return {module: sorted(n for n in vars(api) if not n.startswith("_"))
            for module, api in (("stl", stl), ("astf", fake_astf.api()))}


@pytest.fixture(scope="module")
def real() -> dict:
    if importlib.util.find_spec("lbr_trex_client") is None:
        pytest.skip("lbr-trex-client is not installed (requirements.txt): no real TRex client to hold the fakes to")
    request = {"signatures": checked(), "constants": CONSTANTS, "server_pgid_stats": SERVER_PGID_STATS,
               "api_names": fake_api_names(), "lacking": LACKING,
               "trexlab": str(Path(trex_generator.__file__).parents[2])}  # this tree's trexlab, not the installed one
    done = subprocess.run([sys.executable, "-c", REAL], input=json.dumps(request), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def parameters(function) -> list[list]:
    return [[p.name, p.kind.name, p.default is not p.empty] for p in inspect.signature(function).parameters.values()]


def incompatibilities(fake: list[list], real: list[list]) -> list[str]:
    """Why a call the fake accepts could fail on the real one: a parameter the real one lacks or takes another way,
    a positional place the real one gives another parameter, a parameter the real one requires and the fake does
    not, or arbitrary arguments the real one refuses. (A fake stricter than the real one is fine.)"""
    by_name = {name: (kind, default) for name, kind, default in real}
    real_positional = [name for name, kind, _ in real if kind in POSITIONAL]
    real_kinds = {kind for _, kind, _ in real}
    problems = []
    fake_positional = [name for name, kind, _ in fake if kind in POSITIONAL]
    for name, kind, _ in fake:
        if kind in VARIADIC:
            if kind not in real_kinds:
                problems.append(f"{'**' if kind == 'VAR_KEYWORD' else '*'}{name}: the real one takes no such "
                                "arbitrary arguments")
            continue
        if kind in POSITIONAL:
            place = fake_positional.index(name)
            if place >= len(real_positional) or real_positional[place] != name:
                problems.append(f"{name}: positional {place} is "
                                f"{real_positional[place] if place < len(real_positional) else 'nothing'} there")
        if kind != "POSITIONAL_ONLY":
            if name not in by_name and "VAR_KEYWORD" not in real_kinds:
                problems.append(f"{name}: no such parameter there")
            elif name in by_name and by_name[name][0] not in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY"):
                problems.append(f"{name}: not a keyword there")
    fake_required = {name for name, kind, default in fake if not default and kind not in VARIADIC}
    problems += [f"{name}: required there, not by the fake" for name, kind, default in real
                 if not default and kind not in VARIADIC and name not in fake_required]
    return problems


def test_the_incompatibility_check_can_fail():
    real = parameters(lambda self, port_id, timeout=None: None)
    assert incompatibilities(parameters(lambda self, port_id, timeout=None: None), real) == []
    assert incompatibilities(parameters(lambda self, port_id: None), real) == []  # stricter: fine
    assert incompatibilities(parameters(lambda self, port: None), real) == [
        "port: positional 1 is port_id there", "port: no such parameter there", "port_id: required there, not by "
        "the fake"]
    assert incompatibilities(parameters(lambda self, **kw: None), real) == [
        "**kw: the real one takes no such arbitrary arguments", "port_id: required there, not by the fake"]


def test_the_fakes_have_only_methods_the_real_clients_have(real):
    # A fake method the real client lacks is one trexlab could call in tests and fail on with TRex (helpers aside).
    absent = {key for key, signature in real["signatures"].items() if signature is None}
    assert {key.split(".")[2] for key in absent} <= FAKE_HELPERS, absent
    # Every method the trex generator or the ASTF engine calls on its client is the fake's (so checked here) and the
    # real client's.
    for (api, name), fake in CLIENTS.items():
        called = called_client_methods(api)
        assert {"connect", "start", "get_stats"} <= called <= set(public_methods(fake)), (name, called)
        assert all(real["signatures"][f"{api}.{name}.{method}"] for method in called), name


@pytest.mark.parametrize("api", ["stl", "astf"])
def test_the_fake_clients_accept_only_calls_the_real_clients_accept(real, api):
    (name, fake), = ((n, f) for (m, n), f in CLIENTS.items() if m == api)
    problems = {method: incompatibilities(parameters(getattr(fake, method)), real["signatures"][key])
                for key, signature in real["signatures"].items() if key.startswith(f"{api}.{name}.") and signature
                for method in [key.split(".")[2]] if method != "__init__"}  # a fake's takes test knobs
    assert not {m: p for m, p in problems.items() if p}, problems
    # TRexSession makes a real client with keywords its constructor takes.
    [made] = re.findall(r"make_client\((server=\w[^)]*)\)", inspect.getsource(trex_generator.TRexSession._open))
    passed = [[argument.split("=")[0].strip(), "KEYWORD_ONLY", False] for argument in made.split(",")]
    assert {p[0] for p in passed} == {"server", "sync_port", "async_port"}
    assert [p for p in incompatibilities(passed, real["signatures"][f"{api}.{name}.__init__"])
            if "required there" not in p] == []


def test_the_fake_stl_classes_take_their_arguments_as_the_real_ones(real):
    problems = {f"{name}.{member}": incompatibilities(parameters(getattr(getattr(fake_trex, name), member)),
                                                      real["signatures"][f"stl.{name}.{member}"])
                for name, members in STL_CLASSES.items() for member in members}
    assert not {k: p for k, p in problems.items() if p}, problems
    assert {name: getattr(fake_trex, name) for name in CONSTANTS} == real["constants"]
    assert {k: getattr(fake_trex.CTRexVmInsFixHwCs, k) for k in real["L4_TYPE"]} == real["L4_TYPE"]
    assert real["STLError is TRexError"]  # the fake API's STLError is its TRexError too
    # Every name the fake API modules offer, the real ones do.
    assert real["missing"] == {"stl": [], "astf": []}, real["missing"]


def shape(value):
    """As REAL's: keys as repr (an int key told from a str one), a histogram's keys (its data) left out."""
    if not isinstance(value, dict):
        return None
    return {repr(k): None if k == "histogram" else shape(v) for k, v in value.items()}


def sending(client: fake_trex.FakeClient) -> fake_trex.FakeClient:
    """client sending a test stream (pg_id 1) and a latency stream (pg_id 2) from port 0, as SERVER_PGID_STATS."""
    packet = fake_trex.STLPktBuilder(pkt_buffer=bytes(60))
    client.add_streams([fake_trex.STLStream("test", packet, fake_trex.STLTXCont(pps=10),
                                            flow_stats=fake_trex.STLFlowStats(1)),
                        fake_trex.STLStream("latency", packet, fake_trex.STLTXCont(pps=10),
                                            flow_stats=fake_trex.STLFlowLatencyStats(2))], ports=[0])
    client.start(ports=[0], duration=1)
    return client


def fake_trial_stats():
    """The fake STL client's answers after a trial with a test and a latency stream from port 0."""
    client = sending(fake_trex.FakeClient())
    during = client.get_pgid_stats([1, 2])
    client.wait_on_traffic(ports=[0], timeout=10, rx_delay_ms=0)
    return during, client.get_stats(ports=[0, 1])


def test_the_fake_stl_statistics_have_the_real_clients_shape(real):
    during, stats = fake_trial_stats()
    assert shape(during) == real["get_pgid_stats"]
    assert shape({"flow_stats": stats["flow_stats"], "latency": stats["latency"]}) == {
        k: v for k, v in real["get_pgid_stats"].items() if k != "'ver_id'"}
    # Ports by number, the ports' sum and the global figures, each with the real client's figures by name.
    assert set(stats) == {0, 1, "total", "global", "flow_stats", "latency"}
    assert sorted(stats[0]) == sorted(stats[1]) == sorted(stats["total"]) == sorted(real["port"])
    assert sorted(stats["global"]) == sorted(real["global"])
    # A figure the server did not send is the text "N/A" in the real client: the ASTF fake's unknown cpu_util too.
    assert real["global"]["cpu_util"] == "N/A"
    astf = fake_astf.FakeAstfClient()
    astf.load_profile("p", tunables={}, pid_input="p")
    astf.start(pid_input="p")
    astf_stats = astf.get_stats(pid_input="p")
    assert sorted(astf_stats["global"]) == sorted(real["global"]) and astf_stats["global"]["cpu_util"] == "N/A"
    assert sorted(astf_stats[0]) == sorted(astf_stats["total"]) == sorted(real["port"])


def test_the_fake_stl_client_gives_figures_the_server_did_not_send_as_the_real_one(real):
    # rx_bytes not sent, port 1 a dummy port: "N/A" for every port and the total, no entry for the dummy port.
    client = fake_trex.FakeClient(unsent=("rx_bytes", *fake_trex.PORT_COUNTERS), dummy_ports=(1,))
    packet = fake_trex.STLPktBuilder(pkt_buffer=bytes(60))
    client.add_streams([fake_trex.STLStream("test", packet, fake_trex.STLTXCont(pps=10),
                                            flow_stats=fake_trex.STLFlowStats(1))], ports=[0])
    client.start(ports=[0], duration=1)
    flow = client.get_pgid_stats([1])["flow_stats"][1]
    real_flow = real["pg_id 1 without rb nor port 1"]
    assert sorted(flow) == sorted(real_flow)
    for key in flow:  # the figures' places and whether each is "N/A" (JSON keys: the ports as text)
        assert {str(p): v == "N/A" for p, v in flow[key].items()} == {p: v == "N/A" for p, v in real_flow[key].items()}
    assert flow["rx_bytes"][0] == real_flow["rx_bytes"]["0"] == "N/A"
    # Every port figure of a server that sent none (TRex's mock platform) is "N/A" in both.
    stats = client.get_stats(ports=[0, 1])
    assert stats[0] == stats["total"] == real["port"] == dict.fromkeys(real["port"], "N/A")


def test_the_fake_stl_client_fails_on_figures_the_server_left_out_as_the_real_one(real):
    # Each as trexlab sees it: the one-line description of the client's KeyError (pg_id and figure), or the tx_pkts of a
    # pg_id whose "tp" the client does not need (JSON keys: the ports as text).
    for figure, pg_id in LACKING:
        client = sending(fake_trex.FakeClient(lacking=[(figure, pg_id)]))
        try:
            seen = client.get_pgid_stats([1, 2])["flow_stats"][pg_id]["tx_pkts"]
        except KeyError as exc:
            seen = trex_generator.reply_lacking(exc)
        else:
            seen = {str(port): value for port, value in seen.items()}
        assert seen == real["lacking"][f"{figure} {pg_id}"], (figure, pg_id)
    assert real["lacking"]["lat 2"] == ('no latency figures ("lat") for pg_id 2 in its answer, which TRex\'s client '
                                        "cannot do without: its delays cannot be read")
    assert real["lacking"]["tp 2"] == {"0": "N/A", "1": "N/A", "total": "N/A"}


def test_the_astf_counters_are_trexs_and_the_engine_reads_only_those():
    # fake_astf's table is the one recorded from trex-core (tests/data/trex/astf_counter_names.txt says where):
    # with skip_zero=False the fake returns all of it, as TRex does; with skip_zero=True it leaves zeros out.
    table = set(fake_astf.COUNTERS)
    assert {"tcps_rcvbyte", "tcps_sndbyte_ok", "tcps_sndrexmitbyte", "m_est_flows", "m_tx_bw_l7_r"} <= table
    read = set(re.findall(r'"((?:tcps|m)_\w+)"', inspect.getsource(engines)))
    assert read and read <= table, read - table
    astf = fake_astf.FakeAstfClient(retransmit_ratio=0.0)
    astf.load_profile("p", tunables={"direction": "upload"}, pid_input="p")
    astf.start(pid_input="p")
    astf.clock.sleep(2.0)
    full = astf.get_traffic_stats(skip_zero=False, pid_input="p")
    assert set(full["client"]) == set(full["server"]) == table
    sparse = astf.get_traffic_stats(skip_zero=True, pid_input="p")
    # No retransmissions: TRex leaves the zero counter out; m_est_flows (kept at zero too) and the bytes stay.
    assert "tcps_sndrexmitbyte" not in sparse["client"] and {"m_est_flows", "tcps_sndbyte_ok"} <= set(sparse["client"])


def test_the_fake_astf_client_refuses_a_profile_as_the_real_one():
    # ASTFClient.load_profile turns what ASTFProfile.load raised into a TRexError "Could not load profile: ..."
    # (lbr-trex-client trex_astf_client.py): the engine's one-line error comes from that, never a bare ValueError.
    with pytest.raises(fake_astf.TRexError, match=r"^Could not load profile: --connections=0: allowed >= 1$"):
        fake_astf.FakeAstfClient().load_profile("p", tunables={"connections": 0}, pid_input="p")
