"""swtester's send method in the trial contract: provenance names the method swtester --probe found, and a trial
that sent otherwise (auto fell back to sendmmsg, say the kernel refused a transmit ring mid-campaign) says so in its
notes. No lab: swtester's JSON is faked here; tests/swtester/test_software_generator.py probes the real one."""

from trexlab.generators.software import trial_from_report
from trexlab.trial import TrialSpec

SPEC = TrialSpec(offered_load=1_000, duration=1.0, directions="forward", receive_tail=0.5)
PROBED = {"send_method": "tx_ring", "send_methods": {"forward": {"method": "tx_ring", "fallback": None}}}
REFUSED = "PACKET_TX_RING refused on port0: Cannot allocate memory"


def report(method: str, fallback: str | None = None) -> dict:
    forward = {"intended": 1_000, "sent": 1_000, "received": 1_000, "late": 0, "duplicates": 0, "reordered": 0,
               "tester_drops": 0, "foreign": 0, "send_duration": 0.999, "send_cpu": 0.01, "valid": True,
               "tags_sent": 0, "tags_received": 0, "tags_lost_or_late": 0, "send_method": method,
               "send_method_fallback": fallback, "threads": 1, "latency": None}
    return {"tester": "swtester", "version": "0.1", "send_method": method, "directions": {"forward": forward}}


def test_a_trial_sent_as_probed_has_no_note():
    assert trial_from_report(SPEC, report("tx_ring"), probed=PROBED).notes == ()


def test_a_trial_that_fell_back_says_how_it_sent_and_why():
    result = trial_from_report(SPEC, report("sendmmsg", REFUSED), probed=PROBED)
    assert result.notes == (f"forward: sent with sendmmsg ({REFUSED}), not tx_ring as probed",)


def test_provenance_without_a_method_leaves_every_trial_naming_its_own():
    assert trial_from_report(SPEC, report("tx_ring"), probed={}).notes == ("forward: sent with tx_ring",)


def test_a_report_read_without_provenance_has_no_note():
    assert trial_from_report(SPEC, report("sendmmsg", REFUSED)).notes == ()
