"""terraform test of terraform/labs/local: a real apply and destroy, then nothing of it is left."""

import pytest

from labtools import lab_leftovers, run

pytestmark = pytest.mark.lab


def test_terraform_test_applies_and_destroys_the_local_lab(tmp_path):
    env = {"TF_CLI_CONFIG_FILE": "/dev/null", "TF_DATA_DIR": str(tmp_path / "tf"), "TF_IN_AUTOMATION": "1"}
    run("terraform", "-chdir=terraform/labs/local", "init", "-backend=false", "-input=false", env=env)
    result = run("terraform", "-chdir=terraform/labs/local", "test", "-no-color", env=env, check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed, 0 failed" in result.stdout
    assert lab_leftovers("tft") == []
