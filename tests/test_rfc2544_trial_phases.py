"""RFC 2544 section 23 a and b: before each trial a router DUT gets a routing update, then 2 s for the routing to
settle, and learning frames, then 2 s for the learning to settle. trexlab's trials have neither, and no result said
so, although MLRsearch (draft-ietf-bmwg-mlrsearch-15 section 4.4.3) requires every deviation from section 23 in the
report. A lab's DUTs route by static routes and pin their next hops' MACs with permanent neighbour entries
(roles/dut_routing): phase a has no routing protocol to update, phase b nothing to teach or refresh. Every procedure
built on RFC 2544's trials (throughput, frame loss rate, MLRsearch) now says what stands in their place, for the SUT
it measured: a lab's DUT, the tester's own ports (loopback), the simulated SUT."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from trexlab.generators import create_generator
from trexlab.plan.repetition import method_line, method_of
from trexlab.procedures import common, flr, mlrsearch, throughput
from trexlab.procedures.common import RunContext
from trexlab.trial import Capabilities, TrialSpec

TRAFFIC = TrialSpec(offered_load=1.0, duration=1.0)
QUICK = {"name": "NDR", "loss_ratio": 0.0, "exceed_ratio": 0.0, "relative_width": 0.005,
         "initial_trial_duration": 1.0, "final_trial_duration": 1.0, "duration_sum": 1.0}
RUNS = {
    "throughput": lambda context: throughput.run(context, throughput.Params(max_rate=1e6, trial_duration=1)),
    "flr": lambda context: flr.run(context, flr.Params(max_rate=1e6, trial_duration=1)),
    "mlrsearch": lambda context: mlrsearch.run(context, mlrsearch.Params(max_rate=1e6, goals=(QUICK,))),
}


class LabTester:
    """A lab's tester as a procedure sees it (a lab generator's capabilities, a lab of this topology), its trials
    the simulated SUT's."""

    name = "software"
    capabilities = Capabilities(needs_lab=True, dont_fragment=True, frame_timeout=True, translated_frames=True)

    def __init__(self, topology: str | None):
        self.lab = None if topology is None else SimpleNamespace(topology=topology)
        self.sim = create_generator("sim", capacity=437_000)

    def run_trial(self, spec):
        return self.sim.run_trial(spec)


@pytest.mark.parametrize("procedure", RUNS)
@pytest.mark.parametrize(("topology", "disclosed"), [("sim", "sim"), ("single", "dut"), ("dual", "dut"),
                                                     ("loopback", "loopback"), (None, "unknown")])
def test_each_rfc2544_trial_says_what_stands_in_place_of_the_routing_update_and_the_learning_frames(
        procedure, topology, disclosed):
    # topology None: a lab generator without a lab (a TRex server given directly), its DUT not one trexlab set up.
    generator = create_generator("sim", capacity=437_000) if topology == "sim" else LabTester(topology)
    result = RUNS[procedure](RunContext(generator, TRAFFIC)).to_dict()
    wanted = common.RFC2544_SETUP_PHASES[disclosed]
    assert result["deviations"][-len(wanted):] == wanted, result["deviations"]
    others = {text for kind, texts in common.RFC2544_SETUP_PHASES.items() if kind != disclosed for text in texts}
    assert not others & set(result["deviations"]), "only what is true of the SUT measured"
    line = method_line(method_of(result))
    assert all(text in line for text in wanted), line


def test_the_lab_duts_disclosure_is_what_the_lab_configures():
    # The reason given for a lab's DUT: static routes and permanent neighbour entries for its next hops, by
    # roles/dut_routing, which playbooks/site.yml applies to every DUT. Should a DUT come to learn its routes or its
    # neighbours otherwise, the disclosure would be false: this test says where to look.
    import yaml

    from trexlab.testbed.inventory import ROLE_GROUPS

    root = Path(__file__).resolve().parent.parent
    site = yaml.safe_load((root / "playbooks" / "site.yml").read_text())
    assert any(play.get("hosts") == ROLE_GROUPS["dut"] and {"role": "trexlab.lab.dut_routing"} in play.get("roles", [])
               for play in site)
    tasks = yaml.safe_load((root / "ansible_collections/trexlab/lab/roles/dut_routing/tasks/main.yml").read_text())
    [netconf] = [task["trexlab.lab.netconf"] for task in tasks if "trexlab.lab.netconf" in task]
    assert {"routes", "neighbours"} <= set(netconf)
    module = (root / "ansible_collections/trexlab/lab/plugins/modules/netconf.py").read_text()
    assert '"neigh", "replace", address, "lladdr", lladdr, "dev", dev, "nud", "permanent"' in module
    routing, learning = common.RFC2544_SETUP_PHASES["dut"]
    settle = f"{common.RFC2544_SETTLE_WAIT:g} s"
    assert routing.startswith(f"no routing update before each trial (RFC 2544 section 23 a: an update then {settle}")
    assert "no routing protocol" in routing and "static" in routing and "roles/dut_routing" in routing
    assert learning.startswith(f"no learning frames before each trial (RFC 2544 section 23 b: learning frames then "
                               f"{settle}")
    assert "permanent" in learning and "roles/dut_routing" in learning
