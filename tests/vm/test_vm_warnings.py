"""Lab.warnings(): an emulated (TCG) VM DUT is named in what procedures print and provenance keeps; a VM
DUT under KVM and every other lab kind give none. (No lab needed: inventories written here.)"""

import pytest
import yaml

from trexlab.testbed.inventory import load_lab


def inventory(tmp_path, kind, accel=None):
    dut = {"ansible_host": "2001:2:0:ff80::5", "test_ports": []}
    if accel:
        dut["trexlab_vm_accel"] = accel
    data = {"all": {"vars": {"trexlab_lab": {"name": "x", "kind": kind, "topology": "single"}},
                    "children": {"testers": {"hosts": {"tester": {"ansible_host": "2001:2:0:ff80::3"}}},
                                 "duts": {"hosts": {"dut1": dut}}}}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return load_lab(path)


def test_an_emulated_dut_is_named_in_the_warning_and_in_the_description(tmp_path):
    lab = inventory(tmp_path, "vm", "tcg")
    assert len(lab.warnings()) == 1 and "dut1" in lab.warnings()[0]
    assert "emulator, not a device" in lab.warnings()[0]
    assert lab.describe()["warnings"] == lab.warnings()


@pytest.mark.parametrize(("kind", "accel"), [("vm", "kvm"), ("local", None), ("static", None)])
def test_no_warning_otherwise(tmp_path, kind, accel):
    assert inventory(tmp_path, kind, accel).warnings() == []
