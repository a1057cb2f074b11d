"""The results store: one directory per run, trials appended the moment they end.

Layout (docs/architecture.md):

    <run>/provenance.json   what produced the run
    <run>/trials.jsonl      one JSON object per trial, flushed and fsynced as it ends
    <run>/result.json       the procedure's result, written last (atomically): absent = unfinished

A crash therefore loses at most the trial that was running, and a run
directory without result.json is recognisably unfinished.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from trexlab.trial import TrialResult

PROVENANCE = "provenance.json"
TRIALS = "trials.jsonl"
RESULT = "result.json"


#: What an infinite number is written as. JSON has no Infinity or NaN (RFC 8259): a file with those tokens is
#: refused by strict parsers (jq, browsers, most languages). NaN ("no value") is written as null; an infinity
#: carries meaning (a latency percentile among lost tags, a transfer that moved nothing), so it is written as
#: this marker string and read back as a float by ``loads``.
INFINITY = "inf"
NEGATIVE_INFINITY = "-inf"


def strict(value):
    """``value`` with NaN as None and infinities as their marker strings, so strict JSON can hold it."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return INFINITY if value > 0 else NEGATIVE_INFINITY
        return value
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value


def restore(value):
    """The inverse of ``strict`` for infinities: marker strings back to floats (null stays None)."""
    if isinstance(value, str):
        return math.inf if value == INFINITY else -math.inf if value == NEGATIVE_INFINITY else value
    if isinstance(value, dict):
        return {k: restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore(v) for v in value]
    return value


def _json_default(value):
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars (a float32 NaN is no float: made strict here)
        return strict(value.item())
    if isinstance(value, set):
        return strict(list(value))
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(data, **kwargs) -> str:
    """Strict JSON text (no NaN or Infinity tokens: allow_nan=False refuses any that slipped through)."""
    return json.dumps(strict(data), allow_nan=False, default=_json_default, **kwargs)


def loads(text: str):
    """JSON written by ``dumps`` (or by older trexlab, with Infinity/NaN tokens), infinities as floats."""
    return restore(json.loads(text))


def read_json(path: str | os.PathLike):
    return loads(Path(path).read_text())


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        f.write(dumps(data, indent=2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class RunDir:
    """A run directory being written."""

    def __init__(self, path: str | os.PathLike, provenance: dict):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path / PROVENANCE, provenance)
        # A rerun of an unfinished run starts its trial log afresh: its old trials belong to no result.
        self._trials = open(self.path / TRIALS, "w")
        self.seq = 0

    def append_trial(self, result: TrialResult, context: dict | None = None) -> None:
        self.seq += 1
        record = {"seq": self.seq, "time": time.time(), "context": context or {}, **result.to_dict()}
        self._trials.write(dumps(record) + "\n")
        self._trials.flush()
        os.fsync(self._trials.fileno())

    def finish(self, result: dict) -> None:
        self._trials.close()
        write_json_atomic(self.path / RESULT, result)

    def close(self) -> None:
        if not self._trials.closed:
            self._trials.close()


def is_finished(path: str | os.PathLike) -> bool:
    return (Path(path) / RESULT).is_file()


def run_dirs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Every run directory (one holding provenance.json) at or below the given paths, sorted."""
    found = set()
    for path in paths:
        path = Path(path)
        if (path / PROVENANCE).is_file():
            found.add(path)
        found.update(p.parent for p in path.rglob(PROVENANCE))
    return sorted(found)


def _flatten(prefix: str, data, out: dict) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), value, out)
    else:
        out[prefix] = data


def load_runs(paths: Iterable[str | os.PathLike] | str | os.PathLike) -> pd.DataFrame:
    """One row per run: run dir, finished flag, flattened provenance and result (lists kept whole)."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    rows = []
    for run in run_dirs(paths):
        row = {"run": str(run), "finished": is_finished(run)}
        _flatten("provenance", read_json(run / PROVENANCE), row)
        if row["finished"]:
            _flatten("result", read_json(run / RESULT), row)
        rows.append(row)
    return pd.DataFrame(rows)


def read_trials(run: str | os.PathLike) -> list[dict]:
    """The trials of one run; a last line cut short by a crash is ignored."""
    records = []
    path = Path(run) / TRIALS
    if not path.is_file():
        return records
    for line in path.read_text().splitlines():
        try:
            records.append(loads(line))
        except json.JSONDecodeError:
            break
    return records


def load_trials(paths: Iterable[str | os.PathLike] | str | os.PathLike) -> pd.DataFrame:
    """One row per trial of every run found: run dir plus the flattened trial record."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    rows = []
    for run in run_dirs(paths):
        for record in read_trials(run):
            row = {"run": str(run)}
            _flatten("", record, row)
            rows.append(row)
    return pd.DataFrame(rows)


# -- campaigns: one line per sweep-point attempt ------------------------------------------------

POINTS = "points.jsonl"


def append_point_record(campaign: str | os.PathLike, record: dict) -> None:
    """Append one point attempt (done / failed + error) to a campaign's log, durably."""
    with open(Path(campaign) / POINTS, "a") as f:
        f.write(dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_point_log(campaign: str | os.PathLike) -> dict[str, dict]:
    """The last recorded attempt of each point of a campaign (a line cut short by a crash is skipped)."""
    latest: dict[str, dict] = {}
    path = Path(campaign) / POINTS
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                record = loads(line)
            except json.JSONDecodeError:
                continue
            latest[record["point"]] = record
    return latest
