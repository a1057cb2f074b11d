"""Tester self-test: the tester's own loss-free ceiling, measured with its ports looped back.

Run on the loopback topology (tester port 0 wired to port 1, no DUT), an RFC
2544 throughput search per frame size finds the highest rate the tester
itself sends and receives without loss (Lencse & Szilagyi 2024, section 4.2).
A DUT result within 10 % of that ceiling may describe the tester, not the DUT.

Beside the ceiling, the self-test measures the tester's own *latency floor*:
one RFC 8219 latency trial per frame size through the looped-back ports at
``floor_load_percent`` of the ceiling found, its median and 99.9th percentile
one-way delay. A tester's receive path can dominate a DUT's latency (TRex in
low_end mode adds about half a millisecond, a software tester ~15 us, issue 21),
so latency and PDV results name the floor that applies and warn when their
figure is within FLOOR_FACTOR of it.

The loopback lab is not the DUT lab, so the ceilings are kept per machine:
``trexlab selftest`` on a loopback lab records them in the ceilings file
(default ``results/tester-ceilings.json``), one entry per tester (host and
CPUs), generator, frame size and traffic directions, with when and by which
run they were measured, with the latency floor beside. Throughput, MLRsearch,
FLR, latency and PDV runs of the CLI and campaigns look the matching entry up
there when no ``tester_ceiling`` (``tester_floor_median``/``_p99_9``) is
given, compare against it, and record which one in their provenance.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import math
import os
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from trexlab.params import check_range
from trexlab.plan.repetition import repetition_dir
from trexlab.plan.runplan import RESULTS_ROOT
from trexlab.procedures import throughput
from trexlab.procedures.common import RunContext, generator_traffic_only, no_lab_checks, simulated_cost_of
from trexlab.results.stats import WHOLE
from trexlab.results.store import open_no_link, read_json, write_json_atomic
from trexlab.spec.schema import doc
from trexlab.trial import (
    MAX_FRAME_SIZE,
    MIN_FRAME_SIZE,
    RFC2544_TRIAL_DURATION,
    SIIT_SIZE_DELTA,
    Latency,
    TrialSpec,
    check_trial_frames,
    format_seconds,
)

NAME = "selftest"
TAKES_RATE = False
METHOD = "tester self-test (RFC 2544 section 26.1 throughput, ports looped back)"
#: Where the self-test records the tester's ceilings and other procedures look them up.
CEILINGS_FILE = RESULTS_ROOT / "tester-ceilings.json"
#: A DUT's latency (median, 99.9th percentile) or PDV within this factor of the tester's own floor may
#: describe the tester more than the DUT: it is flagged.
FLOOR_FACTOR = 3.0
#: Tagged frames of the floor trial: RFC 8219's 500 and more, so the 99.9th percentile is a frame's delay.
FLOOR_TAGGED_FRAMES = 1000


_SEARCH = {f.name: f.metadata for f in dataclasses.fields(throughput.Params)}


@dataclass(frozen=True)
class Params:
    frame_sizes: tuple[int, ...] = field(default=(64,), metadata=doc(
        "bytes per frame with FCS, one ceiling search each", minItems=1,
        items={"minimum": MIN_FRAME_SIZE, "maximum": MAX_FRAME_SIZE - SIIT_SIZE_DELTA}))
    # The search's parameters are the throughput search's, declared there.
    max_rate: float | None = field(default=None, metadata=_SEARCH["max_rate"])
    min_rate: float = field(default=100.0, metadata=_SEARCH["min_rate"])
    resolution: float | None = field(default=None, metadata=_SEARCH["resolution"])
    loss_tolerance_percent: float = field(default=0.0, metadata=_SEARCH["loss_tolerance_percent"])
    trial_duration: float = field(default=RFC2544_TRIAL_DURATION, metadata=_SEARCH["trial_duration"])
    media: str = field(default="10g", metadata=_SEARCH["media"])
    # The latency floor's trial runs at this share of the ceiling found (%, 0 = no floor): a DUT is measured
    # below the tester's ceiling, where the tester's own queues are short.
    floor_load_percent: float = field(default=50.0, metadata=doc(
        "% of the ceiling found at which the latency floor's trial runs; 0: no floor", minimum=0, maximum=100))

    def __post_init__(self) -> None:
        if not self.frame_sizes:
            check_range("frame_sizes", 0, 1)
        check_range("floor_load_percent", self.floor_load_percent, 0, 100)
        for size in self.frame_sizes:
            check_range("frame_sizes", size, MIN_FRAME_SIZE, MAX_FRAME_SIZE - SIIT_SIZE_DELTA, integer=True)
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
    floors: dict = field(default_factory=dict)  # frame size -> latency floor (floor_of_trial), when measured

    def to_dict(self) -> dict:
        headline = {ceiling_name(k): v for k, v in self.ceilings.items()}
        for size, floor in self.floors.items():
            headline.update({floor_name(size, key): floor[key] for key in FLOOR_FIGURES})
        # The searches' loss tolerance and resolution are the ceiling's method, disclosed with it as throughput's
        # are (summary.json's method, the CLI's and the report's method line): a ceiling found with a tolerance
        # is higher than a zero-loss one, and every later run is compared against it.
        rules = {s.get("stopping_rule") for s in self.searches.values() if isinstance(s, dict)} - {None}
        return {
            "procedure": NAME,
            "method": METHOD,
            "loss_tolerance_percent": self.params.loss_tolerance_percent,
            **({"stopping_rule": rules.pop()} if len(rules) == 1 else {}),
            "ceilings_fps": {str(k): v for k, v in self.ceilings.items()},
            "latency_floors": {str(k): v for k, v in self.floors.items()},
            # How the floors were measured (the latency_floor_* figures' method): one tagged trial per frame size.
            "latency_floor_method": {"load_percent": self.params.floor_load_percent,
                                     "tagged_frames": FLOOR_TAGGED_FRAMES,
                                     "trial_duration": self.params.trial_duration},
            "searches": self.searches,
            "notes": self.notes,
            "params": asdict(self.params),
            "headline": headline,
            # A ceiling whose search met no failing load (max_rate below what the tester sends) is a lower bound.
            "headline_at_least": {ceiling_name(size): search["throughput_fps"] for size, search in
                                  self.searches.items() if (search.get("headline_at_least") or {})},
        }


needs_tcp_endpoints = generator_traffic_only

#: The latency floor's headline figures: the keys of a floor (floor_of_trial) that go in.
FLOOR_FIGURES = ("median_s", "p99_9_s")


def ceiling_name(size) -> str:
    return f"ceiling_{size}B_fps"


def floor_name(size, key: str) -> str:
    return f"latency_floor_{size}B_{key}"


def headline_names(params: Params, traffic: TrialSpec) -> tuple[str, ...]:
    """The headline figures a run may report: a ceiling per frame size and, with floor_load_percent, its latency
    floor's figures (missing where no ceiling was found)."""
    floors = FLOOR_FIGURES if params.floor_load_percent else ()
    return (*(ceiling_name(size) for size in params.frame_sizes),
            *(floor_name(size, key) for size in params.frame_sizes for key in floors))


def check(plan) -> None:
    """A search range each frame size allows, and trials of 1..2^32 frames in it and in the latency floor's trial (at
    floor_load_percent of a ceiling of at least min_rate) (its searches set no frame timeout: every generator can
    run them)."""
    search = throughput.Params(**plan.params.search_params())
    for size in plan.params.frame_sizes:
        search.rate_limits(dataclasses.replace(plan.traffic, frame_size=(size, size)))
    if plan.params.floor_load_percent:
        check_trial_frames("min_rate x floor_load_percent x trial_duration",
                           search.min_rate * plan.params.floor_load_percent / 100, search.trial_duration)


check_lab = no_lab_checks


cost = simulated_cost_of(NAME)


def run(context: RunContext, params: Params) -> SelfTestResult:
    ceilings: dict[int, float | None] = {}
    searches: dict[str, dict] = {}
    notes: list[str] = []
    floors: dict[int, dict] = {}
    search = throughput.Params(**params.search_params())
    for size in params.frame_sizes:
        sized = context.with_traffic(dataclasses.replace(context.traffic, frame_size=(size, size)))
        result = throughput.run(sized, search)
        ceilings[size] = result.throughput
        searches[str(size)] = result.to_dict()
        notes.extend(f"{size} B: {n}" for n in result.notes)
        if params.floor_load_percent and result.throughput:
            runner = sized.runner(NAME)
            rate = result.throughput * params.floor_load_percent / 100
            trial = runner.run(rate, params.trial_duration, "tester latency floor", latency_mode="tagged",
                               latency_frames=FLOOR_TAGGED_FRAMES)
            floors[size] = floor_of_trial(trial, rate)
            notes.extend(f"{size} B latency floor: {n}" for n in runner.notes())
    return SelfTestResult(params, ceilings, searches, notes, floors)


def floor_of_trial(trial, rate: float) -> dict:
    """The tester's latency floor from a loopback trial: the worse direction's median and 99.9th percentile (s;
    None when that rank fell among lost tags: no floor to compare against)."""
    # The median as the latency procedure's typical latency is one (Latency.median), to compare like with like.
    figures = {"median_s": Latency.median, "p99_9_s": lambda latency: latency.percentile(99.9)}
    floor = {"rate_fps": rate, "tagged_frames": FLOOR_TAGGED_FRAMES, "trial_duration_s": trial.spec.duration}
    for key, figure in figures.items():
        values = [figure(d.latency) for d in trial.directions.values() if d.latency is not None]
        worst = max(values, default=math.nan)
        floor[key] = worst if math.isfinite(worst) else None
    return floor


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


#: What a ceiling is recorded and looked up by: the tester and how it is set up to send (Lencse & Szilagyi 2024,
#: section 4.2, ran the self-test as every measurement ran the tester: 64 B, both directions). A ceiling holds for
#: that set-up only: RFC 4814 ports are two draws per frame in the sender (siitperf's authors measured what they
#: cost their tester), and a generator's own options can set its rate (TESTER_OPTIONS).
KEY = ("host", "cpus", "generator", "generator_options", "frame_size", "directions", "port_mode")
#: Per generator, its options that set what the tester itself sends and receives, part of a ceiling's KEY: swtester's
#: send method and sender threads; the simulated tester's declared ceiling (the sim's other options are its SUT's).
#: The others leave the tester as it is (cross_check reads the DUT's counters; TRex's server is the lab's tester,
#: in tester_identity, its RPC port and warm-up trial change no rate).
TESTER_OPTIONS = {"sim": ("tester_ceiling",), "software": ("send_method", "sender_threads"), "trex": ()}


def tester_options(generator: str, options: Mapping | None) -> dict:
    """The generator's TESTER_OPTIONS as a run sets them, an option it leaves out at its default."""
    from trexlab.spec.schema import generator_options_class

    defaults = {f.name: f.default for f in dataclasses.fields(generator_options_class(generator))}
    return {name: (options or {}).get(name, defaults[name]) for name in TESTER_OPTIONS[generator]}


def ceiling_key(generator: str, lab, traffic: TrialSpec, options: Mapping | None = None) -> dict:
    """What a ceiling is looked up by (KEY), for a run of the generator with these options (None: its defaults).
    Of two frame sizes (SIIT), the larger: its ceiling is the lower one."""
    return {**tester_identity(lab), "generator": generator, "generator_options": tester_options(generator, options),
            "frame_size": max(traffic.frame_size), "directions": traffic.directions, "port_mode": traffic.port_mode}


def _matches(entry: dict, key: dict) -> bool:
    return all(entry.get(k) == v for k, v in key.items())


def read_ceilings(path: str | Path = CEILINGS_FILE) -> list[dict]:
    """The entries of a ceilings file ([] where there is none). A file of other JSON (another tool's {...}) is no
    ceilings file: refused, as record_ceilings would replace it with one, losing what it held."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"ceilings file {path}: not readable ({exc.__class__.__name__}); "
                         "delete it and run trexlab selftest again") from None
    if not isinstance(data, dict) or set(data) != {"ceilings"} or not isinstance(data["ceilings"], list):
        raise ValueError(f"ceilings file {path}: not a ceilings file (allowed a JSON object of 'ceilings' only, as "
                         "trexlab selftest writes); another file of that name is not replaced")
    return data["ceilings"]


def find_ceiling(generator: str, lab, traffic: TrialSpec, path: str | Path = CEILINGS_FILE,
                 options: Mapping | None = None) -> dict | None:
    """The recorded ceiling of this tester set-up (KEY), or None."""
    key = ceiling_key(generator, lab, traffic, options)
    return next((e for e in read_ceilings(path) if _matches(e, key)), None)


def record_ceilings(results: list[dict], run_dir: str | Path, generator: str, lab, traffic: TrialSpec,
                    path: str | Path = CEILINGS_FILE, options: Mapping | None = None) -> list[dict]:
    """Record a finished self-test's ceilings (the lowest over its repetitions), measured with the generator's
    options; returns the new entries.

    Replaces earlier entries of the same tester set-up (KEY); the file is rewritten atomically under a lock, so
    concurrent self-tests lose nothing.
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
        lowest = min(range(len(found)), key=lambda k: math.inf if found[k] is None else found[k])
        entry = {**ceiling_key(generator, lab, sized, options), "ceiling_fps": found[lowest],
                 # The lowest repetition's search met no failing load (max_rate below what the tester sends): the
                 # tester sends at least this much, and where its limit lies is not known.
                 "ceiling_at_least": ceiling_name(size) in (results[lowest].get("headline_at_least") or {}),
                 "repetitions_fps": found, "measured": measured, "selftest_run": str(run_dir),
                 "lab": lab.name if lab else None}
        # The floor a DUT is compared against: the repetition whose median was highest (as the ceiling is the
        # lowest), so that a figure near any repetition's floor is flagged.
        floors = [f for r in results if (f := r.get("latency_floors", {}).get(size)) and f.get("median_s")]
        if floors:
            entry["latency_floor"] = max(floors, key=lambda f: f["median_s"])
        entries.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Opened for appending: a file of that name is never truncated (nothing is written to it); nor a link followed.
    with os.fdopen(open_no_link(path.with_name(path.name + ".lock"), os.O_WRONLY | os.O_CREAT | os.O_APPEND),
                   "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = [e for e in read_ceilings(path) if not any(_matches(e, {k: n[k] for k in KEY}) for n in entries)]
        write_json_atomic(path, {"ceilings": kept + entries})
    return entries


def record_selftest(run_dir: str | Path, repetitions: int, generator: str, lab, traffic: TrialSpec,
                    path: str | Path = CEILINGS_FILE, options: Mapping | None = None) -> str:
    """Record a finished, repeated self-test's ceilings for the other procedures; a line saying what was done.

    Only a loopback lab measures the tester alone: on any other topology nothing is recorded, and the line
    says why."""
    if lab is not None and lab.topology != "loopback":
        return (f"ceilings not recorded: lab {lab.name} has topology {lab.topology}, so they include a DUT; "
                "the tester's own ceiling comes from a loopback lab (make lab-up TOPOLOGY=loopback)")
    try:
        results = [read_json(repetition_dir(Path(run_dir), k) / "result.json")
                   for k in range(1, repetitions + 1)]
        entries = record_ceilings(results, run_dir, generator, lab, traffic, path, options)
    except (ValueError, OSError) as exc:
        return f"ceilings not recorded: {exc}"
    found = ", ".join(f"{e['frame_size']} B {ceiling_text(e)}" + (
        f" (latency floor: median {format_seconds(e['latency_floor']['median_s'])}, 99.9th percentile "
        f"{format_seconds(e['latency_floor']['p99_9_s'] or math.inf)})" if e.get("latency_floor") else "")
        for e in entries) or "none"
    return f"tester ceilings recorded in {path}: {found}"


def ceiling_text(entry: Mapping) -> str:
    """A recorded ceiling for people, written as the report writes a rate (stats.WHOLE): '812,345 fps', or 'at
    least 500,000 fps (...)' when its search met no failing load, so a reader does not take max_rate for the
    tester's limit."""
    if entry.get("ceiling_at_least"):
        return (f"at least {entry['ceiling_fps']:{WHOLE}} fps (its self-test met no failing load up to max_rate: the "
                "tester's limit is higher and not known)")
    return f"{entry['ceiling_fps']:{WHOLE}} fps"


def setup_text(key: Mapping) -> str:
    """A ceiling's tester set-up (KEY, of an entry or a look-up) for people: '64 B, bidirectional, rfc4814 ports,
    send_method auto, sender_threads 1'."""
    options = [f"{name} {value}" for name, value in (key.get("generator_options") or {}).items()]
    return ", ".join([f"{key['frame_size']} B", key["directions"], f"{key.get('port_mode')} ports", *options])


#: Params fields filled from the ceilings file: field -> how to read it from an entry (None: not recorded).
RECORDED = {
    "tester_ceiling": lambda entry: entry.get("ceiling_fps"),
    "tester_floor_median": lambda entry: (entry.get("latency_floor") or {}).get("median_s"),
    "tester_floor_p99_9": lambda entry: (entry.get("latency_floor") or {}).get("p99_9_s"),
}


def ceiling_for(params, traffic: TrialSpec, generator: str, lab, path: str | Path = CEILINGS_FILE,
                options: Mapping | None = None):
    """(params, record): the procedure's params with the recorded ceiling (and latency floor) of the run's tester
    set-up (KEY: the generator's options among it) filled in when it compares results against them and none was
    given, and what it compares against (for the provenance; None: it compares against none)."""
    names = {f.name for f in dataclasses.fields(params)}
    wanted = [name for name in RECORDED if name in names and getattr(params, name) is None]
    if "tester_ceiling" not in names:
        return params, None
    if not wanted:
        return params, {"ceiling_fps": params.tester_ceiling, "source": "given as tester_ceiling"}
    entry = find_ceiling(generator, lab, traffic, path, options)
    if entry is None:
        if params.tester_ceiling is not None:
            return params, {"ceiling_fps": params.tester_ceiling, "source": "given as tester_ceiling"}
        return params, {"ceiling_fps": None, "source": f"none recorded in {path}",
                        "looked_up": ceiling_key(generator, lab, traffic, options)}
    filled = {name: RECORDED[name](entry) for name in wanted}
    if params.tester_ceiling is not None:
        # The given ceiling, not the entry's: whether the entry's search met a failing load says nothing of it.
        return dataclasses.replace(params, **filled), {**entry, "ceiling_fps": params.tester_ceiling,
                                                       "ceiling_at_least": False,
                                                       "source": f"given as tester_ceiling; latency floor from {path}"}
    return dataclasses.replace(params, **filled), {**entry, "source": str(path)}


# -- the tester's latency floor, for latency and PDV results ------------------------------------------------------


def latency_floor_check(directions: dict, params, figures: dict[str, str]) -> tuple[dict | None, list[str]]:
    """(the floor a latency or PDV result names, its warnings).

    directions: the result's per-direction figures; figures: which of them compare against which floor
    figure, e.g. {"typical": "median", "worst_case": "p99_9"} (PDV: {"pdv": "p99_9"}: a tester whose own
    delays reach its 99.9th percentile can add that much variation). A figure within FLOOR_FACTOR of its floor
    (or below it) is flagged: it may describe the tester more than the DUT.
    """
    floor = {"median": getattr(params, "tester_floor_median", None),
             "p99_9": getattr(params, "tester_floor_p99_9", None)}
    if all(v is None for v in floor.values()):
        return None, ["no tester latency floor to compare against: run 'trexlab selftest' on a loopback lab "
                      "to record one (a tester's own delay may dominate a DUT's)"]
    named = {"median_s": floor["median"], "p99_9_s": floor["p99_9"], "factor": FLOOR_FACTOR}
    warnings = []
    for direction, stats in directions.items():
        for figure, floor_figure in figures.items():
            value, limit = stats.get(figure), floor[floor_figure]
            if value is None or limit is None or not math.isfinite(value):
                continue
            if value <= FLOOR_FACTOR * limit:
                which = floor_figure.replace("_", ".")
                warnings.append(f"{direction} {figure.replace('_', '-')} {format_seconds(value)} is within "
                                f"{FLOOR_FACTOR:g}x of the tester's own latency floor ({which} "
                                f"{format_seconds(limit)} through its looped-back ports): it may describe the "
                                "tester more than the DUT")
    named["warnings"] = warnings
    return named, warnings
