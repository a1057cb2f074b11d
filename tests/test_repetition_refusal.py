"""A procedure that refuses its input on the lab, before its first trial (RFC 6349's window against the nodes'
kernel limit), changes nothing: the run directory a fresh run made goes again; an earlier run's stays."""

from types import SimpleNamespace

import pytest

from trexlab.generators import create_generator
from trexlab.params import InvalidParameter
from trexlab.plan import repetition
from trexlab.trial import TrialSpec


def refusing(monkeypatch):
    def run(context, params):
        raise InvalidParameter("window_bytes", 8388608, "<= 212992 bytes (net.core.rmem_max)")
    monkeypatch.setattr(repetition, "procedure_of", lambda name: SimpleNamespace(run=run))


def test_a_refusal_before_the_first_trial_leaves_no_run_directory(monkeypatch, tmp_path):
    refusing(monkeypatch)
    with pytest.raises(InvalidParameter):
        repetition.repeat("rfc6349", create_generator("sim"), TrialSpec(offered_load=1000, duration=1.0), None, 1,
                          tmp_path / "bad", {})
    assert not (tmp_path / "bad").exists()


def test_a_refusal_keeps_what_an_earlier_run_wrote(monkeypatch, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "kept").write_text("x")
    refusing(monkeypatch)
    with pytest.raises(InvalidParameter):
        repetition.repeat("rfc6349", create_generator("sim"), TrialSpec(offered_load=1000, duration=1.0), None, 1,
                          tmp_path / "old", {})
    assert (tmp_path / "old" / "kept").read_text() == "x"
