"""trexlab.paths: one settings object says where the notebooks, roles, playbooks, profiles and swtester are."""

from __future__ import annotations

from pathlib import Path

import pytest

from trexlab import paths as paths_module
from trexlab.plan.campaign import Campaign, PlaybookError
from trexlab.spec.experiment import validate

REPO = Path(__file__).resolve().parent.parent


def test_a_checkout_is_its_own_root_with_its_swtester():
    p = paths_module.resolve({})
    assert p.root == REPO and p.checkout == REPO
    assert p.swtester == REPO / "swtester" / "swtester"
    assert (p.notebooks / "report.ipynb").is_file() and (p.roles / "netem" / "meta" / "argument_specs.yml").is_file()
    assert (p.trex_profiles / "stl_rfc2544_udp.py").is_file() and p.ansible_cfg.is_file()


def test_environment_overrides_win(tmp_path):
    p = paths_module.resolve({"TREXLAB_HOME": str(tmp_path), "TREXLAB_SWTESTER": "/opt/sw/swtester"})
    assert p.root == tmp_path and p.playbooks == tmp_path / "playbooks" and p.swtester == Path("/opt/sw/swtester")
    assert p.checkout == REPO, "provenance still names the checkout the code runs from"


def test_outside_a_checkout_the_shipped_data_is_the_root(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "trexlab"
    package.mkdir(parents=True)
    monkeypatch.setattr(paths_module, "PACKAGE", package)
    monkeypatch.setenv("PATH", str(tmp_path))  # no swtester on it
    p = paths_module.resolve({})
    assert p.root == package / "data" and p.checkout is None and p.swtester is None


def test_a_failed_playbook_is_a_playbook_error_naming_the_task(tmp_path):
    fake = tmp_path / "ansible-playbook"
    fake.write_text("#!/bin/sh\necho 'fatal: [dut1]: FAILED! => {\"msg\": \"no such device\"}'\nexit 2\n")
    fake.chmod(0o755)
    spec = {"name": "pb", "generator": "sim", "procedure": {"name": "throughput"}}
    campaign = Campaign(validate(spec), tmp_path, ansible_playbook=str(fake))
    campaign.lab = type("Lab", (), {"inventory": tmp_path / "hosts.yml"})()
    with pytest.raises(PlaybookError, match=r"playbooks/site.yml failed: fatal: \[dut1\]: FAILED!"):
        campaign.playbook("playbooks/site.yml", {})


def test_a_lab_of_another_kind_than_declared_is_named_in_a_warning():
    from trexlab.plan.campaign import lab_kind_warning
    from trexlab.testbed.inventory import Lab

    spec = {"name": "k", "generator": "software", "lab": {"kind": "vm", "topology": "single"},
            "procedure": {"name": "throughput"}}
    local = Lab(name="l1", kind="local", topology="single", nodes={}, inventory=Path("hosts.yml"))
    vm = Lab(name="v1", kind="vm", topology="single", nodes={}, inventory=Path("hosts.yml"))
    assert lab_kind_warning(validate(spec), local) == ("experiment k declares a vm lab (lab.kind), lab l1 is local: "
                                                       "its figures are not those of the declared set-up")
    assert lab_kind_warning(validate(spec), vm) is None
    undeclared = validate({**spec, "lab": {"topology": "single"}})
    assert undeclared.lab_kind is None and lab_kind_warning(undeclared, local) is None


def test_one_list_of_standard_frame_sizes():
    from trexlab import media

    defined = [p for p in (REPO / "trexlab").rglob("*.py") if "STANDARD_FRAME_SIZES =" in p.read_text()]
    assert defined == [REPO / "trexlab" / "media.py"]
    assert media.STANDARD_FRAME_SIZES == (64, 128, 256, 512, 1024, 1280, 1518)  # RFC 2544 section 9.1, Ethernet
