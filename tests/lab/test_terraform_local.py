"""terraform test of terraform/labs/local: a real apply and destroy, then nothing of it is left."""

from pathlib import Path

import pytest

from labtools import lab_leftovers, terraform_test

# Configuration and frame counts at low rates, nothing that a busy CPU changes: make test runs it beside
# other such tests (the `unmeasured` marker).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]


def test_terraform_test_applies_and_destroys_the_local_lab(tmp_path):
    # The apply makes real namespaces and management links in this host's network: not offline.
    terraform_test("terraform/labs/local", tmp_path, network=True)
    assert lab_leftovers("tft") == []
    # The key pair, authorized_keys and known_hosts the apply made in its state_dir go with the destroy.
    state_dir = Path("/tmp/trexlab-tftest-tft")
    assert not state_dir.exists(), sorted(p.name for p in state_dir.iterdir())
