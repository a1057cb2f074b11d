"""The software tester on the local single-DUT lab (issue 4 acceptance)."""

import json
import subprocess

import pytest

from trexlab import cli
from trexlab.generators import create_generator
from trexlab.params import InvalidParameter
from trexlab.trial import GeneratorError, TrialSpec

from labtools import REPO, run

pytestmark = pytest.mark.lab

ASAN = REPO / "swtester" / "swtester-asan"


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("sw", "single", 4)


@pytest.fixture(scope="module", params=["release", "asan"])
def generator(request, lab):
    if request.param == "asan":
        run("make", "-s", "-C", "swtester", "asan")
        return create_generator("software", lab=lab, binary=str(ASAN))
    return create_generator("software", lab=lab)


def dut_ns(lab):
    return lab.duts[0].netns


def test_lossless_trial_counts_agree_with_nftables(generator):
    spec = TrialSpec(offered_load=10_000, duration=1.0, destination_networks=4, receive_tail=0.5)
    result = generator.run_trial(spec)
    for d in result.directions.values():
        assert d.frames_sent == d.frames_intended == 10_000
        assert d.frames_received == d.frames_sent, "a 10 kfps trial through an idle DUT loses nothing"
    assert result.notes == (), f"sender, receiver and nftables disagree: {result.notes}"


def test_every_hundredth_frame_dropped_is_exactly_one_percent(lab, generator):
    rule = ["FORWARD", "-p", "udp", "-m", "statistic", "--mode", "nth", "--every", "100", "--packet", "0", "-j", "DROP"]
    run("ip", "netns", "exec", dut_ns(lab), "iptables", "-I", *rule)
    try:
        spec = TrialSpec(offered_load=10_000, duration=2.0, directions="forward", receive_tail=0.5)
        result = generator.run_trial(spec)
    finally:
        run("ip", "netns", "exec", dut_ns(lab), "iptables", "-D", *rule)
    forward = result.directions["forward"]
    assert forward.frames_lost == 200 and forward.loss_ratio == 0.01
    assert result.notes == ()


def test_ipv6_trial_and_latency_samples(generator):
    spec = TrialSpec(offered_load=5_000, duration=1.0, ip_version=(6, 6), frame_size=(128, 128),
                     latency_mode="tagged", latency_frames=500, receive_tail=0.5)
    result = generator.run_trial(spec)
    for d in result.directions.values():
        assert d.frames_received == 5_000
        assert d.latency.size == 500
        assert 0 < d.latency.percentile(50) < 0.05, "one-way delay through an idle namespace DUT is sub-ms to ms"


def test_rfc4814_ports_are_uniform_over_the_range(lab, generator):
    """Count destination ports at the DUT in 8 equal buckets of 1024..65535: chi-square with 7 df."""
    ns, buckets = dut_ns(lab), 8
    width = (65536 - 1024) // buckets
    rules = "\n".join(f"counter b{i} {{}}" for i in range(buckets))
    chain = "\n".join(f"udp dport {1024 + i * width}-{1024 + (i + 1) * width - 1} counter name b{i}"
                      for i in range(buckets))
    ruleset = (f"table netdev trexlab_ports_test {{\n{rules}\nchain c {{ type filter hook ingress device left "
               f"priority 0; policy accept;\n{chain}\n}}\n}}\n")
    subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=ruleset, text=True, check=True)
    try:
        spec = TrialSpec(offered_load=20_000, duration=1.0, directions="forward", port_mode="rfc4814",
                         receive_tail=0.5)
        generator.run_trial(spec)
        out = run("ip", "netns", "exec", ns, "nft", "-j", "list", "counters", "table", "netdev",
                  "trexlab_ports_test").stdout
    finally:
        run("ip", "netns", "exec", ns, "nft", "delete", "table", "netdev", "trexlab_ports_test", check=False)
    counts = [c["counter"]["packets"] for c in json.loads(out)["nftables"] if "counter" in c]
    expected = sum(counts) / buckets
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    assert sum(counts) == 20_000
    assert chi2 < 24.32, f"chi-square {chi2:.1f} over 7 df exceeds the 0.1 % critical value: {counts}"


def test_bad_input_is_named(lab):
    generator = create_generator("software", lab=lab)
    with pytest.raises(InvalidParameter, match=r"frame_size\[0\]=64: allowed >= 82"):
        generator.run_trial(TrialSpec(offered_load=1000, duration=0.1, ip_version=(6, 6)))
    broken = create_generator("software", lab=lab)
    broken.tester = broken.tester.__class__(**{**broken.tester.__dict__, "test_ports": tuple(
        p.__class__(**{**p.__dict__, "name": "nosuchport"}) for p in broken.tester.test_ports)})
    with pytest.raises(GeneratorError, match="interface nosuchport: no such interface"):
        broken.run_trial(TrialSpec(offered_load=1000, duration=0.1))


def test_cli_throughput_and_latency_on_the_lab(lab, tmp_path, capsys):
    inventory = str(lab.inventory)
    code = cli.main(["throughput", "--generator", "software", "--inventory", inventory, "--max-rate", "200000",
                     "--min-rate", "1000", "--resolution", "20000", "--trial-duration", "1", "--receive-tail", "0.5",
                     "--loss-tolerance-percent", "0.1", "--results", str(tmp_path / "tp"), "--json"])
    assert code == 0
    output = json.loads(capsys.readouterr().out)
    assert output["result"]["throughput_fps"] > 1000
    assert (tmp_path / "tp" / "rep-001" / "trials.jsonl").is_file()
    code = cli.main(["latency", "--generator", "software", "--inventory", inventory, "--rate", "5000",
                     "--trial-duration", "1", "--tagged-frames", "500", "--receive-tail", "0.5",
                     "--results", str(tmp_path / "lat"), "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)["result"]
    for direction in ("forward", "reverse"):
        stats = result["directions"][direction]
        assert stats["samples"] == 500 and 0 < stats["typical"] <= stats["worst_case"]
