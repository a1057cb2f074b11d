"""make lab-up of a lab name another checkout's lab is up under: the realiser refused it (nslab.py refuse_foreign)
during Terraform's apply, after lab-up had written the lab's state directory: twenty lines of Terraform's log, the
script's line and make's. scripts/lab.sh asks it before any recipe now, from the lab's namespaces on the host: one
line naming LAB_NAME and the other checkout's state directory, and nothing made. The other lab is stood in for by a
namespace of its name and its recorded owner (nothing runs in it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from labtools import NSLAB_DIR, REPO, run

sys.path.insert(0, str(NSLAB_DIR))
import nslab  # noqa: E402  (the local lab's realiser: standard library only, not a package)

pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]

NAME = "fgn1"


def test_make_lab_up_of_a_name_up_for_another_checkout_is_one_line_and_makes_nothing(tmp_path):
    other = {"lab": NAME, "state_dir": str(tmp_path / "other-checkout" / ".cache" / "labs" / NAME)}
    netns = f"tl-{NAME}-dut1"
    run("ip", "netns", "add", netns)
    nslab.record_owner(other)
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("MAKE") and k not in ("LAB", "LAB_NAME", "TOPOLOGY", "NETWORKS")}
        result = subprocess.run(["make", "--no-print-directory", "lab-up", f"LAB_NAME={NAME}"], capture_output=True,
                                text=True, cwd=REPO, env=env, timeout=120)
        output = (result.stdout + result.stderr).strip().splitlines()
        said = (f"LAB_NAME={NAME}: lab {NAME}: a lab of that name is up for another state directory "
                f"({other['state_dir']}: another checkout's): take it down there, or choose another lab name")
        assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
        assert not (REPO / ".cache" / "labs" / NAME).exists(), "lab-up wrote the lab's state directory"
        assert netns in run("ip", "netns", "list").stdout and nslab.recorded_owner(NAME) == other["state_dir"]
    finally:
        nslab.forget_owner(other)
        run("ip", "netns", "delete", netns, check=False)
