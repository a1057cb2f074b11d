"""Shared by the bare-metal lab tests: the provider mirror they need, and API keys nobody else knows."""

from __future__ import annotations

import secrets

import pytest

from labtools import REPO

MIRROR_RC = REPO / "terraform/providers/terraformrc"
NEEDS_MIRROR = pytest.mark.skipif(
    not (MIRROR_RC.is_file() and (REPO / "terraform/providers/mirror").is_dir()),
    reason="canonical/maas is not in terraform/providers/mirror: run make providers (needs Go)")


def random_api_key() -> str:
    """consumer:token:secret, shaped like a MAAS key; random, so that any hit in a grep is a leak."""
    return ":".join(secrets.token_hex(n) for n in (10, 9, 16))
