"""Traffic generators behind the trial contract (:mod:`trexlab.trial`).

Each generator module exposes ``create(**options) -> Generator``; they are
imported lazily so that, e.g., the sim generator needs neither a lab nor TRex.
"""

from __future__ import annotations

import importlib

from trexlab.trial import Generator

GENERATORS = ("sim", "software", "trex")


def create_generator(name: str, **options) -> Generator:
    if name not in GENERATORS:
        raise ValueError(f"generator={name!r}: allowed {', '.join(GENERATORS)}")
    module = importlib.import_module(f"trexlab.generators.{name}")
    return module.create(**options)
