"""Repeating a procedure: every repetition is a run directory, finished ones are never redone.

The seed papers' point is that one figure proves little: RFC 2544 asks for no
repetition, siitperf's authors repeat 20 times and report median, minimum and
maximum. ``repeat`` runs a procedure N times into ``<parent>/rep-<k>/``; when
it is started again on the same parent it keeps finished repetitions (those
with result.json) and redoes the unfinished one, so an interrupted campaign
loses no repetition and duplicates none.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path

from trexlab.procedures import PROCEDURES
from trexlab.stats import summarize
from trexlab.store import RESULT, RunDir, is_finished, write_json_atomic
from trexlab.trial import TrialSpec

DEFAULT_REPETITIONS = 20
SUMMARY = "summary.json"


def procedure_module(name: str):
    return importlib.import_module(PROCEDURES[name])


def repetition_dir(parent: Path, k: int) -> Path:
    return Path(parent) / f"rep-{k:03d}"


def repeat(procedure: str, generator, traffic: TrialSpec, params, repetitions: int, parent: str | Path,
           provenance: dict, progress: Callable[[str, dict], None] | None = None) -> dict:
    """Run (or finish) N repetitions; write and return the summary of their headline figures."""
    module = procedure_module(procedure)
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    results = []
    for k in range(1, repetitions + 1):
        path = repetition_dir(parent, k)
        if is_finished(path):
            results.append(json.loads((path / RESULT).read_text()))
            if progress:
                progress("repetition", {"repetition": k, "repetitions": repetitions, "skipped": True})
            continue
        if progress:
            progress("repetition", {"repetition": k, "repetitions": repetitions})
        run = RunDir(path, {**provenance, "procedure": procedure, "repetition": k, "repetitions": repetitions})
        try:
            result = module.run(generator, traffic, params, on_trial=run.append_trial, progress=progress)
            data = result.to_dict()
            run.finish(data)
        finally:
            run.close()
        results.append(data)
    summary = summarize_headlines(results)
    write_json_atomic(parent / SUMMARY, {"procedure": procedure, "repetitions": repetitions, "figures": summary})
    return summary


def summarize_headlines(results: list[dict]) -> dict[str, dict]:
    """Per headline figure (e.g. throughput_fps), its statistics over the repetitions."""
    names: list[str] = []
    for result in results:
        names.extend(n for n in result.get("headline", {}) if n not in names)
    return {name: summarize(r.get("headline", {}).get(name) for r in results) for name in names}
