"""Repeating a procedure: every repetition is a run directory, finished ones are never redone.

The seed papers' point is that one figure proves little: RFC 2544 asks for no
repetition, siitperf's authors repeat 20 times and report median, minimum and
maximum. ``repeat`` runs a procedure N times into ``<parent>/rep-<k>/``; when
it is started again on the same parent it keeps finished repetitions (those
with result.json) and resumes the unfinished one from its trial log
(trexlab.plan.resume), so an interrupted campaign loses no repetition, duplicates
none, and loses at most the trial that was running.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trexlab.params import InvalidParameter
from trexlab.plan.adaptive import STOPPED_NARROW, RepetitionRule, rule_text, warm_bounds
from trexlab.plan.resume import Replay, skip_trials
from trexlab.procedures import procedure as procedure_of
from trexlab.procedures import throughput
from trexlab.procedures.common import CEILING_MARGIN, FIGURE_BOUND_KEYS, RunContext
from trexlab.results.stats import WHOLE, Observation, figure_spec, held_down_by_tester, is_censored, summarize
from trexlab.results.store import (
    RESULT,
    RunDir,
    dumps,
    first_difference,
    is_finished,
    loads,
    make_directories,
    read_json,
    read_trials,
    write_json_atomic,
)
from trexlab.trial import TrialSpec, format_seconds

SUMMARY = "summary.json"


def repetition_dir(parent: Path, k: int) -> Path:
    return Path(parent) / f"rep-{k:03d}"


def as_rule(repetitions: int | RepetitionRule) -> RepetitionRule:
    return repetitions if isinstance(repetitions, RepetitionRule) else RepetitionRule(repetitions, repetitions)


def next_repetition(repetitions: int | RepetitionRule, parent: str | Path) -> int | None:
    """The repetition ``repeat`` would run next in parent (the first one not finished), or None where the rule
    needs no more: what an interleaved campaign (trexlab.plan.campaign) asks of each point before a round."""
    rule, results = as_rule(repetitions), list[dict]()
    for k in range(1, rule.maximum + 1):
        if rule.done(results):
            return None
        path = repetition_dir(Path(parent), k)
        if not is_finished(path):
            return k
        results.append(read_json(path / RESULT))
    return None


def repeat(procedure: str, generator, traffic: TrialSpec, params, repetitions: int | RepetitionRule,
           parent: str | Path, provenance: dict, progress: Callable[[str, dict], None] | None = None,
           upto: int | None = None) -> dict:
    """Run (or finish) the repetitions; write and return the summary of their headline figures.

    ``repetitions``: a count, or a rule (trexlab.plan.adaptive) that may stop before its maximum. A repetition
    interrupted mid-search is resumed from its trial log (trexlab.plan.resume); ``params.warm_start`` starts each
    repetition's search near the earlier ones' median (trexlab.plan.adaptive.warm_bounds). ``upto``: run no
    repetition beyond this one (an interleaved campaign's round); the summary is then of those finished so far."""
    rule = as_rule(repetitions)
    module = procedure_of(procedure)
    parent = Path(parent)
    make_directories(parent)
    check_same_run(parent, {**provenance, "procedure": procedure})
    results: list[dict] = []
    for k in range(1, rule.maximum + 1 if upto is None else min(upto, rule.maximum) + 1):
        if rule.done(results):
            break
        total = rule.maximum
        path = repetition_dir(parent, k)
        if is_finished(path):
            results.append(read_json(path / RESULT))
            skip_trials(generator, len(read_trials(path)))  # the trials an uninterrupted run would have drawn
            if progress:
                progress("repetition", {"repetition": k, "repetitions": total, "skipped": True})
            continue
        if progress:
            progress("repetition", {"repetition": k, "repetitions": total})
        run_params = params
        if getattr(params, "warm_start", False) and (bounds := warm_bounds(results, params)) is not None:
            run_params = dataclasses.replace(params, start_bounds=bounds)
        run = RunDir(path, {**provenance, "procedure": procedure, "repetition": k, "repetitions": total})
        replay = Replay(generator, run.logged)
        if replay.pending and progress:
            progress("resume", {"repetition": k, "replayed": len(replay.pending)})
        try:
            result = module.run(RunContext(replay, traffic, replay.logger(run.append_trial), progress), run_params)
            data = result.to_dict()
            run.finish(data)
        finally:
            run.close()
        results.append(data)
    summary = summarize_headlines(results)
    written: dict[str, Any] = {"procedure": procedure, "repetitions": len(results),
               "method": method_of(results[-1], provenance.get("rate_source"), provenance.get("tester_ceiling"))
               if results else {},
               "figures": summary}
    # A standard that asks for a number of repetitions (RFC 8219's latency and PDV: 20, their median reported):
    # a summary over fewer is not its figure, and says so with the durations that fall short of it.
    deviations: Callable[[int], list[str]] | None = getattr(module, "repetition_deviations", None)
    if results and deviations is not None and (short := deviations(len(results))):
        written["method"] = {**written["method"], "deviations": [*written["method"].get("deviations", []), *short]}
    if rule.adaptive:  # disclosed beside the method: the rule, the count reached and each interval
        intervals = rule.intervals(results)
        narrow = len(results) >= rule.minimum and bool(intervals) and all(i["narrow"] for i in intervals.values())
        written["method"] = {**written["method"], "repetition_rule": {
            **rule.to_dict(), "reached": len(results), "intervals": intervals,
            "stopped": STOPPED_NARROW if narrow else "maximum reached"}}
    write_json_atomic(parent / SUMMARY, written)
    return summary


#: What the repetitions of one run share (their provenance): what was measured and how. Not the tester's ceiling
#: and latency floor looked up for it (a self-test in between records new ones; each result names its own), nor
#: the simulated SUT's wall-clock pacing (how long its simulated trials take to watch, not what they measure).
SAME_RUN = ("procedure", "params", "traffic", "generator_options", "generator.generator")
#: The parameters filled from the ceilings file (trexlab.procedures.selftest.RECORDED, which imports this module).
LOOKED_UP = ("tester_ceiling", "tester_floor_median", "tester_floor_p99_9")
NOT_COMPARED = {"params": LOOKED_UP, "generator_options": ("wall_clock_factor",)}


def _same_run_facts(provenance: dict) -> dict:
    facts = {}
    for key in SAME_RUN:
        head, _, tail = key.partition(".")
        value = provenance.get(head)
        if tail:
            value = value.get(tail) if isinstance(value, dict) else None
        if key in NOT_COMPARED and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in NOT_COMPARED[key]}
        if value is not None or head in provenance:
            facts[key] = loads(dumps(value))
    return facts


def check_same_run(parent: Path, provenance: dict) -> None:
    """Refuse repetitions already in parent that another run made (InvalidParameter naming the first difference): a
    rerun with other flags into the same --results, or a same-second default directory, would otherwise count them
    as its own ("done earlier") and report their figures under its parameters. Keys an older provenance lacks are
    not compared."""
    now = _same_run_facts(provenance)
    for earlier_file in sorted(parent.glob("rep-*/provenance.json")):
        earlier = _same_run_facts(read_json(earlier_file))
        shared = [key for key in SAME_RUN if key in earlier and key in now]
        if (found := first_difference({k: earlier[k] for k in shared}, {k: now[k] for k in shared})) is not None:
            key, then, later = found
            raise InvalidParameter(key, later, f"{dumps(then)}, as the repetitions already in {parent} were measured "
                                               "(another run's directory: give another --results or campaign)")


def figure_tester_bound(result: dict, figure: str) -> tuple[str, ...]:
    """Why one headline figure may be the tester's limit: its own reasons where the result gives them per figure
    (headline_tester_bound: a TCP test's saturated endpoint bounds that test's figures, not the path MTU), else every
    reason of the result."""
    per_figure = result.get("headline_tester_bound")
    if isinstance(per_figure, dict) and figure in per_figure:
        return tuple(per_figure[figure] or ())
    return tuple(result.get("tester_bound_reasons") or ())


def observation(result: dict, figure: str, repetition: int | None = None) -> Observation:
    """One repetition's headline figure with what limits it: censored (below min_rate) or tester-bound."""
    value = result.get("headline", {}).get(figure)
    below = (result.get("headline_below") or {}).get(figure)
    if below is None and value is None and figure == throughput.HEADLINE and result.get("below_minimum_load"):
        below = result.get("params", {}).get("min_rate")  # a result written before headline_below
    return Observation(None if value is None else float(value), below, figure_tester_bound(result, figure),
                       repetition, figure in (result.get("headline_at_least") or {}),
                       (result.get("headline_irregular") or {}).get(figure) or "")


def figure_bounds(result: dict, figure: str) -> dict:
    """The bounds a result gives beside one headline figure (headline_bounds: an MLRsearch goal's relevant lower and
    upper bound, fps per direction, null where the goal has none), {} where it gives none (another procedure, or a
    result written before them)."""
    bounds = (result.get("headline_bounds") or {}).get(figure)
    return {key: bounds.get(key) for key in FIGURE_BOUND_KEYS} if isinstance(bounds, dict) else {}


def bounds_note(name: str, figure: dict) -> str | None:
    """The bounds each repetition gives beside a figure (figure_bounds), as a line under the summary table: 'NDR_fps:
    relevant lower bound - relevant upper bound, fps per direction: rep 1 436,000 - 437,500, ...', those of an
    irregular goal result marked so (draft-ietf-bmwg-mlrsearch-15 section 4.8.4.2); None where none gives any."""
    entries = [r for r in figure.get("repetitions", []) if any(key in r for key in FIGURE_BOUND_KEYS)]
    if not entries:
        return None

    def load(value) -> str:
        return "none" if value is None else f"{value:{WHOLE}}"

    lower, upper = FIGURE_BOUND_KEYS
    # A goal result missing a bound is irregular by definition (section 4.8.4.1 requires both), also where it has no
    # figure to mark (below min_rate: no relevant lower bound); one with both is irregular as its figure is marked.
    shown = [f"rep {r['repetition']} {load(r.get(lower))} - {load(r.get(upper))}"
             + (" (irregular goal result)" if r.get("irregular") or r.get(lower) is None or r.get(upper) is None
                else "") for r in entries]
    return f"{name}: relevant lower bound - relevant upper bound, fps per direction: {', '.join(shown)}"


def summarize_headlines(results: list[dict]) -> dict[str, dict]:
    """Per headline figure (e.g. throughput_fps), its statistics over the repetitions, and each repetition's
    value, bound, tester limits and the bounds its result gives beside the figure (figure_bounds)."""
    names: list[str] = []
    for result in results:
        names.extend(n for n in result.get("headline", {}) if n not in names)
    summary = {}
    for name in names:
        observations = [observation(r, name, k) for k, r in enumerate(results, start=1)]
        summary[name] = {**summarize(observations, held_down_by_tester(name)), "repetitions": [
            {"repetition": o.repetition, "value": o.value, "below": o.below, "at_least": o.at_least,
             "irregular": o.irregular, "tester_bound_reasons": list(o.tester_bound), **figure_bounds(r, name)}
            for o, r in zip(observations, results, strict=True)]}
    return summary


def method_of(result: dict, rate_source: dict | None = None, ceiling: dict | None = None) -> dict:
    """How a procedure's figures were measured, as summary.json and the CLI disclose it beside them. rate_source:
    where the offered load of a procedure that takes a rate came from (trexlab.plan.rate_from), None: given;
    ceiling: the tester ceiling the run compared against (its provenance's tester_ceiling), None: none."""
    method = {k: result[k] for k in ("method", "loss_tolerance_percent", "stopping_rule", "trial_duration",
                                     "warm_start", "latency_definition") if k in result}
    if "goals" in result:  # MLRsearch: each goal is its own loss ratio, width and durations
        method["goals"] = [{k: g.get(k) for k in ("name", "loss_ratio", "exceed_ratio", "relative_width",
                                                   "initial_trial_duration", "final_trial_duration", "duration_sum")}
                           for g in result["goals"]]
    for key in ("rate", "tester_ceiling", "trial_duration", "tag_delay", "tagged_frames", "frame_timeout"):
        if (result.get("params") or {}).get(key) is not None:
            method.setdefault(key, result["params"][key])
    if method.get("tester_ceiling") and (ceiling or {}).get("ceiling_at_least"):
        # Its self-test met no failing load up to its max_rate: the tester carries at least this, its limit unknown.
        method["tester_ceiling_at_least"] = True
    if "path_mtu" in result and "bb_source" in result:
        # RFC 6349: every TCP figure rests on the path MTU, the bottleneck bandwidth and the window: how each was
        # chosen (declared, or measured by the run) and how long each test ran; the values each repetition found
        # are in its result.json.
        params = result.get("params") or {}
        method["tcp"] = {"mtu": params.get("mtu"), "bottleneck_bandwidth_bps": params.get("bottleneck_bandwidth"),
                         "window_bytes": params.get("window_bytes"), "connections": params.get("connections"),
                         "test_duration": params.get("test_duration"), "omit": params.get("omit"),
                         "congestion_control": result.get("congestion_control"),
                         # Whose CPU each test's endpoints figures are, and from what share of it a test counts as
                         # tester-bound (None: a result written before they were recorded).
                         "endpoint_cpu_method": result.get("endpoint_cpu_method"),
                         "endpoint_cpu_saturated_percent": result.get("endpoint_cpu_saturated_percent"),
                         # What a baseline RTT connection with a saturated endpoint bounds (None: older results).
                         "baseline_rtt_bounds": result.get("baseline_rtt_bounds"),
                         # The frames the endpoints' TCP cut (roles/tcp_endpoints): wire-sized, or super-frames a
                         # virtual link hands the DUT whole, with the hosts' work per byte far lower.
                         "segmentation_offload": result.get("segmentation_offload")}
    if "latency_floor_method" in result:  # a self-test: its latency floor figures' trial
        method["latency_floor"] = result["latency_floor_method"]
    if "bytes" in result and "congestion_control" in result:
        # An HTTP download's time is of a file of this size under this congestion control (reno where the paper
        # had CUBIC: http-download-loss's README); no tester takes part, so no tester ceiling applies.
        # And of frames cut as the server's TCP cut them: wire-sized, or super-frames the DUT sees whole.
        method["download"] = {"bytes": result["bytes"], "congestion_control": result["congestion_control"],
                              "segmentation_offload": result.get("segmentation_offload")}
    if result.get("points") and "step_percent" in (result.get("params") or {}):
        # RFC 2544 section 26.3: the frame loss rate is a curve from the first (highest) offered load down, and the
        # headline figure is its first point: without that load and the step it reads as a number of nothing.
        method["offered_loads"] = {"first_fps": result["points"][0]["offered_load"],
                                   "step_percent": result["params"]["step_percent"]}
    if "rate" in method:
        # RFC 8219 measures latency and PDV at the throughput rate: say whether this rate is one (measured, and
        # how) or a number given to the run, which nothing here ties to a throughput.
        method["rate_source"] = (f"{rate_source['statistic']} of {rate_source['figure']} in {rate_source['from']}"
                                 if rate_source else "given")
        if rate_source and rate_source.get("lower_bound"):  # trexlab.plan.rate_from: below the DUT's throughput
            method["rate_source"] += f", only a lower bound of the DUT's throughput ({rate_source['lower_bound']})"
    if "frame_timeout" in (result.get("params") or {}):  # None said too: frames then count until the tail ends
        method.setdefault("frame_timeout", result["params"]["frame_timeout"])
    if result.get("deviations"):  # what falls short of the standard's durations (trexlab.procedures.common)
        method["deviations"] = result["deviations"]
    return method


def offload_text(whose: str, offload: bool) -> str:
    """How a TCP figure's frames were cut, for the method line (roles/tcp_endpoints' segmentation_offload)."""
    return (f"{whose} TCP kept TSO/GSO: a virtual link hands the DUT super-frames of up to 64 KB" if offload
            else f"{whose} TCP sends frames of at most the MTU (one segment per packet)")


def method_line(method: dict) -> str:
    """The method in one line: loss tolerance, resolution, trial duration, tester ceiling."""
    parts = [method["method"]] if "method" in method else []
    if "loss_tolerance_percent" in method:
        parts.append(f"loss tolerance {method['loss_tolerance_percent']:g} %")
    if "stopping_rule" in method:
        parts.append(f"resolution {method['stopping_rule']}")
    if "trial_duration" in method:
        parts.append(f"trial duration {method['trial_duration']:g} s")
    for goal in method.get("goals", []):
        initial = goal.get("initial_trial_duration")  # None: a summary written before it was disclosed
        parts.append(f"{goal['name']}: loss ratio {goal['loss_ratio']:g}, exceed ratio {goal['exceed_ratio']:g}, "
                     f"width {goal['relative_width'] * 100:g} %, "
                     + ("" if initial is None else f"initial trials {initial:g} s, ")
                     + f"final trials {goal['final_trial_duration']:g} s, duration sum {goal['duration_sum']:g} s")
    if loads := method.get("offered_loads"):
        parts.append(f"offered loads from {loads['first_fps']:{WHOLE}} fps down in steps of "
                     f"{loads['step_percent']:g} % of it, until two trials in a row lose no frame")
    if "rate" in method:
        source = method.get("rate_source")
        parts.append(f"offered load {method['rate']:{WHOLE}} fps" + (  # as the throughput table writes it
            "" if source is None  # a summary written before rate_source
            else " (given: not taken from throughput results; RFC 8219 measures at the throughput rate)"
            if source == "given" else f" (the throughput rate: {source})"))
    if "tagged_frames" in method:  # RFC 8219 latency
        parts.append(f"{method['tagged_frames']} tagged frames after {method.get('tag_delay', 0):g} s")
    if "frame_timeout" in method:
        parts.append("no frame timeout (a frame counts until the receive tail ends, as in RFC 2544)"
                     if method["frame_timeout"] is None else f"frame timeout {format_seconds(method['frame_timeout'])}")
    if "latency_definition" in method:  # RFC 8219 section 7.2: which RFC 1242 definition
        parts.append(f"latency definition: {method['latency_definition']}")
    if tcp := method.get("tcp"):
        parts.append("; ".join([
            f"path MTU {tcp['mtu']} B declared" if tcp["mtu"] else "path MTU found by Don't-Fragment trials",
            f"bottleneck bandwidth {tcp['bottleneck_bandwidth_bps']:{WHOLE}} bit/s declared"
            if tcp["bottleneck_bandwidth_bps"] else "bottleneck bandwidth by RFC 2544 throughput at the MTU",
            f"window {tcp['window_bytes']} B per connection" if tcp["window_bytes"]
            else "window per connection from the BDP (bottleneck bandwidth x baseline RTT) / connections",
            f"{tcp['connections']} connections, {tcp['test_duration']:g} s per test after {tcp['omit']:g} s omitted",
            f"TCP congestion control {tcp['congestion_control'] or 'the endpoints default'}",
            *([offload_text("the endpoints'", tcp["segmentation_offload"])]
              if tcp.get("segmentation_offload") is not None else []),
            *([f"a test direction is tester-bound where an endpoint used {tcp['endpoint_cpu_saturated_percent']:g} % "
               f"or more of all the CPU it can ({tcp['endpoint_cpu_method']})"]
              if tcp.get("endpoint_cpu_method") else []),
            *([f"the baseline RTT connection's endpoints are judged the same way; where one was saturated, "
               f"tester-bound with it: {tcp['baseline_rtt_bounds']}"] if tcp.get("baseline_rtt_bounds") else [])]))
    if download := method.get("download"):
        parts.append(f"a file of {download['bytes']:,} bytes, TCP congestion control "
                     f"{download['congestion_control'] or 'the client kernel default'}")
        if (offload := download.get("segmentation_offload")) is not None:  # None: the role did not record it
            parts.append(offload_text("the server's", offload))
    elif floor := method.get("latency_floor"):  # a self-test measures the ceiling: it is compared against none
        parts.append(f"latency floor: one trial of {floor['trial_duration']:g} s per frame size at "
                     f"{floor['load_percent']:g} % of its ceiling, {floor['tagged_frames']} tagged frames"
                     if floor["load_percent"] else "no latency floor measured (floor_load_percent 0)")
    else:
        margin = f"a figure within {CEILING_MARGIN:.0%} of it is marked tester-bound"
        parts.append("no tester ceiling known" if not method.get("tester_ceiling")
                     else f"tester ceiling at least {method['tester_ceiling']:{WHOLE}} fps (its self-test met no "
                     f"failing load; {margin})" if method.get("tester_ceiling_at_least")
                     else f"tester ceiling {method['tester_ceiling']:{WHOLE}} fps ({margin})")
    if method.get("deviations"):
        parts.append("short of the standard: " + ", ".join(method["deviations"]))
    if rule := rule_text(method.get("repetition_rule")):
        parts.append(rule)
    if method.get("warm_start"):
        parts.append("warm start: each repetition's search began near the earlier ones' median (bounds verified "
                     "by full-duration trials; start_bounds in each result)")
    return "; ".join(parts)


def order_text(order: object) -> str:
    """A campaign's order of repetitions (campaign.json's "order", trexlab.plan.campaign) in words, as its progress and
    report say it; a campaign.json without one was written when every campaign ran sequentially."""
    if not isinstance(order, dict) or order.get("order") != "interleaved":
        return "sequential: all repetitions of a point, then those of the next point" + (
            "" if isinstance(order, dict) else " (campaign.json records no order: begun before there was a choice)")
    per_round = order.get("repetitions_per_round", 1)
    which = "repetition r" if per_round == 1 else f"repetitions {per_round}(r-1)+1 .. {per_round}r"
    return (f"interleaved: round r runs {which} of every point, in an order shuffled per round (seed "
            f"{order.get('seed')}), never beginning with the point the round before ended with")


def cell(value, spec: str = ".6g") -> str:
    """A statistic for a text table: NaN (no value) as '-', a censored one ('< 100') as it is."""
    if is_censored(value):
        return value
    if value == math.inf:  # a latency percentile among lost or late tags (trexlab.trial): never a number
        return "> timeout"
    return "-" if value is None or value != value else format(value, spec)


def summary_lines(figures: dict[str, dict], method: dict | None = None) -> list[str]:
    """The summary as a text table (the CLI's and a campaign's): a median that a tester-bound repetition may
    hold down is shown as a lower bound ('>= ...'); missing and tester-bound repetitions are counted, and why."""
    header = (f"{'figure':28} {'count':>5} {'missing':>7} {'tester-bound':>12} {'median':>16} {'min':>12} "
              f"{'max':>12} {'disp. %':>9}")
    lines = [header, "-" * len(header)]
    notes = []
    for name, s in figures.items():
        spec = figure_spec(name)  # a count whole, as the report writes it
        # A statistic a tester-bound repetition may hold down reads '>= ...' (stats: <statistic>_lower_bound).
        shown = {stat: (">= " if s.get(f"{stat}_lower_bound") else "") + cell(s[stat], spec)
                 for stat in ("median", "min", "max")}
        lines.append(f"{name:28} {s['count']:>5} {s['missing']:>7} {s.get('tester_bound', 0):>12} "
                     f"{shown['median']:>16} {shown['min']:>12} {shown['max']:>12} "
                     f"{cell(s['dispersion_percent'], '.2f'):>9}")
        if bound := [stat for stat in ("median", "min", "max") if s.get(f"{stat}_lower_bound")]:
            # Said of no DUT: a self-test's figure (its ports looped back) is the tester's own ceiling.
            notes.append(f"{name}: LOWER BOUND ({', '.join(bound)}): a repetition at or below it was tester-bound or "
                         "its search met no failing load (max_rate below the limit measured), so the figure may be "
                         "higher")
        if s.get("why"):
            notes.append(f"{name}: {s['why']}")
        if bounds := bounds_note(name, s):
            notes.append(bounds)
    if figures:  # what the columns are, as the report's heading says it (the figures' rules: trexlab.results.stats)
        notes.insert(0, "statistics over the repetitions: median (of an even count the mean of the two middle "
                        "values), min, max; disp. % = (max - min) / median (Lencse 2021)")
    if method:
        notes.append(f"method: {method_line(method)}")
    return lines + notes
