"""The SIIT experiments against the paper they reproduce, Lencse & Szilagyi 2024 (dual vs single DUT): what they
measure, how, what their reports claim, and the tester ceiling their runs are compared against. Specs only, no lab."""

import dataclasses
import re

import pytest

from trexlab.addressing import MAX_NETWORKS
from trexlab.plan.runplan import traffic_template
from trexlab.procedures import latency
from trexlab.procedures.selftest import ceiling_key
from trexlab.spec.experiment import load
from trexlab.trial import RFC2544_TRIAL_DURATION, SIIT_SIZE_DELTA, TrialSpec

from labtools import REPO

#: Fig. 11's three set-ups: the paper's DUT3 alone as NAT64 (Fig. 10), DUT2 alone as NAT46 (Fig. 9), both together.
SIIT = ("siit-single-dut", "siit-single-dut-nat46", "siit-dual-dut")
#: Figs. 12-13's set-ups, the same three, each beside the throughput experiment whose search gives its rate.
SIIT_LATENCY = {"siit-single-dut-latency": "siit-single-dut", "siit-single-dut-nat46-latency": "siit-single-dut-nat46",
                "siit-dual-dut-latency": "siit-dual-dut"}
#: What each of the paper's figures shows, by the procedure that measures it: Fig. 6 IPv4 forwarding and Fig. 11
#: SIIT throughput (sections 4.4, 5.2), Figs. 12-13 typical latency forward and reverse (section 5.3).
PAPER_FIGURES = {6: "throughput", 11: "throughput", 12: "latency", 13: "latency"}
#: Section 4.3: the loss tolerance of every throughput figure of the paper (one frame in 10,000), in %.
PAPER_LOSS_TOLERANCE_PERCENT = 0.01
#: Section 4.4: each point's repetitions (median, minimum and maximum of them).
PAPER_REPETITIONS = 20
#: Section 4.2: the IPv4 frame size of every test ("64/84-byte": IPv6 frames are 20 bytes longer).
PAPER_IPV4_FRAME_SIZE = 64


def spec(name: str, scale: str | None = None) -> dict:
    return load(REPO / "experiments" / name).scaled(scale).spec


def figures_claimed(reproduces: str) -> list[int]:
    """The figure numbers a `reproduces` text names: 'Fig. 11', 'Figs. 11-13' (a range), 'Figs. 12, 13'."""
    found = []
    for match in re.finditer(r"Figs?\.\s*([\d\s,\-–]+)", reproduces):
        for part in re.split(r"\s*,\s*", match.group(1).strip(" ,")):
            low, _, high = part.partition("-") if "-" in part else part.partition("–")
            found.extend(range(int(low), int(high or low) + 1))
    return found


def test_figures_claimed_reads_ranges_and_lists():
    assert figures_claimed("Lencse & Szilagyi 2024, Figs. 11-13 (x)") == [11, 12, 13]
    assert figures_claimed("Fig. 11 (y), Figs. 12, 13") == [11, 12, 13]


@pytest.mark.parametrize("name", [*SIIT, *SIIT_LATENCY])
def test_a_siit_experiment_claims_only_the_paper_figures_its_procedure_measures(name):
    # Both claimed Figs. 12-13 (latency) with a throughput search: the report printed "Reproduces: ... Figs. 11-13"
    # above throughput figures alone.
    experiment = spec(name)
    claimed = figures_claimed(experiment["reproduces"])
    assert claimed, experiment["reproduces"]
    wrong = [f for f in claimed if PAPER_FIGURES.get(f) != experiment["procedure"]["name"]]
    assert not wrong, f"{name} measures {experiment['procedure']['name']}, claims Figs. {wrong}"


@pytest.mark.parametrize("name", SIIT)
def test_a_siit_experiment_measures_fig_11_as_the_paper_did(name):
    experiment = spec(name)
    traffic, params = experiment["traffic"], experiment["procedure"]["params"]
    assert params["loss_tolerance_percent"] == PAPER_LOSS_TOLERANCE_PERCENT
    assert params["trial_duration"] >= RFC2544_TRIAL_DURATION and experiment["repetitions"] == PAPER_REPETITIONS
    assert traffic["directions"] == "bidirectional"
    assert experiment["sweep"]["traffic.destination_networks"] == [2 ** k for k in range(MAX_NETWORKS.bit_length())]
    ipv4_sizes = [size - SIIT_SIZE_DELTA * (version == 6)
                  for size, version in zip(traffic["frame_size"], traffic["ip_version"], strict=True)]
    assert ipv4_sizes == [PAPER_IPV4_FRAME_SIZE] * 2
    # Section 4.3: the addresses are fixed, only the port numbers give the DUTs' RSS hash (set to the 4-tuple, for
    # UDP over IPv4 and IPv6) something to spread: siitperf sent RFC 4814 pseudorandom ports. Fixed ports put each
    # direction into one receive queue of a NIC DUT.
    assert traffic.get("port_mode") == "rfc4814"


@pytest.mark.parametrize("scale", [None, "ci"])
@pytest.mark.parametrize("name", [*SIIT, *SIIT_LATENCY])
def test_the_tester_selftest_measures_the_ceiling_a_siit_run_looks_up(name, scale):
    # siit-single-dut's runs look their ceiling up at 84 B (the larger of 84/64), which the self-test never
    # measured (64 and 1518 B): they were compared against no ceiling, the dual-DUT half against one. Section 4.2:
    # the self-test runs the tester as the measurements do; theirs send RFC 4814 ports, the self-test sent fixed ones.
    experiment = spec(name, scale)
    traffic = experiment["traffic"]
    trial = TrialSpec(1.0, 1.0, frame_size=tuple(traffic["frame_size"]), ip_version=tuple(traffic["ip_version"]),
                      directions=traffic["directions"], port_mode=traffic["port_mode"])
    wanted = ceiling_key(experiment["generator"], None, trial, experiment.get("generator_options"))
    assert wanted in selftest_keys(scale)


def selftest_keys(scale: str | None) -> list[dict]:
    """The tester set-ups (ceiling_key) for which tester-selftest at this scale records a ceiling: each sweep
    point's frame sizes."""
    measured = []
    for point in load(REPO / "experiments" / "tester-selftest").scaled(scale).points():
        traffic = traffic_template(point.spec.get("traffic"))
        for size in point.spec["procedure"]["params"]["frame_sizes"]:
            sized = dataclasses.replace(traffic, frame_size=(size, size))
            measured.append(ceiling_key(point.spec["generator"], None, sized, point.spec.get("generator_options")))
    return measured


def test_the_single_duts_translate_as_the_papers_dut3_and_dut2():
    # Fig. 11 has each single DUT beside the dual set-up; siit-single-dut was the NAT64 one alone, so the report's
    # comparison had only one of the paper's two single-DUT series.
    nat64, nat46 = spec("siit-single-dut"), spec("siit-single-dut-nat46")
    assert nat64["traffic"]["ip_version"] == [6, 4] and (nat64["dut"]["siit"] or {}).get("ipv6_side", "auto") == "auto"
    assert nat46["traffic"]["ip_version"] == [4, 6] and nat46["dut"]["siit"]["ipv6_side"] == "right"
    assert "siit-single-dut-nat46" in (REPO / "analysis" / "siit-dual-dut.ipynb").read_text()


def test_the_selftest_report_says_which_statistic_of_table_1_it_replaces():
    # Table 1 (section 4.2) prints the average of 20 searches, the report their median: both are "the" ceiling of a
    # reader who compares the two, so the description printed above the figures names each.
    description = spec("tester-selftest")["description"]
    assert "Table 1 gives the average" in description and "gives the median" in description


@pytest.mark.parametrize("scale", [None, "ci"])
@pytest.mark.parametrize("name", SIIT_LATENCY)
def test_a_siit_latency_experiment_measures_at_the_throughput_its_fig_11_twin_measures(name, scale):
    # Section 5.3 (Figs. 12-13): latency of the same three set-ups, at the throughput rate (RFC 8219 section 7.2),
    # so each point's rate comes from the search its Fig. 11 twin runs, on the same lab, DUT, frames and networks.
    experiment, twin = spec(name, scale), spec(SIIT_LATENCY[name], scale)
    for key in ("lab", "generator", "dut", "traffic", "sweep", "repetitions"):
        assert experiment.get(key) == twin.get(key), key
    params = experiment["procedure"]["params"]
    assert experiment["procedure"]["name"] == latency.NAME
    assert params["rate"] == {"from": "throughput", "params": twin["procedure"]["params"]}
    assert params["tagged_frames"] >= latency.MIN_TAGGED_FRAMES
    # Every tag fits the frames after tag_delay even at the search's lowest rate: no point can fail for it.
    frames = twin["procedure"]["params"]["min_rate"] * (params["trial_duration"] - params["tag_delay"])
    assert params["tagged_frames"] <= frames
    if scale is None:  # RFC 8219's durations and repetitions; the CI scale's are shorter and its reports say so
        assert params["trial_duration"] >= latency.TRIAL_DURATION and params["tag_delay"] >= latency.TAG_DELAY
        assert experiment["repetitions"] >= latency.MIN_REPETITIONS
