"""What the local and VM labs' Terraform asks of their realiser (scripts/nslab.py, scripts/vmlab.py), and when.

The modules are copied under a directory whose name has a blank and a shell command substitution, and the
realiser is replaced by a stand-in that only records its calls (and fails its `up` on request): real
applies and destroys of the real main.tf, in seconds, with no root and no lab. Checked:
- an `up` that failed halfway is still taken down by lab-down (Terraform runs no destroy-time provisioner
  of a tainted resource);
- another topology takes the old lab down, with the old plan, before the new one comes up;
- a lab made before the realiser's resources moved into terraform/modules/realiser (its state holds them at
  the root: terraform_data.lab, terraform_data.teardown) is neither replaced nor touched by the next apply:
  the labs' moved blocks carry its state over;
- the checkout's path reaches no shell.
"""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from labtools import REPO, terraform, tf_env

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]

# A blank (one word to a shell no more) and a command a shell would run (it makes a file named `ran`).
HOSTILE_DIR = "check out $(touch ran)"

STAND_IN = textwrap.dedent("""\
    import json, os, sys
    from pathlib import Path
    plan = json.loads(os.environ[{variable!r}])
    state = Path(plan["state_dir"])
    with open(state / "calls.log", "a") as log:
        log.write(f"{{sys.argv[1:]}} {{plan['lab']}} {{plan['topology']}}\\n")
    sys.exit(1 if sys.argv[1:] == ["up"] and (state / "fail-up").exists() else 0)
    """)


@pytest.mark.parametrize(("lab", "script", "variable", "extra"), [
    ("local", "nslab.py", "NSLAB_PLAN", []),
    ("vm", "vmlab.py", "VMLAB_PLAN", ["-var=image_dir=/nonexistent/image", "-var=accel=tcg"]),
])
def test_failed_up_is_taken_down_and_a_new_topology_replaces_the_old_lab(tmp_path, lab, script, variable, extra):
    checkout = tmp_path / HOSTILE_DIR
    shutil.copytree(REPO / "terraform/modules", checkout / "terraform/modules")
    shutil.copytree(REPO / f"terraform/labs/{lab}", checkout / f"terraform/labs/{lab}",
                    ignore=shutil.ignore_patterns(".terraform*", "terraform.tfstate*"))
    module = checkout / f"terraform/labs/{lab}"
    (module / "scripts" / script).write_text(STAND_IN.format(variable=variable))
    state = tmp_path / "state"
    state.mkdir()
    env = tf_env(tmp_path)
    init = terraform(str(module), "init", "-input=false", f"-backend-config=path={state / 'terraform.tfstate'}",
                     env=env)
    assert init.returncode == 0, init.stdout[-2000:] + init.stderr[-2000:]

    def tf(command: str, topology: str) -> str:
        approve = [] if command == "plan" else ["-auto-approve"]
        result = terraform(str(module), command, *approve, "-input=false", "-var=lab_name=rlc",
                           f"-var=topology={topology}", f"-var=state_dir={state}", "-var=cpu_count=2", *extra,
                           env=env)
        return result.stdout + result.stderr if result.returncode == 0 else f"failed: {result.stderr[-1500:]}"

    def calls() -> list[str]:
        log = state / "calls.log"
        lines = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return lines

    # An `up` that fails halfway (what it made stays until a `down`): lab-down still runs `down`.
    (state / "fail-up").touch()
    assert tf("apply", "single").startswith("failed:")
    assert calls() == ["['up'] rlc single"]
    (state / "fail-up").unlink()
    out = tf("destroy", "single")
    assert not out.startswith("failed:"), out
    assert calls() == ["['down'] rlc single"], "lab-down of a lab whose up failed left it up"

    out = tf("apply", "single")
    assert not out.startswith("failed:"), out
    assert calls() == ["['up'] rlc single"]

    # The state a lab-up before the module wrote: the same resources, at the root's addresses.
    for resource in ("lab", "teardown"):
        moved = terraform(str(module), "state", "mv", f"module.realiser.terraform_data.{resource}",
                          f"terraform_data.{resource}", env=env)
        assert moved.returncode == 0, moved.stderr[-1500:]
    out = tf("plan", "single")
    assert "0 to add, 0 to change, 0 to destroy" in out or "No changes." in out, out
    assert "must be replaced" not in out and "will be destroyed" not in out, out
    out = tf("apply", "single")
    assert not out.startswith("failed:"), out
    assert calls() == [], "the lab made before the realiser module was taken down or made again"
    listed = terraform(str(module), "state", "list", env=env).stdout.split()
    assert {"module.realiser.terraform_data.lab", "module.realiser.terraform_data.teardown"} <= set(listed), listed

    # Another topology: the old lab down with its own plan, then the new one up; lab-down takes that one down.
    out = tf("apply", "dual")
    assert not out.startswith("failed:"), out
    # (`down` runs twice where the lab is not tainted: once for the lab, once for the realiser's teardown.)
    assert calls() == [*["['down'] rlc single"] * 2, "['up'] rlc dual"]
    out = tf("destroy", "dual")
    assert not out.startswith("failed:"), out
    assert calls() == ["['down'] rlc dual"] * 2
    assert json.loads((state / "terraform.tfstate").read_text())["resources"] == []

    assert list(tmp_path.rglob("ran")) == [], "the checkout's path was run by a shell"
