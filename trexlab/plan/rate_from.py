"""Latency and PDV at the throughput rate: the rate taken from a throughput result, with where it came from.

RFC 8219 measures latency and PDV at the rate the throughput test found. A
rate is therefore given explicitly or taken from throughput results: the
median ``throughput_fps`` of their repetitions, the project's one median
(trexlab.results.stats.summarize, what their summary reports: an even count
averages the two middle ones, as siitperf does). A repetition that found no
throughput (below the minimum load) is an observation below every found rate;
when the median falls among those there is no rate and the run stops with one
line. One with no figure and no such bound is left out, as in the summary.

* CLI: ``trexlab latency --rate-from results/cli/throughput-...`` (a run
  directory, or a directory of repetitions ``rep-*``): each of its throughput
  runs must have this run's set-up (run_setup: lab, generator and options,
  traffic), else refused in one line naming the first difference. Or
  ``--rate-from EXPERIMENT/ID``: the stored throughput campaign of that name in
  the CLI's results root (runplan.RESULTS_ROOT), its point of this run's set-up
  as the spec's ``campaign: {experiment, id}`` takes it (no DUT blocks: a CLI
  run configures none). A text that is both, or neither, is refused in one line.
* Experiment: ``procedure.params.rate: {from: throughput, params: {...}}`` runs
  the throughput procedure (with those params and the experiment's traffic and
  repetitions) for each sweep point first, in ``<point>/throughput/``, and
  measures at the median of that point's repetitions.
* Experiment: ``procedure.params.rate: {from: throughput, campaign: {experiment: NAME, id: ID}}`` (either key, or
  both) takes each point's rate from a stored throughput campaign in the same results root instead (a Fig. 11
  campaign for its Figs. 12-13): the median of the repetitions of that campaign's point whose set-up is this
  point's. The set-up is the lab the campaign was measured on, the generator and its options, the traffic (with
  the point's destination networks) and the DUT configuration blocks; ``params``, when given beside ``campaign``,
  must be the stored search's. A campaign that is missing, not throughput, of another set-up, or whose point is
  not done is refused in one line before anything runs: a rate from another set-up is not this DUT's throughput.

The rate used and its source go into the provenance of every run (``rate_source``; from a stored campaign also
``rate_source.campaign``: its experiment, id, point, trexlab commit, lab and search parameters).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from trexlab.params import InvalidParameter
from trexlab.procedures import throughput

FIGURE = throughput.HEADLINE
#: The procedure that gives the rate (those that take one declare TAKES_RATE: trexlab.procedures.taking_rate).
GIVES_RATE = throughput.NAME
#: Where a point's throughput repetitions go, below the point's own directory.
SUBDIR = GIVES_RATE


def median_throughput(path: str | Path, runs: list[Path] | None = None,
                      setup: dict | None = None) -> tuple[float, dict]:
    """(rate, source) from the finished throughput runs at or below path (runs: those run directories only). setup
    (run_setup of the run that takes the rate, --rate-from): each of those runs must have been measured with it."""
    from trexlab.plan.repetition import observation
    from trexlab.results.stats import held_down_by_tester, is_censored, summarize
    from trexlab.results.store import PROVENANCE, RESULT, first_difference, read_json, run_dirs  # pandas: only here

    path = Path(path)
    runs = [run for run in (run_dirs([path]) if runs is None else runs) if (run / RESULT).is_file()]
    found = []
    for run in runs:
        result = read_json(run / RESULT)
        if not isinstance(result, dict) or result.get("procedure") != GIVES_RATE:
            continue
        if setup is not None:  # a rate measured on another set-up is not this DUT's throughput (RFC 8219)
            try:
                have = run_setup(read_json(run / PROVENANCE))
            except (OSError, ValueError, KeyError, TypeError, InvalidParameter):
                raise InvalidParameter("rate-from", str(path), f"{GIVES_RATE} runs whose set-up ({', '.join(SETUP)})"
                                       f" can be read: {run / PROVENANCE} cannot") from None
            if (difference := first_difference(have, setup)) is not None:
                raise InvalidParameter("rate-from", str(path), f"{GIVES_RATE} runs of this run's set-up ("
                                       f"{', '.join(SETUP)}); {run.name}: {_difference_text(difference)}")
        # A results directory may be someone else's: its figure is a number (float() took text, True as 1 fps) and
        # the rest of the result one this trexlab reads, or no rate comes from it.
        try:
            value = result["headline"][FIGURE] if FIGURE in (result.get("headline") or {}) else None
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise TypeError(f"{FIGURE} {value!r}")
            found.append(observation(result, FIGURE, None))
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise InvalidParameter("rate-from", str(path), f"{GIVES_RATE} results whose {FIGURE} is a number: "
                                   f"{run / RESULT} has {str(exc)[:100]}") from None
    if not found:
        raise InvalidParameter("rate-from", str(path), f"a directory with finished {GIVES_RATE} runs")
    # The median as the throughput summary gives it (stats.summarize, the one rule): a repetition below min_rate
    # ranks below every figure, one with no figure and no such bound is left out; "< ..." where the median falls
    # among those below min_rate. A tester-bound repetition at or below the median, or one whose search met no
    # failing load, makes it a lower bound of the DUT's throughput (the throughput summary's LOWER BOUND): the
    # latency is then measured below RFC 8219's throughput rate, and says why (trexlab.plan.repetition.method_of).
    summary = summarize(found, held_down_by_tester(FIGURE))
    rate, counted = summary["median"], summary["count"] + summary["below_minimum"]
    if is_censored(rate) or not rate > 0:
        raise InvalidParameter("rate-from", str(path), f"{GIVES_RATE} results whose median is a rate; "
                               f"{summary['below_minimum']} of {counted} found none")
    left_out = summary["missing"] - summary["below_minimum"]
    source = {"rate": rate, "from": str(path), "figure": FIGURE, "statistic": f"median of {counted} repetition(s)"
              + (f" ({left_out} without a figure left out)" if left_out else "")}
    if summary["median_lower_bound"]:
        source["lower_bound"] = summary["why"]
    return rate, source


def measuring_line(source: Mapping) -> str:
    """The line a run at a rate taken from throughput results says before its first trial: the rate and where it
    comes from (a stored campaign by experiment/id and point), and whether it is only a lower bound of the DUT's
    throughput (RFC 8219 measures at the throughput rate itself)."""
    from trexlab.results.stats import WHOLE

    stored = source.get("campaign")
    where = (f"stored campaign {stored['experiment']}/{stored['id']}, its point {stored['point']}" if stored
             else source["from"])
    return (f"measuring at {source['rate']:{WHOLE}} fps ({source['statistic']} of {source['figure']} in {where})"
            + (f"; a lower bound of the DUT's throughput ({source['lower_bound']})" if source.get("lower_bound")
               else ""))


#: The keys that name a stored campaign (``rate.campaign``): its experiment, its id, or both.
CAMPAIGN_KEYS = ("experiment", "id")
#: The spec key that names a stored campaign, as its refusals name it.
CAMPAIGN_KEY = "procedure.params.rate.campaign"
#: The CLI argument, as its refusals name it (InvalidParameter: "rate-from=...").
ARGUMENT = "rate-from"


def cli_rate(given: str, root: Path, spec: dict, lab) -> tuple[float, dict]:
    """(rate, source) for --rate-from: a directory of throughput runs (median_throughput, each run of this set-up), or
    EXPERIMENT/ID, the stored throughput campaign in the results root whose point has this run's set-up (stored_rates,
    as the spec's rate.campaign). spec: this run's generator, generator_options and traffic; lab: its Lab, or None.
    One line naming the argument where the text is both (a directory here and a campaign in root) or neither."""
    from trexlab.plan.runplan import lab_identity

    directory = Path(given)
    try:
        reference = check_campaign_reference(dict(zip(CAMPAIGN_KEYS, given.split("/"), strict=True)))
    except ValueError:  # not two parts (zip), or not two names (InvalidParameter)
        reference = None
    stored = stored_campaigns(root, reference) if reference is not None else []
    if directory.is_dir() and stored and directory.resolve() != stored[0].resolve():
        raise InvalidParameter(ARGUMENT, given, f"one of a directory and EXPERIMENT/ID: both are there ({directory}, "
                                                f"and the campaign {stored[0]}): name the one meant by a path that is "
                                                f"no EXPERIMENT/ID (./{given}, or {stored[0]})")
    if directory.is_dir() and (directory / "campaign.json").is_file():  # a campaign by its directory: as by its name
        found = directory.resolve()
        root, reference = found.parent.parent, {"experiment": found.parent.name, "id": found.name}
    elif directory.is_dir():
        return median_throughput(directory, setup=setup_of(spec, lab.describe() if lab else None))
    elif not stored:
        raise InvalidParameter(ARGUMENT, given, f"a directory with finished {GIVES_RATE} runs, or EXPERIMENT/ID of a "
                                                f"stored {GIVES_RATE} campaign in {root}: neither is there")
    request = {"from": GIVES_RATE, "params": None, "campaign": reference}
    return stored_rates(root, request, [(given, spec)], lab_identity(lab), name=ARGUMENT, given=given)[given]


def split_rate_from(params: dict) -> tuple[dict, dict | None]:
    """An experiment's procedure params without ``rate: {from: throughput, ...}``, and that request: {from, params}
    (params None where a stored campaign is named without them), and campaign where one is named."""
    rate = params.get("rate")
    if not isinstance(rate, dict):
        return params, None
    unknown = sorted(set(rate) - {"from", "params", "campaign"})
    if unknown:
        raise InvalidParameter("rate", rate, "a number, or {from: throughput, params: {...}}, or {from: throughput, "
                                             "campaign: {experiment: NAME, id: ID}}")
    if rate.get("from") != GIVES_RATE:
        raise InvalidParameter("rate.from", rate.get("from"), GIVES_RATE)
    if not isinstance(rate.get("params") or {}, dict):
        raise InvalidParameter("rate.params", rate.get("params"), f"the {GIVES_RATE} procedure's params")
    request: dict = {"from": GIVES_RATE, "params": rate.get("params") or {}}
    if "campaign" in rate:
        request["campaign"] = check_campaign_reference(rate["campaign"])
        request["params"] = rate.get("params")  # None: whatever the stored search's were (its provenance says)
    return {k: v for k, v in params.items() if k != "rate"}, request


def measured_in_campaign(request: dict | None) -> bool:
    """Whether the rate request runs the point's throughput search in the campaign itself (no stored one named)."""
    return request is not None and "campaign" not in request


def check_campaign_reference(reference: object) -> dict:
    """rate.campaign: {experiment: NAME, id: ID}, either key or both, each a name a results directory may have."""
    import re

    from trexlab.plan.runplan import CAMPAIGN_ID_PATTERN
    from trexlab.spec.schema import NAME_PATTERN

    allowed = "{experiment: NAME, id: ID}: a stored throughput campaign's experiment name, id, or both"
    if not isinstance(reference, dict) or not reference or set(reference) - set(CAMPAIGN_KEYS):
        raise InvalidParameter("rate.campaign", reference, allowed)
    patterns = {"experiment": NAME_PATTERN, "id": CAMPAIGN_ID_PATTERN}
    for key, value in reference.items():
        if not isinstance(value, str) or not re.match(patterns[key], value) or ".." in value:
            raise InvalidParameter(f"rate.campaign.{key}", value, f"a name matching {patterns[key]}")
    return dict(reference)


# -- a stored throughput campaign ------------------------------------------------------------------------------

#: What must be the same for a stored throughput to be this point's throughput rate: the set-up, not the procedure.
SETUP = ("lab", "generator", "generator_options", "traffic", "dut")


def setup_of(spec: dict, lab_identity: object) -> dict:
    """A point's set-up (SETUP) from its spec, in one normal form whichever way the spec spelt it: the traffic as the
    trial template holds it, the generator's options typed (not the simulated SUT's wall-clock pacing, which paces
    watching and changes nothing measured), each DUT block with its role's defaults filled in."""
    from trexlab.plan.repetition import NOT_COMPARED
    from trexlab.plan.runplan import check_generator_options, traffic_template
    from trexlab.results.store import dumps, loads
    from trexlab.spec.experiment import with_role_defaults

    generator = spec.get("generator", "software")
    options = check_generator_options(generator, spec.get("generator_options"))
    return loads(dumps({
        "lab": lab_identity, "generator": generator,
        "generator_options": {k: v for k, v in options.items() if k not in NOT_COMPARED["generator_options"]},
        "traffic": traffic_template(spec.get("traffic")).to_dict(),
        "dut": {block: with_role_defaults(block, settings) for block, settings in (spec.get("dut") or {}).items()
                if settings is not None}}))


def run_setup(provenance: dict) -> dict:
    """A run's set-up (SETUP, setup_of's form) from its provenance.json as a run writes it (a CLI run's or a campaign
    repetition's): the lab as the run described it, the generator, its options, the traffic flags (Traffic's fields
    of the trial template) and no DUT blocks (a run configures none: the lab's DUT is what it is)."""
    from trexlab.spec.schema import Traffic

    traffic = provenance["traffic"]
    return setup_of({"generator": provenance["generator"]["generator"],
                     "generator_options": provenance["generator_options"],
                     "traffic": {f.name: traffic[f.name] for f in dataclasses.fields(Traffic) if f.name in traffic}},
                    provenance["lab"])


def stored_campaigns(root: Path, reference: dict) -> list[Path]:
    """The campaign directories below root that reference names (rate.campaign), sorted."""
    experiments = [reference["experiment"]] if "experiment" in reference else sorted(
        p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    found: list[Path] = []
    for experiment in experiments:
        base = root / experiment
        ids = [reference["id"]] if "id" in reference else sorted(
            p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        found.extend(base / cid for cid in ids if (base / cid / "campaign.json").is_file())
    return found


def _campaign_text(reference: dict) -> str:
    return ", ".join(f"{key} {reference[key]}" for key in CAMPAIGN_KEYS if key in reference)


def stored_rates(root: Path, request: dict, points: list[tuple[str, dict]], lab_identity: object,
                 compare_lab: bool = True, name: str = CAMPAIGN_KEY,
                 given: object = None) -> dict[str, tuple[float, dict]]:
    """Each point's (rate, source) from the one stored throughput campaign that request names (rate.campaign) and
    that fits every point (its set-up, done); InvalidParameter, one line, where none or several do. points: (point
    id, point spec) of the campaign that takes the rates; compare_lab False: the lab is not known (a dry run without
    an inventory), the set-ups are compared without it. name and given: what the refusals name (the spec's key and
    its reference; the CLI's argument and its text)."""
    reference = request["campaign"]
    given = reference if given is None else given
    candidates = stored_campaigns(root, reference)
    if not candidates:
        raise InvalidParameter(name, given, f"a stored {GIVES_RATE} campaign in {root}: none with "
                                            f"{_campaign_text(reference)} (run it first, or name another)")
    fits, refusals = [], []
    for directory in candidates:
        rates = {}
        where = ""
        read: dict = {}  # what the first point read of this campaign, for the others (_stored_rate)
        try:
            _check_inside(directory, root)
            for pid, spec in points:
                where = f" for point {pid}" if len(points) > 1 else ""
                rates[pid] = _stored_rate(directory, request, spec, lab_identity, compare_lab, read)
        except _Unfit as exc:
            refusals.append(f"{directory}{where}: {exc}")
            continue
        fits.append((directory, rates))
    if len(fits) > 1:
        raise InvalidParameter(name, given, f"one stored campaign: {len(fits)} fit ("
                               f"{', '.join(str(d) for d, _ in fits)}): name it by experiment and id")
    if not fits:
        some = f"none of the {len(refusals)} stored campaigns with {_campaign_text(reference)} fits; " if len(
            refusals) > 1 else ""
        raise InvalidParameter(name, given, f"a complete {GIVES_RATE} campaign of this point's set-up "
                                            f"({', '.join(SETUP)}); {some}{refusals[0]}")
    return fits[0][1]


class _Unfit(ValueError):
    """Why a stored campaign gives no rate for a point: one line."""


def _check_inside(directory: Path, root: Path) -> None:
    """A stored campaign is read inside the results root only: a received one could hold links to any file of the
    machine (or be one), and those would give the rate (store.first_link: the report and a campaign's own directory
    refuse them too)."""
    from trexlab.results.store import first_link

    if (link := first_link(directory)) is not None:
        raise _Unfit(f"{link} is a symbolic link (a stored campaign is read inside the results root only)")
    if Path(root).resolve() not in directory.resolve().parents:
        raise _Unfit(f"outside the results root {root} (a symbolic link above it)")


def _stored_points(manifest: dict) -> list[str]:
    """The point directories a stored campaign.json names: each a name SweepPoint.point_id makes (one directory of the
    campaign's own: '../../x' or an absolute path read the rate from anywhere)."""
    import re

    from trexlab.spec.experiment import POINT_ID_FORM, POINT_ID_PATTERN

    points = manifest.get("points") or []
    if not isinstance(points, list) or not all(isinstance(stored, dict) for stored in points):
        raise _Unfit("campaign.json: points: allowed a list of {point, index, values}")
    names = [stored.get("point") for stored in points]
    for name in names:
        if not isinstance(name, str) or not re.match(POINT_ID_PATTERN, name):
            raise _Unfit(f"campaign.json: point {name!r}: allowed a point directory's name ({POINT_ID_FORM})")
    return names


def _once(read: dict, key: str, compute):
    """compute(), or what it gave the first time for this stored campaign (read: one campaign's)."""
    if key not in read:
        read[key] = compute()
    return read[key]


def _stored_rate(directory: Path, request: dict, spec: dict, lab_identity: object,
                 compare_lab: bool, read: dict) -> tuple[float, dict]:
    """A point's (rate, source) from one stored campaign, or _Unfit. read: what an earlier point of the same call
    read of this campaign (its campaign.json, points.jsonl and each stored point's set-up), read once, not once a
    point."""
    from trexlab.plan.repetition import SUMMARY, repetition_dir
    from trexlab.plan.runplan import procedure_params
    from trexlab.results.store import POINTS, PROVENANCE, first_difference, read_json, read_point_log
    from trexlab.spec.schema import REPETITIONS_MAX

    def manifest_read() -> tuple[dict, str]:
        try:
            manifest = read_json(directory / "campaign.json")
            return manifest, manifest["spec"]["procedure"]["name"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _Unfit(f"campaign.json unreadable ({str(exc).splitlines()[0]})") from None

    manifest, procedure = _once(read, "manifest", manifest_read)
    if procedure != GIVES_RATE:
        raise _Unfit(f"a {procedure} campaign, not {GIVES_RATE}")
    measured_on = manifest.get("measured_on")
    wanted = setup_of(spec, lab_identity if compare_lab else None)

    def status_read() -> dict:
        try:
            return read_point_log(directory)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _Unfit(f"{POINTS} unreadable ({str(exc).splitlines()[0]})") from None

    def setups_read() -> list[tuple[str, Path, dict, dict]]:
        found: list[tuple[str, Path, dict, dict]] = []
        for name in _stored_points(manifest):
            point = directory / name
            try:  # the point's spec as its repetitions ran it (its sweep values applied)
                facts = read_json(repetition_dir(point, 1) / PROVENANCE)
                found.append((name, point, facts, setup_of(facts["spec"], measured_on if compare_lab else None)))
            except (OSError, ValueError, KeyError, TypeError, InvalidParameter):
                continue  # never ran, or a spec this trexlab cannot read: no rate from it
        return found

    def search() -> dict:  # the search the spec names: it tells points of one set-up apart, the chosen one ran it
        return _once(read, "search", lambda: vars(procedure_params(GIVES_RATE, request["params"],
                                                                    "procedure.params.rate.params.")))

    status = _once(read, "status", status_read)
    nearest, matching = None, []
    for name, point, facts, have in _once(read, "setups", setups_read):
        difference = first_difference(have, wanted)
        if difference is not None:  # the refusal names the stored point that differs least, and how
            count = _differing(have, wanted)
            if nearest is None or count < nearest[0]:
                nearest = (count, name, difference)
            continue
        matching.append((name, point, facts))
    if request.get("params") is not None and len(matching) > 1:  # the search the spec names tells them apart
        matching = [m for m in matching if _same_search(m[0], m[2], search())] or matching[:1]
    if len(matching) > 1:  # points that differ in their search only: which one's median is the rate, no one's guess
        raise _Unfit(f"one point of this set-up: {len(matching)} have it ("
                     f"{', '.join(name for name, _, _ in matching)})")
    if matching:
        name, point, facts = matching[0]
        record = status.get(name, {})
        if record.get("status") != "done" or not (point / SUMMARY).is_file():
            raise _Unfit(f"point {name} is not done ({record.get('status') or 'not run'}): finish that "
                         "campaign first (run it again: it resumes)")
        if request.get("params") is not None:  # the search the spec expects is the one stored
            if (found := first_difference(_search_of(name, facts), search(), "rate.params.")) is not None:
                raise _Unfit(f"point {name}: its search differs: {_difference_text(found)}")
        try:
            count = read_json(point / SUMMARY)["repetitions"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _Unfit(f"point {name}: {SUMMARY} unreadable ({str(exc).splitlines()[0][:100]})") from None
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= REPETITIONS_MAX:
            # the run directories read: 10^10 was a list of 10^10 paths (a dry run without end)
            raise _Unfit(f"point {name}: {SUMMARY} repetitions {count!r}: allowed 1..{REPETITIONS_MAX}")
        runs = [repetition_dir(point, k) for k in range(1, count + 1)]
        if unfinished := [run.name for run in runs if not (run / "result.json").is_file()]:
            raise _Unfit(f"point {name}: repetition {unfinished[0]} of its {count} is not finished")
        # RFC 8219's throughput rate is this point's figure as the stored campaign reports it: the median of its
        # repetitions (median_throughput, as for a search run in the campaign itself).
        try:
            rate, source = median_throughput(point, runs)
        except InvalidParameter as exc:
            raise _Unfit(f"point {name}: {exc.allowed}") from None
        source["campaign"] = {"experiment": manifest.get("experiment"), "id": manifest.get("campaign"),
                              "point": name, "git_commit": manifest.get("git_commit"),
                              "measured_on": measured_on, "params": facts.get("params")}
        return rate, source
    if nearest is None:
        raise _Unfit("no point that ran a repetition")
    raise _Unfit(f"no point of this set-up (its point {nearest[1]}: {_difference_text(nearest[2])})")


def _search_of(name: str, facts: dict) -> dict:
    """The throughput search a stored point's repetition ran (facts: its provenance), its params typed."""
    from trexlab.plan.runplan import procedure_params

    try:
        return vars(procedure_params(GIVES_RATE, facts["spec"]["procedure"].get("params"), ""))
    except InvalidParameter as exc:
        raise _Unfit(f"point {name}: its search's params no longer valid ({exc})") from None


def _same_search(name: str, facts: dict, given: dict) -> bool:
    try:
        return _search_of(name, facts) == given
    except _Unfit:
        return False


def _differing(a: object, b: object) -> int:
    """How many leaves of two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sum(_differing(a.get(key), b.get(key)) for key in {*a, *b})
    return int(a != b)


def _difference_text(found: tuple[str, object, object]) -> str:
    from trexlab.results.store import dumps

    key, there, here = found
    return f"{key} {dumps(there)} there, {dumps(here)} here"

