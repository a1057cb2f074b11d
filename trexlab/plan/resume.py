"""Resuming a repetition inside its search: the trials already logged are replayed, not run again.

The procedures are deterministic given their trials' outcomes: the same results lead
to the same next load. A repetition interrupted mid-search (crash, SIGKILL, power
cut) left its finished trials in trials.jsonl (store.RunDir fsyncs each one). When it
is run again, the procedure starts afresh but its generator is wrapped: while the
trial asked for is the next one in the log (same load, duration and traffic), the
logged result is handed back at once; the first trial beyond the log, or one that
differs from it, runs on the lab and ends the replay (a log that differs, e.g.
after the spec changed, is dropped from there on). So a crash costs at most the trial
that was running.

A generator with a random stream of its own (the simulated SUT) is told of every
trial it does not run (``skip_trials``), so that a resumed run draws the same
numbers as an uninterrupted one and its results are the same.
"""

from __future__ import annotations

from trexlab.trial import DirectionResult, Latency, TrialResult, TrialSpec

#: DirectionResult.to_dict adds these derived fields; they are not constructor arguments.
_DERIVED = ("frames_lost", "loss_ratio", "achieved_rate")


def trial_from_record(record: dict) -> TrialResult | None:
    """A logged trial record as the TrialResult it was; None for a record that is not a generator trial
    (a TCP test, an HTTP download: those procedures are not replayed)."""
    if "spec" not in record or "directions" not in record:
        return None
    directions = {}
    for name, d in record["directions"].items():
        data = {k: v for k, v in d.items() if k not in _DERIVED}
        if data.get("latency") is not None:
            data["latency"] = Latency.from_dict(data["latency"])
        directions[name] = DirectionResult(**data)
    return TrialResult(spec=TrialSpec.from_dict(record["spec"]), directions=directions,
                       generator=record.get("generator", ""), notes=tuple(record.get("notes") or ()),
                       host_drops=record.get("host_drops", 0), host_steal=record.get("host_steal", 0.0))


def skip_trials(generator, count: int) -> None:
    """Tell a generator that `count` trials of an uninterrupted run happened without it (see the module doc)."""
    if count:
        generator.skip_trials(count)


class Replay:
    """A generator that hands back logged trials while the procedure asks for them in order, then runs live."""

    def __init__(self, generator, records: list[dict]):
        self.generator = generator
        self.name = generator.name
        self.capabilities = generator.capabilities
        self.lab = generator.lab
        trials = [trial_from_record(r) for r in records]
        # A log holding anything else than generator trials is not replayed (nor is a damaged one).
        replayable = [t for t in trials if t is not None]
        self.pending = list(zip(records, replayable, strict=True)) if len(replayable) == len(trials) else []
        self.replayed: dict[int, dict] = {}  # id(result) -> its logged record, for the store to write back as it was
        self.live = False

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        if not self.live and self.pending and self.pending[0][1].spec == spec:
            record, result = self.pending.pop(0)
            self.replayed[id(result)] = record
            skip_trials(self.generator, 1)
            return result
        self.live = True  # from here on the log (if any is left) no longer describes this run
        self.pending = []
        return self.generator.run_trial(spec)

    def record_of(self, result) -> dict | None:
        """The logged record a replayed result came from (None: a trial run now)."""
        return self.replayed.pop(id(result), None)

    def logger(self, append):
        """An on_trial for the store: `append(result, context, logged)` with the logged record of a replayed trial."""
        return lambda result, context: append(result, context, self.record_of(result))

    def describe(self) -> dict:
        return self.generator.describe()

    def skip_trials(self, count: int) -> None:
        self.generator.skip_trials(count)

    def close(self) -> None:
        pass  # the wrapped generator is the caller's to close
