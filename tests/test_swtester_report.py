"""swtester's JSON report read into the trial contract: a report that parses but is not whole (a direction or a count
missing, a count that is no count) is the generator's error, never a trial of the counts that are there. And
describe()'s probe takes a JSON without the send methods as no answer. No lab: the reports are made up here."""

import dataclasses
import json
import subprocess

import pytest
import yaml

from trexlab.generators.software import TRIAL_ID_SPACE, SoftwareGenerator, trial_from_report
from trexlab.testbed.inventory import load_lab
from trexlab.trial import GeneratorError, TrialSpec

BOTH = TrialSpec(offered_load=1_000, duration=1.0, receive_tail=0.5)
TAGGED = TrialSpec(offered_load=1_000, duration=1.0, directions="forward", latency_mode="tagged", latency_frames=10)


def direction(**changes) -> dict:
    d = {"intended": 1_000, "sent": 1_000, "received": 1_000, "late": 0, "duplicates": 0, "reordered": 0,
         "tester_drops": 0, "foreign": 0, "send_duration": 0.999, "tags_sent": 0, "tags_received": 0,
         "tags_lost_or_late": 0, "latency": None}
    d.update(changes)
    return d


def report(**directions) -> dict:
    return {"tester": "swtester", "version": "0.1", "directions": directions}


def test_a_whole_report_is_read():
    trial = trial_from_report(BOTH, report(forward=direction(), reverse=direction(received=990)))
    assert trial.directions["reverse"].frames_lost == 10 and trial.frames_intended == 2_000


def test_a_report_without_a_direction_the_trial_ran_is_an_error():
    """It was a bidirectional trial of the forward direction alone: valid, nothing lost."""
    with pytest.raises(GeneratorError, match=r"directions \['forward'\], the trial ran \['forward', 'reverse'\]"):
        trial_from_report(BOTH, report(forward=direction()))
    with pytest.raises(GeneratorError, match=r"directions None"):
        trial_from_report(BOTH, {"tester": "swtester"})


@pytest.mark.parametrize(("changes", "message"), [
    ({"received": None}, "reverse.received is None, not a count"),  # a TypeError out of the trial
    ({"received": -5}, "reverse.received is -5, not a count"),  # a loss of 100.5 %
    ({"late": 1.5}, "reverse.late is 1.5, not a count"),
    ({"duplicates": True}, "reverse.duplicates is True, not a count"),
    ({"send_duration": float("nan")}, "reverse.send_duration is nan, not a time"),
])
def test_a_count_that_is_no_count_is_an_error(changes, message):
    with pytest.raises(GeneratorError, match=message):
        trial_from_report(BOTH, report(forward=direction(), reverse=direction(**changes)))


def test_a_missing_count_is_an_error_not_a_traceback():
    counts = direction()
    del counts["received"]  # a KeyError out of the trial
    with pytest.raises(GeneratorError, match="forward.received is None, not a count"):
        trial_from_report(BOTH, report(forward=counts, reverse=direction()))


def test_a_latency_trial_needs_its_tags_and_histogram():
    without_tags = direction(latency={})
    del without_tags["tags_received"]
    with pytest.raises(GeneratorError, match="forward.tags_received is None"):
        trial_from_report(TAGGED, report(forward=without_tags))
    with pytest.raises(GeneratorError, match="forward.latency is None, not a histogram"):
        trial_from_report(TAGGED, report(forward=direction()))


def static_lab(tmp_path):
    """A loopback lab whose tester is reached over SSH."""
    ports = [{"index": i, "name": f"port{i}", "mac": f"02:00:00:00:00:0{i + 1}", "peer_mac": f"02:00:00:00:00:0{2 - i}"}
             for i in (0, 1)]
    inventory = {"all": {"vars": {"trexlab_lab": {"name": "rp", "kind": "static", "topology": "loopback"}},
                         "children": {"testers": {"hosts": {"tester": {"ansible_host": "192.0.2.10",
                                                                      "test_ports": ports}}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return load_lab(str(tmp_path / "hosts.yml"))


@pytest.mark.parametrize("answer", ["[]", "{}", '{"send_method": "tx_ring"}',
                                    '{"send_method": "tx_ring", "directions": {"forward": null}}'])
def test_a_probe_answer_without_its_methods_is_no_answer(tmp_path, monkeypatch, answer):
    """describe() raised a KeyError, TypeError or AttributeError out of the run's provenance."""
    generator = SoftwareGenerator(static_lab(tmp_path), cross_check=False)
    monkeypatch.setattr("trexlab.generators.software.subprocess.run",
                        lambda argv, **_: subprocess.CompletedProcess(argv, 0, answer, ""))
    assert generator.probe() == {"send_method": None} and generator.probed == {}


def test_consecutive_trials_never_share_a_trial_id(tmp_path, monkeypatch):
    """swtester's own default id (its clock and pid) was the same for two trials in a row once in 65,536: frames of
    the trial before, still draining from the DUT, then counted as this one's. Two generators, as a campaign makes
    one per point."""
    ports = [{"index": i, "name": f"port{i}", "mac": f"02:00:00:00:00:0{i + 1}", "peer_mac": f"02:00:00:00:00:0{2 - i}"}
             for i in (0, 1)]
    inventory = {"all": {"vars": {"trexlab_lab": {"name": "rp", "kind": "local", "topology": "loopback"}},
                         "children": {"testers": {"hosts": {"tester": {
                             "ansible_host": "192.0.2.10", "test_ports": ports, "trexlab_netns": "tl-rp-tester"}}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    lab = load_lab(str(tmp_path / "hosts.yml"))
    spec = TrialSpec(offered_load=1_000, duration=1.0, directions="forward")
    ids = []

    def swtester(argv, **_):
        ids.append(argv[argv.index("--trial-id") + 1])
        return subprocess.CompletedProcess(argv, 0, json.dumps({"directions": {"forward": direction()}}), "")

    monkeypatch.setattr("trexlab.generators.software.subprocess.run", swtester)
    for _ in range(2):
        generator = SoftwareGenerator(lab, cross_check=False, softnet_stat=None, proc_stat=None)
        for _ in range(3):
            generator.run_trial(spec)
    assert len(ids) == 6 and all(0 <= int(i) < TRIAL_ID_SPACE for i in ids)
    assert all(a != b for a, b in zip(ids, ids[1:], strict=False)), ids


def test_counters_not_read_after_the_trial_are_said_not_cross_checked():
    """With the counters read before the trial and not after (nft failed), the cross-check was skipped unseen, as
    if sender, receiver and nftables had agreed."""
    before = {"port1_ipv4": 5, "port0_ipv4": 5}
    note = ("the tester's nftables counters could not be read after the trial: the receivers' counts are not "
            "cross-checked")
    assert note in trial_from_report(BOTH, report(forward=direction(), reverse=direction()), before=before).notes
    agreed = {"port1_ipv4": 1_005, "port0_ipv4": 1_005}
    assert trial_from_report(BOTH, report(forward=direction(), reverse=direction()), before=before,
                             after=agreed).notes == ()


@pytest.mark.parametrize("count", ["wrong_length", "zero_checksum", "atomic_fragments", "ipv4_options",
                                   "bad_checksum", "bad_ipv4_header_checksum"])
def test_frames_the_dut_changed_are_in_the_nftables_cross_check(count):
    """nftables counts every test frame that reaches the port, also one the receiver counts as lost because the DUT
    padded or cut it or wrote a UDP checksum of zero over IPv6: the cross-check compared nftables' count with the
    frames received alone and said that nftables and the receiver disagreed."""
    before, after = {"port1_ipv4": 5, "port0_ipv4": 5}, {"port1_ipv4": 1_005, "port0_ipv4": 1_005}
    changed = direction(received=997, **{count: 3})
    notes = trial_from_report(BOTH, report(forward=changed, reverse=direction()), before=before, after=after).notes
    assert not any("nftables counted" in n for n in notes), notes


@pytest.mark.parametrize("answer", ["not json", "[]", '{"nftables": [{"counter": {}}]}'])
def test_counters_that_are_not_nfts_json_are_no_counters(tmp_path, monkeypatch, answer):
    """They raised out of the trial (JSONDecodeError, TypeError, KeyError)."""
    generator = SoftwareGenerator(static_lab(tmp_path), cross_check=True)
    monkeypatch.setattr("trexlab.generators.software.subprocess.run",
                        lambda argv, **_: subprocess.CompletedProcess(argv, 0, answer, ""))
    assert generator.counters() is None


@pytest.mark.parametrize("histogram", [{}, {"unit_ns": 1, "lowest": 1, "highest": 3600 * 10**9,
                                            "significant_digits": 3, "total": 1, "buckets": [[5]]}])
def test_a_histogram_that_is_not_one_is_an_error(histogram):
    """A KeyError or ValueError out of the trial before."""
    with pytest.raises(GeneratorError, match="swtester's histogram is not one"):
        trial_from_report(TAGGED, report(forward=direction(tags_sent=1, tags_received=1, latency=histogram)))


@pytest.mark.parametrize(("count", "note"), [
    ("fragments", "forward: 1,000 test frame(s) arrived fragmented (their first fragment counted by swtester): not "
                  "received whole, so counted as lost (RFC 2544 counts the frames a DUT forwards)"),
    ("wrong_length", "forward: 1,000 test frame(s) arrived with another length than they were sent with (translated, "
                     "where a SIIT DUT changes the IP version): padded or cut by the DUT (RFC 2544 section 10: the "
                     "tester checks each frame's length), not the frames sent, so counted as lost"),
    ("zero_checksum", "forward: 1,000 test frame(s) arrived with a UDP checksum of zero over IPv6, which an IPv6 "
                      "receiver discards (RFC 8200 section 8.1; a translator that updates the checksum incrementally "
                      "may write 0 for 0xffff): not frames a host would take, so counted as lost"),
    ("atomic_fragments", "forward: 1,000 test frame(s) arrived as IPv6 atomic fragments (a Fragment header, offset 0 "
                         "and More clear, 8 bytes longer than the frames sent; RFC 6145 translators added one where "
                         "Don't Fragment was clear, RFC 8021 deprecates them): not the frames sent, so counted as "
                         "lost"),
    ("ipv4_options", "forward: 1,000 test frame(s) arrived with IPv4 options the frames sent had not (forwarding "
                     "adds none, nor does a SIIT translator, RFC 7915 section 5.1): changed by the DUT, so counted as "
                     "lost"),
    ("bad_checksum", "forward: 1,000 test frame(s) arrived with a UDP checksum that does not verify over their "
                     "pseudo-header (the addresses they arrived with), UDP header and payload, which every receiver "
                     "discards (RFC 768, RFC 8200 section 8.1; a translator must update it for its new addresses, RFC "
                     "7915): not frames a host would take, so counted as lost"),
    ("bad_ipv4_header_checksum", "forward: 1,000 test frame(s) arrived with an IPv4 header checksum that does not "
                                 "verify, which every receiver discards (RFC 1122 section 3.2.1.2, RFC 1812 section "
                                 "5.2.2; a DUT that rewrites the TTL or an address must update it, RFC 1624): not "
                                 "frames a host would take, so counted as lost"),
])
def test_test_frames_that_arrived_fragmented_or_of_another_length_are_said_lost(count, note):
    """swtester counts a test frame whose first fragment arrived in `fragments`, one that arrived padded or cut in
    `wrong_length`, an IPv6 one with a UDP checksum of zero in `zero_checksum`, not as received (the DUT did not
    forward the frame as sent, or not as a host would take it): the trial's notes say so, the loss stands."""
    trial = trial_from_report(BOTH, report(forward=direction(received=0, **{count: 1_000}), reverse=direction()))
    assert trial.directions["forward"].frames_lost == 1_000
    assert [n for n in trial.notes if n.startswith("forward: 1,000 test frame(s) arrived")] == [note]
    assert not any("arrived" in n for n in trial_from_report(BOTH, report(forward=direction(),
                                                                          reverse=direction())).notes)
    with pytest.raises(GeneratorError, match=f"forward.{count} is -1, not a count"):
        trial_from_report(BOTH, report(forward=direction(**{count: -1}), reverse=direction()))


def test_frames_the_testers_receive_ring_dropped_are_said_to_be_the_testers():
    trial = trial_from_report(BOTH, report(forward=direction(received=990, tester_drops=10), reverse=direction()))
    assert trial.directions["forward"].tester_drops == 10 and trial.directions["forward"].frames_lost == 10
    assert [n for n in trial.notes if "tp_drops" in n] == [
        "forward: swtester's receive ring dropped 10 frame(s) (PACKET_STATISTICS tp_drops): the tester's loss, not "
        "the DUT's, counted as lost, so the trial is invalid"]
    assert not trial.valid and trial.tester_drops == 10


def test_the_tester_drops_note_says_how_long_the_ring_holds_frames():
    """swtester's report gives the seconds of frames its receive ring holds at the trial's rate (ring_seconds): the
    note of its drops says how long its receiver could be held up before them; tcx (no ring) gives null."""
    trial = trial_from_report(BOTH, report(forward=direction(received=990, tester_drops=10, ring_seconds=0.4096),
                                           reverse=direction(ring_seconds=None)))
    assert [n for n in trial.notes if "tp_drops" in n] == [
        "forward: swtester's receive ring dropped 10 frame(s) (PACKET_STATISTICS tp_drops; the ring holds 409.6 ms "
        "of frames at the trial's rate): the tester's loss, not the DUT's, counted as lost, so the trial is invalid"]


def test_foreign_test_frames_are_said_and_in_the_nftables_cross_check():
    """Test frames that are not this trial's (an earlier trial's, held by the DUT beyond that trial's receive tail;
    the other direction's; beyond this trial's sequence numbers) reach the port and nftables counts them: the
    receiver counts them foreign and not received, which no note said, and the cross-check then reported a
    disagreement of nftables and the receiver instead."""
    before, after = {"port1_ipv4": 5, "port0_ipv4": 5}, {"port1_ipv4": 1_007, "port0_ipv4": 1_005}
    notes = trial_from_report(BOTH, report(forward=direction(foreign=2), reverse=direction()), before=before,
                              after=after).notes
    assert not any("nftables counted" in n for n in notes), notes
    assert [n for n in notes if "foreign" in n] == [
        "forward: 2 test frame(s) of another trial, of the other direction or beyond this trial's frames arrived "
        "(foreign): not this trial's, so not counted (an earlier trial's frames: the DUT held them beyond that "
        "trial's receive tail)"], notes


def test_the_generator_waits_for_the_dut_to_restabilize_after_the_trial(tmp_path, monkeypatch):
    """RFC 2544 section 23 e: the trial's last phase, after the receive tail, is the wait for the DUT to restabilize
    (TrialSpec.restabilize_wait): the tester sends nothing, so the next trial finds the DUT settled."""
    events = []

    def swtester(argv, **_):
        events.append("trial")
        return subprocess.CompletedProcess(argv, 0, json.dumps(report(forward=direction())), "")

    monkeypatch.setattr("trexlab.generators.software.subprocess.run", swtester)
    monkeypatch.setattr("trexlab.trial.time.sleep", lambda seconds: events.append(("wait", seconds)))
    generator = SoftwareGenerator(static_lab(tmp_path), cross_check=False, softnet_stat=None, proc_stat=None)
    spec = TrialSpec(offered_load=1_000, duration=1.0, directions="forward")
    generator.run_trial(spec)
    generator.run_trial(dataclasses.replace(spec, restabilize_wait=5.0))
    assert events == ["trial", "trial", ("wait", 5.0)], events
