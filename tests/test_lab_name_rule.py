"""A lab's name has one rule (trexlab/rolevalues.py LAB_NAME): a LAB_NAME works end to end or is refused at the
front door, in one line, before anything changes.

The inventory's check held the namespace names a name makes (tl-<lab>-<node>) to the 15 characters of interface
names: make lab-up accepted a 6-character name, and every trexlab command on that lab then failed on its tester's
namespace tl-<6>-tester (16 characters), in a message that did not say why."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from trexlab import rolevalues
from trexlab.rolevalues import LAB_NAME, LAB_NAME_FORM, LAB_NAME_MAX
from trexlab.testbed.inventory import load_lab

from labtools import REPO, terraform, tf_env

sys.path.insert(0, str(REPO / "terraform" / "labs" / "local" / "scripts"))
from nslab import LAB_NAMESPACE  # noqa: E402  (the local lab's realiser: standard library only, not a package)

#: The longest name the rule allows, and one character more (neither is a lab any other test makes).
LONGEST = ("zr" + "z" * LAB_NAME_MAX)[:LAB_NAME_MAX]
TOO_LONG = LONGEST + "z"
#: Where the rule is written again for readers the Python cannot reach (Terraform's variable validations, the labs'
#: READMEs): each must say what LAB_NAME_FORM says.
FORM = re.compile(r"\b\d+-\d+ characters a-z 0-9\b")


def front_door(*argv: str, **env: str) -> subprocess.CompletedProcess:
    outside = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "LAB_NAME"}
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60,
                          env={**outside, "VENV": str(REPO / ".venv"), **env})


def test_the_front_door_takes_the_longest_lab_name_and_refuses_one_more_in_one_line():
    """The Makefile and scripts/common.sh read LAB_NAME_MAX from rolevalues: both take the longest name and refuse one
    character more, saying LAB_NAME and its allowed form, exit 2, before the lab's state directory is made."""
    assert LAB_NAME.fullmatch(LONGEST) and not LAB_NAME.fullmatch(TOO_LONG)
    assert front_door("make", "-n", "lab-up", f"LAB_NAME={LONGEST}").returncode == 0
    for result in (front_door("make", "-n", "lab-up", f"LAB_NAME={TOO_LONG}"),
                   front_door("scripts/lab.sh", "up", LAB_NAME=TOO_LONG)):
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
        assert f"LAB_NAME={TOO_LONG}: allowed {LAB_NAME_FORM}" in lines[0], lines
    assert not (REPO / ".cache/labs" / TOO_LONG).exists() and not (REPO / "inventory/generated" / TOO_LONG).exists()


def test_every_copy_of_the_rule_says_what_rolevalues_says():
    """Terraform's variable validations cannot read rolevalues: each lab kind's copy of the pattern and every
    'N-M characters a-z 0-9' the labs' files and the front door's scripts write must be LAB_NAME's."""
    patterns, forms = [], []
    for path in sorted([*REPO.glob("terraform/**/*.tf"), *REPO.glob("terraform/**/*.md"), REPO / "Makefile",
                        *REPO.glob("scripts/*.sh"), REPO / "README.md", *REPO.glob("docs/*.md")]):
        if ".terraform" in path.parts:
            continue
        text = path.read_text()
        where = path.relative_to(REPO)
        patterns += [(where, p) for p in re.findall(r'regex\("(.*?)", var\.lab_name\)', text)]
        forms += [(where, f) for f in FORM.findall(text)]
    assert {kind for kind, _ in patterns} >= {REPO.joinpath(f"terraform/labs/{k}/variables.tf").relative_to(REPO)
                                              for k in ("local", "vm", "static", "maas")}
    modules = {where for where, p in patterns if p != f"^{LAB_NAME.pattern}$"}
    # The management module's own bound is its interface names' (tl<lab>m<n>), wider than the rule.
    assert modules == {REPO.joinpath("terraform/modules/management/variables.tf").relative_to(REPO)}, patterns
    assert forms and all(f == LAB_NAME_FORM for _, f in forms), [x for x in forms if x[1] != LAB_NAME_FORM]


@pytest.mark.terraform
@pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")
def test_the_longest_lab_name_makes_a_lab_every_consumer_accepts(tmp_path):
    """terraform plan of a dual local lab (every node name: tester, dut1, dut2, client, server) named LONGEST: its
    inventory loads (every trexlab command's first step), each namespace is one nslab.py counts as the lab's, each
    management link an interface name; TOO_LONG is refused by the lab's own validation."""
    env = tf_env(tmp_path)
    module = str(REPO / "terraform/labs/local")
    init = terraform(module, "init", f"-backend-config=path={tmp_path / 'state'}", "-input=false", env=env)
    assert init.returncode == 0, init.stderr[-2000:]

    def plan(name: str) -> subprocess.CompletedProcess:
        return terraform(module, "plan", "-input=false", f"-var=lab_name={name}", "-var=topology=dual",
                         f"-var=state_dir={tmp_path / 'lab'}", f"-out={tmp_path / name}.plan", env=env)

    assert plan(LONGEST).returncode == 0
    planned = json.loads(terraform(module, "show", "-json", f"{tmp_path / LONGEST}.plan", env=env).stdout)
    outputs = planned["planned_values"]["outputs"]
    hosts_yml = tmp_path / "hosts.yml"
    hosts_yml.write_text(outputs["inventory_yaml"]["value"])
    lab = load_lab(hosts_yml)
    assert lab.name == LONGEST and sorted(lab.nodes) == ["client", "dut1", "dut2", "server", "tester"]
    for name, node in outputs["plan"]["value"]["nodes"].items():
        assert LAB_NAMESPACE.fullmatch(node["netns"])[1] == LONGEST, node["netns"]
        rolevalues.check_interface(f"{name}.mgmt_root_if", node["mgmt_root_if"])
    refused = plan(TOO_LONG)
    assert refused.returncode != 0 and "var.lab_name" in refused.stderr, refused.stderr[-2000:]
