"""Experiments that need a DUT with netem, at CI scale on the VM lab: they run to the end and produce
their table. (On the local lab here they stop before any change: tests/e2e/test_experiments.py.)"""

import json
import subprocess

import pytest

from trexlab.results.store import load_runs

from labtools import REPO, VENV

pytestmark = [pytest.mark.lab, pytest.mark.vm]


def test_gaming_delay_produces_its_table_on_the_vm_lab(lab_factory, tmp_path):
    # The VM lab of tests/vm/test_vm_lab.py, which takes it down next: the campaign leaves its routing for
    # the experiment's one destination network, not the two the other users of vm1 configured.
    lab = lab_factory("vm1", "single", 2, kind="vm")
    result = subprocess.run([str(VENV / "bin" / "trexlab"), "campaign", "experiments/gaming-delay", "--scale", "ci",
                             "--results", str(tmp_path),
                             "--ceilings", str(tmp_path / "tester-ceilings.json"), "--inventory", str(lab.inventory)],
                            capture_output=True, text=True, timeout=900, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout)
    assert outcome["failed"] == [] and outcome["done"] == outcome["points"] == 2
    runs = load_runs(outcome["campaign"])
    table = runs.set_index("provenance.sweep.dut.impairment.delay_ms")["result.throughput_fps"].sort_index()
    assert list(table.index) == [0, 100]
    # Delay alone does not lower RFC 2544 throughput while the receive tail covers it (the paper's Table I);
    # what the emulated DUT forwards is some 10-20 kfps, found to the search's 5000 fps resolution.
    assert table.min() > 0 and abs(table[0] - table[100]) <= 5_000, table.to_dict()
    if lab.duts[0].extra["trexlab_vm_accel"] == "tcg":
        assert "emulator, not a device" in result.stderr
