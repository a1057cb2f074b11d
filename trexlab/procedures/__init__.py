"""Benchmarking procedures built on the trial contract; none knows which generator it drives.

Contract for every procedure module (throughput, mlrsearch, flr, latency, pdv, selftest):

* a frozen dataclass ``Params`` whose ``__post_init__`` validates every field
  and raises :class:`trexlab.params.InvalidParameter` with a one-line message
  naming the parameter and its allowed range;
* ``run(generator, traffic: TrialSpec, params: Params, on_trial=None, progress=None) -> result``
  where ``traffic`` is a template spec whose load/duration the procedure
  replaces, ``on_trial(result: TrialResult, context: dict)`` is called the
  moment each trial ends (the results store appends it), ``progress(phase: str,
  info: dict)`` receives human-facing progress, and the result object has
  ``to_dict()`` (JSON-ready, always disclosing loss tolerance and method).

A procedure may also define ``check(generator, params, traffic)``: what it can
check before any traffic (the CLI and campaigns call it first), and
``NEEDS_TCP_ENDPOINTS = True`` when it runs on the lab's client and server nodes
(campaigns then apply playbooks/tcp-endpoints.yml around the experiment).

``PROCEDURES`` maps the CLI name to the module path.
"""

PROCEDURES = {
    "throughput": "trexlab.procedures.throughput",
    "mlrsearch": "trexlab.procedures.mlrsearch",
    "flr": "trexlab.procedures.flr",
    "latency": "trexlab.procedures.latency",
    "pdv": "trexlab.procedures.pdv",
    "selftest": "trexlab.procedures.selftest",
    "tcp": "trexlab.procedures.rfc6349",
    "http_download": "trexlab.procedures.http_download",
}
