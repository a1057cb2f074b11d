"""Benchmarking procedures built on the trial contract; none knows which generator it drives.

Every procedure is a module that implements :class:`Procedure` (a typing.Protocol; a module satisfies it by its
module-level names) and is registered in :data:`MODULES`, the one list of procedures: the CLI's verbs, the spec's
``procedure.name`` and its JSON Schema, the run plan, campaigns and the lab-time estimate all come from
:func:`registry`. ``tests/test_procedure_registry.py`` checks that every module of this package but the shared
helpers (``common``) is registered and has every member with its signature.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from trexlab.plan.estimate import Cost
    from trexlab.plan.runplan import RunPlan
    from trexlab.procedures.common import RunContext
    from trexlab.testbed.endpoints import LabView
    from trexlab.trial import TrialSpec

#: The procedure modules of this package, in the CLI's order. The one list: names come from each module's NAME.
MODULES = ("throughput", "mlrsearch", "flr", "latency", "pdv", "selftest", "rfc6349", "http_download")
#: Modules of this package that are shared helpers, not procedures.
HELPERS = ("common",)


@runtime_checkable
class Procedure(Protocol):
    """What every procedure module declares (module-level names).

    * ``NAME``: the CLI verb, the spec's ``procedure.name``, the ``procedure`` of its result.json.
    * ``Params``: a frozen dataclass whose ``__post_init__`` checks every field and raises
      :class:`trexlab.params.InvalidParameter` (one line naming the parameter and its allowed range); its fields,
      with their defaults, are the CLI's flags and the spec's ``procedure.params`` (trexlab.spec.schema).
    * ``TAKES_RATE``: measures at a rate that may come from the throughput procedure's results (RFC 8219:
      ``--rate-from``, ``rate: {from: throughput}``).
    * ``needs_tcp_endpoints(params)``: whether a run with these ``procedure.params`` (a mapping, as the spec
      gives them) runs on the lab's client and server nodes (campaigns then apply playbooks/tcp-endpoints.yml).
    * ``check(plan)``: everything about the run that the plan alone tells (trexlab.plan.runplan.RunPlan: params,
      traffic, the generator's capabilities, the lab's inventory), checked when the plan is made (a dry run
      too), reading no host; raises InvalidParameter or LabError (one line).
    * ``check_lab(plan, lab)``: what only the lab can tell (trexlab.testbed.endpoints.LabView: the TCP endpoints'
      configuration as the run will find it, the nodes' kernel limits, the tester ports' MTU), read but never
      changed; raises InvalidParameter or LabError (one line). The run path calls it once the lab is known,
      before any run directory is made or any host configured: the CLI before its generator, a campaign for
      every point before the first (trexlab.plan.runplan.check_on_lab). ``run`` then refuses nothing it could
      have refused here: what it still refuses depends on what it measured (e.g. RFC 6349's BDP window).
    * ``headline_names(params, traffic)``: the names of the headline figures (result.json ``headline``) a run with
      these Params and trial template reports, or may report (a figure it could not measure is missing): what an
      adaptive rule's ``until.figures`` may name (trexlab.spec.experiment.validate). Each module builds its
      result's headline from the same names.
    * ``cost(params, traffic)``: the lab time of one run (trexlab.plan.estimate.Cost), touching nothing.
    * ``run(context, params)``: one run. ``context`` (:class:`trexlab.procedures.common.RunContext`) holds the
      generator, the trial template (its load and duration replaced per trial), ``on_trial(result, context)``
      called the moment each trial ends (the results store appends it) and ``progress(phase, info)``. Returns
      a result with ``to_dict()`` (JSON-ready, always disclosing the loss tolerance and method).
    * optional ``repetition_deviations(count)``: what a summary over count repetitions falls short of the
      standard's (RFC 8219's latency and PDV: 20), added to summary.json's method deviations
      (trexlab.plan.repetition.repeat); a procedure without it asks for no number of repetitions.
    """

    NAME: str
    Params: type
    TAKES_RATE: bool

    def needs_tcp_endpoints(self, params: Mapping) -> bool: ...

    def check(self, plan: RunPlan) -> None: ...

    def check_lab(self, plan: RunPlan, lab: LabView) -> None: ...

    def headline_names(self, params, traffic: TrialSpec) -> tuple[str, ...]: ...

    def cost(self, params, traffic: TrialSpec) -> Cost: ...

    def run(self, context: RunContext, params): ...


#: Each callable member's parameters, in order (a module's own function may add optional ones after them).
SIGNATURES = {"needs_tcp_endpoints": ("params",), "check": ("plan",), "check_lab": ("plan", "lab"),
              "cost": ("params", "traffic"), "headline_names": ("params", "traffic"),
              "run": ("context", "params")}


def conformance(module) -> list[str]:
    """What a module lacks to be a Procedure: missing members, members of the wrong kind or signature (empty:
    none)."""
    problems = []
    members = {*Procedure.__annotations__, *SIGNATURES}
    for member in sorted(members):
        if not hasattr(module, member):
            problems.append(f"no {member}")
    if problems:
        return problems
    if not isinstance(module.NAME, str) or not module.NAME:
        problems.append("NAME is not a name")
    if not inspect.isclass(module.Params) or not hasattr(module.Params, "__dataclass_fields__"):
        problems.append("Params is not a dataclass")
    if not isinstance(module.TAKES_RATE, bool):
        problems.append("TAKES_RATE is not a bool")
    for member, wanted in SIGNATURES.items():
        function = getattr(module, member)
        if not callable(function):
            problems.append(f"{member} is not callable")
            continue
        parameters = list(inspect.signature(function).parameters.values())
        names = tuple(p.name for p in parameters[:len(wanted)])
        extra = [p for p in parameters[len(wanted):] if p.default is inspect.Parameter.empty]
        if names != wanted or extra:
            problems.append(f"{member}{inspect.signature(function)}: expected {member}({', '.join(wanted)})")
    return problems


@functools.cache
def registry() -> dict[str, Procedure]:
    """NAME -> procedure module, every registered module checked against the protocol."""
    found: dict[str, Procedure] = {}
    for module_name in MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        problems = conformance(module)
        if problems:
            raise TypeError(f"procedure module {module.__name__}: {'; '.join(problems)}")
        if module.NAME in found:
            raise TypeError(f"procedure module {module.__name__}: NAME {module.NAME!r} is taken")
        found[module.NAME] = module
    return found


def names() -> tuple[str, ...]:
    """Every procedure's name, in the CLI's order."""
    return tuple(registry())


def procedure(name: str) -> Procedure:
    """The procedure of that name; ValueError (one line) naming those there are."""
    try:
        return registry()[name]
    except KeyError:
        raise ValueError(f"procedure {name!r}: allowed {', '.join(names())}") from None


def taking_rate() -> tuple[str, ...]:
    """The procedures that measure at a rate from throughput results (TAKES_RATE)."""
    return tuple(name for name, p in registry().items() if p.TAKES_RATE)
