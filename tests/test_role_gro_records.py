"""roles/netem and roles/dut_reference hold a DUT port's GRO off together through trexlab.lab.netconf, which finds
the other holder's record only in its own record's directory: both records must lie in the node's state directory
whatever state directory each role is given (-e netem_state_dir=... by hand; campaigns give none)."""

from __future__ import annotations

import posixpath
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.trexlab.lab.plugins.filter.trexlab import dut_state_name, node_state_dir
from trexlab import rolevalues

ROLES = Path(__file__).resolve().parent.parent / "ansible_collections/trexlab/lab/roles"


def gro_record(role: str, **given) -> str:
    """The state_file of the role's netconf task (its GRO record) as Ansible resolves it: the role's defaults, its
    vars/main.yml (which a play's vars do not override) and the given extra vars, templates rendered until none is
    left."""
    tasks = yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text())
    template = next(t for t in tasks if "trexlab.lab.netconf" in t)["trexlab.lab.netconf"]["state_file"]
    variables = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    if (ROLES / role / "vars" / "main.yml").exists():
        variables.update(yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text()))
    variables.update(given)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters.update({"trexlab.lab.node_state_dir": node_state_dir, "trexlab.lab.dut_state_name": dut_state_name,
                        "dirname": posixpath.dirname})
    for _ in range(5):  # a variable's template may name another's
        variables = {k: env.from_string(v).render(variables) if isinstance(v, str) else v for k, v in variables.items()}
    return env.from_string(template).render(variables)

@pytest.mark.parametrize("state_dirs", [{}, {"netem_state_dir": "/var/lib/trexlab/l1/dut1/netem",
                                             "dut_reference_state_dir": "/srv/reference"}])
def test_both_roles_gro_records_lie_in_the_nodes_state_directory_whatever_their_state_dir(state_dirs):
    lab = {"trexlab_lab": {"name": "l1"}, "inventory_hostname": "dut1", **state_dirs}
    netem, reference = gro_record("netem", **lab), gro_record("dut_reference", **lab)
    assert posixpath.dirname(netem) == posixpath.dirname(reference) == rolevalues.node_state_dir("l1", "dut1"), (
        netem, reference)
    assert posixpath.basename(netem) != posixpath.basename(reference)
