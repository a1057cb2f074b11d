"""The trial contract's latency (issue 15): HDR histograms, lost or late tags as +infinity, tag_delay, sizes."""

import json
import math

import pytest
from hdrh.histogram import HdrHistogram

from trexlab.trial import (
    DirectionResult,
    InvalidTrialSpec,
    Latency,
    TrialResult,
    TrialSpec,
    lost_tags_text,
    merge_latency,
)


def test_percentiles_are_nearest_rank_over_received_and_lost_tags():
    received = Latency.from_delays([i * 1e-6 for i in range(1, 991)], lost_or_late=10, timeout=0.01)
    assert received.size == 990 and received.measured == 1000
    assert received.percentile(0) == pytest.approx(1e-6)
    assert received.percentile(50) == pytest.approx(500e-6, rel=1e-3)
    assert received.percentile(99) == pytest.approx(990e-6, rel=1e-3), "rank 990 is the last received tag"
    assert received.percentile(99.1) == math.inf, "rank 991 falls among the 10 lost tags"
    assert received.percentile(99.9) == math.inf and received.percentile(100) == math.inf
    none_lost = Latency.from_delays([i * 1e-6 for i in range(1, 1001)])
    assert none_lost.percentile(99.9) == pytest.approx(999e-6, rel=1e-3)
    assert math.isnan(Latency.from_delays([]).percentile(50))
    assert Latency.from_delays([], lost_or_late=3).percentile(0) == math.inf, "every tag lost"


def test_typical_latency_is_the_median_of_rfc_8219_and_siitperf_not_a_nearest_rank():
    # RFC 8219 section 7.2: TL = Median(Li); siitperf averages the two middle delays of an even count of tags
    # (its default and ours, 1000, are even). The 500th of 1000 delays is not their median.
    even = Latency.from_delays([10e-6] * 500 + [20e-6] * 500)
    assert even.median() == pytest.approx(15e-6, rel=1e-3) and even.summary()["median"] == even.median()
    assert even.percentile(50) == pytest.approx(10e-6, rel=1e-3), "the 50th percentile stays nearest rank"
    odd = Latency.from_delays([10e-6] * 500 + [20e-6] * 501)
    assert odd.median() == pytest.approx(20e-6, rel=1e-3), "an odd count: the middle delay"
    half_lost = Latency.from_delays([10e-6] * 500, lost_or_late=500, timeout=0.01)
    assert half_lost.median() == math.inf, "the upper middle tag was lost: an infinite delay in the mean"
    assert Latency.from_delays([10e-6] * 501, lost_or_late=500).median() == pytest.approx(10e-6, rel=1e-3)
    assert math.isnan(Latency.from_delays([]).median())


def test_the_histogram_is_the_hdrhistogram_librarys_own_encoding():
    lat = Latency.from_delays([10e-6] * 600 + [12e-6] * 400)
    decoded = HdrHistogram.decode(lat.histogram)
    assert decoded.get_total_count() == 1000
    assert decoded.get_value_at_percentile(50) == pytest.approx(10_000, rel=1e-3)  # nanoseconds
    assert decoded.get_max_value() == pytest.approx(12_000, rel=1e-3)


def test_a_trex_histogram_in_microseconds_keeps_its_unit():
    histogram = HdrHistogram(1, 10**7, 3)
    for us in range(1, 1001):
        histogram.record_value(us)
    lat = Latency(histogram.encode().decode(), unit=1e-6, lost_or_late=0)
    assert lat.percentile(50) == pytest.approx(500e-6) and lat.percentile(100) == pytest.approx(1000e-6)


def test_merged_trials_add_histograms_and_lost_tags():
    one = Latency.from_delays([1e-5] * 99, lost_or_late=1, timeout=0.01)
    two = Latency.from_delays([2e-5] * 100, lost_or_late=0, timeout=0.01)
    results = [TrialResult(TrialSpec(offered_load=1, duration=1), {"forward": DirectionResult(
        "forward", 100, 100, 100 - lat.lost_or_late, latency=lat)}, "sim") for lat in (one, two)]
    merged = merge_latency(results, "forward")
    assert merged.size == 199 and merged.lost_or_late == 1 and merged.timeout == 0.01
    assert merged.percentile(50) == pytest.approx(2e-5, rel=1e-3) and merged.percentile(100) == math.inf
    assert merge_latency(results, "reverse") is None
    with pytest.raises(ValueError, match="different units"):
        Latency.merge([one, Latency(one.histogram, unit=1e-6)])


def test_a_percentile_among_lost_tags_is_shown_as_more_than_the_timeout_in_json():
    lat = Latency.from_delays([25e-6] * 900, lost_or_late=100, timeout=0.01)
    stored = json.loads(json.dumps(DirectionResult("forward", 1000, 1000, 900, latency=lat, tags_sent=1000,
                                                   tags_received=900, tags_lost_or_late=100).to_dict()))
    assert stored["tags_sent"] == 1000 and stored["tags_lost_or_late"] == 100
    assert stored["latency"]["p99_9"] == "> 10 ms (lost tags)" == lost_tags_text(0.01)
    assert stored["latency"]["median"] == pytest.approx(25e-6, rel=1e-3)
    assert stored["latency"]["lost_or_late"] == 100 and stored["latency"]["unit"] == 1e-9
    again = Latency.from_dict(stored["latency"])
    assert again == lat and again.percentile(99.9) == math.inf
    assert lost_tags_text(None) == "> receive tail (lost tags)"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"ip_version": (6, 4), "frame_size": (64, 64)}, r"frame_size\[0\]=64: allowed 84\.\.9018 bytes for IPv6"),
    ({"ip_version": (4, 6), "frame_size": (64, 83)}, r"frame_size\[1\]=83: allowed 84\.\.9018 bytes for IPv6 test "
                                                     r"frames of SIIT"),
    ({"ip_version": (6, 6), "frame_size": (82, 81)}, r"frame_size\[1\]=81: allowed 82\.\.9018 bytes for IPv6 test "
                                                     r"frames \(.*16 B tag"),
    ({"ip_version": (4, 4), "frame_size": (63, 64)}, r"frame_size\[0\]=63: allowed 64\.\.9018"),
    ({"tag_delay": 10.0}, r"tag_delay=10\.0: allowed 0 <= tag_delay < duration \(10 s\)"),
    ({"tag_delay": -1.0}, r"tag_delay=-1\.0: allowed"),
])
def test_trial_spec_refuses_too_small_frames_and_a_tag_delay_outside_the_trial(kwargs, message):
    with pytest.raises(InvalidTrialSpec, match=message):
        TrialSpec(offered_load=1000, duration=10, **kwargs)


def test_the_smallest_ipv6_frame_is_the_testers_tag_alone_but_84_bytes_for_siit():
    # Plain IPv6: Ethernet 14 + IPv6 40 + UDP 8 + the testers' 16 B tag (swtester's payload, TRex's latency
    # signature) + FCS 4 = 82 B (RFC 5180's 78 B has no room for that tag; siitperf's 84 B is its SIIT bound, which
    # it applies to every IPv6 frame because its one size parameter is the IPv6 one). SIIT: the IPv6 frame is the
    # IPv4 one + 20 B, and 64 B is Ethernet's minimum, so the IPv6 side starts at 84 B (siitperf: 84..1538).
    assert TrialSpec(offered_load=1000, duration=10, ip_version=(6, 6), frame_size=(82, 82)).frame_size == (82, 82)
    assert TrialSpec(offered_load=1000, duration=10, ip_version=(6, 4), frame_size=(84, 64)).frame_size == (84, 64)


def test_siit_sizes_and_a_tag_delay_inside_the_trial_are_accepted():
    spec = TrialSpec(offered_load=1000, duration=120, ip_version=(6, 4), frame_size=(84, 64), tag_delay=60,
                     latency_mode="tagged", latency_frames=500)
    assert TrialSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize("spread", ["microseconds", "nanoseconds to seconds"])
def test_percentiles_in_one_pass_agree_with_the_librarys_value_at_percentile(spread):
    """Latency.percentiles reads the histogram's buckets itself: every percentile is the library's own bucket, in the
    first half-bucket (below 1024 ns, exact) as in the wide buckets of seconds, read at its upper edge (the minimum,
    q = 0, at its lower edge: each an outer bound of the delays in the bucket)."""
    rng = __import__("numpy").random.default_rng(1)
    if spread == "microseconds":
        delays = 10e-6 + rng.exponential(3e-6, 5000)
    else:
        delays = 10 ** rng.uniform(-9, 0.5, 5000)  # 1 ns .. 3 s, log-uniform: every bucket of that range
    lat = Latency.from_delays(delays)
    histogram = HdrHistogram.decode(lat.histogram)
    qs = [0, 0.01, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100]
    for q, value in zip(qs, lat.percentiles(qs), strict=True):
        rank = max(1, math.ceil(round(q * 5000 / 100, 9)))
        bucket = histogram.get_value_at_percentile(100 * rank / 5000)
        edge = histogram.get_lowest_equivalent_value if q == 0 else histogram.get_highest_equivalent_value
        expected = edge(bucket)
        assert value == expected * 1e-9, q
