"""swtester's delay histogram (swtester/hdr.h) against the hdrhistogram library: the same delays give the same
buckets and the same percentiles. No lab needed: hdr_check records delays read from stdin as swtester does."""

import json
import random
import subprocess

import pytest

from trexlab.generators.software import latency_from_swtester
from trexlab.trial import LATENCY_HIGHEST_UNITS, LATENCY_SIGNIFICANT_DIGITS, NANOSECOND, GeneratorError, Latency

from labtools import REPO, run

PERCENTILES = (0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999, 100)


@pytest.fixture(scope="module")
def hdr_check():
    run("make", "-s", "-C", "swtester", "hdr_check")
    return str(REPO / "swtester" / "hdr_check")


def swtester_histogram(binary: str, delays_ns: list[int]) -> dict:
    result = subprocess.run([binary], input="\n".join(map(str, delays_ns)), capture_output=True, text=True,
                            check=True, timeout=60)
    return json.loads(result.stdout)


def known_delays() -> list[int]:
    """Delays from 0 ns to 20 s: log-uniform (every bucket magnitude), plus each bucket edge of the layout's
    first magnitudes and of the top of the range, where an off-by-one in the bucket index would show."""
    rng = random.Random(15)
    delays = [int(10 ** rng.uniform(0, 10.3)) for _ in range(50_000)]
    delays += [0, 1, 2, 1023, 1024, 1025, 2047, 2048, 2049, 2050, 4095, 4096, 4097, 4098, 4100, 10**6, 10**10]
    delays += [(1 << k) + d for k in range(11, 42) for d in (-1, 0, 1)]
    return delays


def test_layout_is_the_trial_contracts(hdr_check):
    layout = swtester_histogram(hdr_check, [])
    assert (layout["lowest"], layout["highest"], layout["significant_digits"], layout["unit_ns"]) == (
        1, LATENCY_HIGHEST_UNITS, LATENCY_SIGNIFICANT_DIGITS, round(NANOSECOND / 1e-9))
    assert layout["total"] == 0 and layout["buckets"] == []


def test_known_delays_give_the_librarys_buckets_and_percentiles(hdr_check):
    delays = known_delays()
    printed = swtester_histogram(hdr_check, delays)
    latency = latency_from_swtester(printed, lost_or_late=0, timeout=None)
    library = Latency.empty_histogram()
    for value in delays:
        assert library.record_value(value)
    # Bucket by bucket: every count where the library put it.
    ours = latency.decoded
    assert ours.get_total_count() == library.get_total_count() == len(delays) == printed["total"]
    assert [ours.get_count_at_index(i) for i in range(library.counts_len)] == \
           [library.get_count_at_index(i) for i in range(library.counts_len)]
    # The library's own percentiles (its definition, in ns) and the contract's nearest rank (in s).
    for q in PERCENTILES:
        assert ours.get_value_at_percentile(q) == library.get_value_at_percentile(q), q
    direct = Latency.from_delays(d * NANOSECOND for d in delays)
    assert latency.percentiles(PERCENTILES) == direct.percentiles(PERCENTILES)
    assert latency.decoded.get_min_value() == library.get_min_value()
    assert latency.decoded.get_max_value() == library.get_max_value()


def test_lost_or_late_tags_enter_as_infinity(hdr_check):
    """999 received tags and 1 lost: the 99.9th percentile is a received delay, the 100th is '> timeout'."""
    printed = swtester_histogram(hdr_check, [10_000 + i for i in range(999)])
    latency = latency_from_swtester(printed, lost_or_late=1, timeout=0.01)
    assert latency.size == 999 and latency.measured == 1000
    assert latency.percentile(99.9) == pytest.approx(10_998e-9, abs=8e-9)
    assert latency.percentile(100) == float("inf")
    assert latency.to_dict()["max"] == "> 10 ms (lost tags)"


def test_a_delay_beyond_the_layout_still_counts(hdr_check):
    """Above an hour (impossible within swtester's own limits) a delay is kept at the top, never dropped:
    the histogram's total stays the frames received."""
    printed = swtester_histogram(hdr_check, [LATENCY_HIGHEST_UNITS * 2, 5])
    assert printed["total"] == 2 and latency_from_swtester(printed, 0, None).size == 2


def test_a_histogram_that_disagrees_with_its_total_is_refused():
    bad = {"lowest": 1, "highest": LATENCY_HIGHEST_UNITS, "significant_digits": 3, "unit_ns": 1, "total": 3,
           "buckets": [[5, 1]]}
    with pytest.raises(GeneratorError, match="holds 1 delays, it counted 3"):
        latency_from_swtester(bad, 0, None)
