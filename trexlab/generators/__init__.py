"""Traffic generators behind the trial contract (:mod:`trexlab.trial`).

Each generator module exposes ``create(**options) -> Generator`` and its generator class, named in
:data:`GENERATORS`; the class declares what it can do (``capabilities``: trexlab.trial.Capabilities), which a run
plan checks without making a generator. The modules are imported lazily so that, e.g., the sim generator needs
neither a lab nor TRex.
"""

from __future__ import annotations

import importlib

from trexlab.trial import Capabilities, Generator

#: Generator name -> its class in trexlab.generators.<name>.
GENERATORS = {"sim": "SimGenerator", "software": "SoftwareGenerator", "trex": "TRexGenerator"}


def _check(name: str) -> None:
    if name not in GENERATORS:
        raise ValueError(f"generator={name!r}: allowed {', '.join(GENERATORS)}")


def generator_class(name: str) -> type[Generator]:
    _check(name)
    return getattr(importlib.import_module(f"{__name__}.{name}"), GENERATORS[name])


def capabilities(name: str) -> Capabilities:
    """What the named generator can do (its class's declaration)."""
    return generator_class(name).capabilities


def create_generator(name: str, **options) -> Generator:
    _check(name)
    module = importlib.import_module(f"{__name__}.{name}")
    return module.create(**options)
