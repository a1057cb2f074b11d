"""Tester self-test: the tester's own loss-free ceiling, measured with its ports looped back.

Run on the loopback topology (tester port 0 wired to port 1, no DUT), an RFC
2544 throughput search per frame size finds the highest rate the tester
itself sends and receives without loss (Lencse & Szilagyi 2024, section 4.2).
A DUT result within 10 % of that ceiling may describe the tester, not the DUT.

The loopback lab is not the DUT lab, so the ceilings are kept per machine:
``trexlab selftest`` on a loopback lab records them in the ceilings file
(default ``results/tester-ceilings.json``), one entry per tester (host and
CPUs), generator, frame size and traffic directions, with when and by which
run they were measured. Throughput, MLRsearch, FLR, latency and PDV runs of
the CLI look the matching ceiling up there when no ``tester_ceiling`` is
given, compare against it, and record which one in their provenance.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import socket
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from trexlab.params import check_range
from trexlab.procedures import throughput
from trexlab.repetition import repetition_dir
from trexlab.store import write_json_atomic
from trexlab.trial import SIIT_SIZE_DELTA, TrialSpec

METHOD = "tester self-test (RFC 2544 throughput, ports looped back)"
#: Where the self-test records the tester's ceilings and other procedures look them up.
CEILINGS_FILE = Path("results/tester-ceilings.json")


@dataclass(frozen=True)
class Params:
    frame_sizes: tuple[int, ...] = (64,)
    max_rate: float | None = None
    min_rate: float = 100.0
    resolution: float | None = None
    loss_tolerance_percent: float = 0.0
    trial_duration: float = 60.0
    media: str = "10g"

    def __post_init__(self) -> None:
        if not self.frame_sizes:
            check_range("frame_sizes", 0, 1)
        for size in self.frame_sizes:
            check_range("frame_sizes", size, 64, 9018 - SIIT_SIZE_DELTA, integer=True)
        throughput.Params(**self.search_params())  # the search's own checks

    def search_params(self) -> dict:
        return {k: getattr(self, k) for k in ("max_rate", "min_rate", "resolution", "loss_tolerance_percent",
                                              "trial_duration", "media")}


@dataclass
class SelfTestResult:
    params: Params
    ceilings: dict  # frame size -> fps per direction (None: below min_rate)
    searches: dict
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "procedure": "selftest",
            "method": METHOD,
            "ceilings_fps": {str(k): v for k, v in self.ceilings.items()},
            "searches": self.searches,
            "notes": self.notes,
            "params": asdict(self.params),
            "headline": {f"ceiling_{k}B_fps": v for k, v in self.ceilings.items()},
        }


def run(generator, traffic: TrialSpec, params: Params, on_trial=None, progress=None) -> SelfTestResult:
    ceilings, searches, notes = {}, {}, []
    search = throughput.Params(**params.search_params())
    for size in params.frame_sizes:
        sized = dataclasses.replace(traffic, frame_size=(size, size))
        result = throughput.run(generator, sized, search, on_trial, progress)
        ceilings[size] = result.throughput
        searches[str(size)] = result.to_dict()
        notes.extend(f"{size} B: {n}" for n in result.notes)
    return SelfTestResult(params, ceilings, searches, notes)


# -- the ceilings file: what a self-test found, for the procedures that run on other labs ----------------------


def tester_identity(lab) -> dict:
    """The tester a ceiling belongs to: the machine that runs the generator, and its CPUs.

    A namespace tester (local and VM labs) runs on this machine whatever the lab, so its loopback lab and
    its DUT labs share one identity; a remote tester is its management address. No lab: the simulated tester.
    """
    if lab is None:
        return {"host": "sim", "cpus": []}
    tester = lab.tester
    return {"host": socket.gethostname() if tester.netns else tester.ansible_host, "cpus": list(tester.cpus)}


#: What a ceiling is recorded and looked up by.
KEY = ("host", "cpus", "generator", "frame_size", "directions")


def ceiling_key(generator: str, lab, traffic: TrialSpec) -> dict:
    """What a ceiling is looked up by. Of two frame sizes (SIIT), the larger: its ceiling is the lower one."""
    return {**tester_identity(lab), "generator": generator, "frame_size": max(traffic.frame_size),
            "directions": traffic.directions}


def _matches(entry: dict, key: dict) -> bool:
    return all(entry.get(k) == v for k, v in key.items())


def read_ceilings(path: str | Path = CEILINGS_FILE) -> list[dict]:
    try:
        return json.loads(Path(path).read_text()).get("ceilings", [])
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        raise ValueError(f"ceilings file {path}: not readable ({exc.__class__.__name__}); "
                         "delete it and run trexlab selftest again") from None


def find_ceiling(generator: str, lab, traffic: TrialSpec, path: str | Path = CEILINGS_FILE) -> dict | None:
    """The recorded ceiling of this tester, generator, frame size and directions, or None."""
    key = ceiling_key(generator, lab, traffic)
    return next((e for e in read_ceilings(path) if _matches(e, key)), None)


def record_ceilings(results: list[dict], run_dir: str | Path, generator: str, lab, traffic: TrialSpec,
                    path: str | Path = CEILINGS_FILE) -> list[dict]:
    """Record a finished self-test's ceilings (the lowest over its repetitions); returns the new entries.

    Replaces earlier entries of the same tester, generator, frame size and directions; the file is
    rewritten atomically under a lock, so concurrent self-tests lose nothing.
    """
    path = Path(path)
    measured = datetime.now(UTC).isoformat(timespec="seconds")
    entries = []
    for size in results[0]["ceilings_fps"]:
        found = [r["ceilings_fps"].get(size) for r in results]
        passed = [c for c in found if c is not None]
        if not passed:
            continue  # not even min_rate passed: nothing to compare DUT results against
        sized = dataclasses.replace(traffic, frame_size=(int(size), int(size)))
        entries.append({**ceiling_key(generator, lab, sized), "ceiling_fps": min(passed),
                        "repetitions_fps": found, "measured": measured, "selftest_run": str(run_dir),
                        "lab": lab.name if lab else None})
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = [e for e in read_ceilings(path) if not any(_matches(e, {k: n[k] for k in KEY}) for n in entries)]
        write_json_atomic(path, {"ceilings": kept + entries})
    return entries


def record_selftest(run_dir: str | Path, repetitions: int, generator: str, lab, traffic: TrialSpec,
                    path: str | Path = CEILINGS_FILE) -> str:
    """Record a finished, repeated self-test's ceilings for the other procedures; a line saying what was done.

    Only a loopback lab measures the tester alone: on any other topology nothing is recorded, and the line
    says why."""
    if lab is not None and lab.topology != "loopback":
        return (f"ceilings not recorded: lab {lab.name} has topology {lab.topology}, so they include a DUT; "
                "the tester's own ceiling comes from a loopback lab (make lab-up TOPOLOGY=loopback)")
    try:
        results = [json.loads((repetition_dir(Path(run_dir), k) / "result.json").read_text())
                   for k in range(1, repetitions + 1)]
        entries = record_ceilings(results, run_dir, generator, lab, traffic, path)
    except (ValueError, OSError) as exc:
        return f"ceilings not recorded: {exc}"
    found = ", ".join(f"{e['frame_size']} B {e['ceiling_fps']:.0f} fps" for e in entries) or "none"
    return f"tester ceilings recorded in {path}: {found}"


def ceiling_for(params, traffic: TrialSpec, generator: str, lab, path: str | Path = CEILINGS_FILE):
    """(params, record): the procedure's params with the recorded ceiling filled in when it compares results
    against one and none was given, and what it compares against (for the provenance; None: it compares
    against none)."""
    if "tester_ceiling" not in {f.name for f in dataclasses.fields(params)}:
        return params, None
    if params.tester_ceiling is not None:
        return params, {"ceiling_fps": params.tester_ceiling, "source": "given as tester_ceiling"}
    entry = find_ceiling(generator, lab, traffic, path)
    if entry is None:
        return params, {"ceiling_fps": None, "source": f"none recorded in {path}",
                        "looked_up": ceiling_key(generator, lab, traffic)}
    return dataclasses.replace(params, tester_ceiling=entry["ceiling_fps"]), {**entry, "source": str(path)}
