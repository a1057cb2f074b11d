"""make lab-up / lab-down LAB=maas with the real canonical/maas provider against a stand-in MAAS region.

What the provider asks MAAS for (selection, image, kernel, test ports) is read from the region's journal;
lab-down must release every machine, also after a lab-up that failed halfway. The API key is random and
must reach MAAS (it signs the requests) but nothing else: no output, log, state or file.
"""

from __future__ import annotations

import shutil

import pytest
import yaml
from fake_maas import FakeMaas
from tftools import NEEDS_MIRROR, random_api_key

from labtools import REPO, run

pytestmark = [pytest.mark.terraform, NEEDS_MIRROR,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]

EXAMPLE = REPO / "terraform/labs/maas/examples/single.tfvars"


def region_machines() -> list[dict]:
    """The example's cabled tester and DUT, and a decoy in the same pool without the tester's tag."""
    return [
        {"hostname": "spare-1", "tags": [], "pool": "trexlab", "zone": "default", "ip": "10.20.0.99",
         "interfaces": [{"name": "eno1", "mac": "52:54:00:00:00:99"}]},
        {"hostname": "trex-01", "tags": ["trexlab-tester"], "pool": "trexlab", "zone": "default", "ip": "10.20.0.11",
         "interfaces": [{"name": "eno1", "mac": "52:54:00:00:00:11"}, {"name": "enp65s0f0", "mac": "3c:fd:fe:a1:00:10"},
                        {"name": "enp65s0f1", "mac": "3c:fd:fe:a1:00:11"}]},
        {"hostname": "dut-r640-1", "tags": [], "pool": "default", "zone": "default", "ip": "10.20.0.21",
         "interfaces": [{"name": "eno1", "mac": "52:54:00:00:00:21"}, {"name": "ens1f0", "mac": "b4:96:91:b2:00:20"},
                        {"name": "ens1f1", "mac": "b4:96:91:b2:00:21"}]},
    ]


def lab(action: str, env: dict) -> str:
    result = run("scripts/lab.sh", action, env=env, check=False, timeout=300)
    assert env["MAAS_API_KEY"] not in result.stdout + result.stderr, "the API key was printed"
    return result


def assert_key_written_nowhere(key: str, name: str) -> None:
    paths = [*(REPO / ".cache/labs" / name).rglob("*"), *(REPO / "inventory/generated" / name).rglob("*")]
    leaks = [str(p) for p in paths if p.is_file() and not p.is_symlink() and key.encode() in p.read_bytes()]
    assert leaks == [], f"the API key was written to {leaks}"


def test_lab_up_deploys_the_declared_machines_and_lab_down_releases_them(tmp_path):
    key = random_api_key()
    with FakeMaas(key, region_machines()) as maas:
        env = {"LAB": "maas", "LAB_NAME": "s8fm", "TOPOLOGY": "single", "TFVARS": str(EXAMPLE),
               "MAAS_API_URL": maas.url, "MAAS_API_KEY": key}
        try:
            up = lab("up", env)
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            assert all(c["authorized"] for c in maas.journal), "every request is signed with the key from MAAS_API_KEY"

            allocations = {c["params"].get("name", ["(tags)"])[0]: c["params"] for c in maas.calls("allocate")}
            assert allocations["dut-r640-1"] == {"name": ["dut-r640-1"]}
            assert allocations["(tags)"] == {"tags": ["trexlab-tester"], "pool": ["trexlab"]}
            status = {m["hostname"]: m["status"] for m in maas.machines.values()}
            assert status == {"spare-1": "Ready", "trex-01": "Deployed", "dut-r640-1": "Deployed"}, \
                "the tagged tester, not the decoy in its pool"
            deploys = {maas.machines[m]["hostname"]: maas.machines[m]["deploy"] for m in maas.machines}
            assert deploys["trex-01"] == {"distro_series": "jammy", "hwe_kernel": "hwe-22.04"}
            assert deploys["dut-r640-1"] == {"distro_series": "jammy", "hwe_kernel": "hwe-22.04-edge"}
            links = {(m["hostname"], n["name"]): n["links"] for m in maas.machines.values() for n in m["interfaces"]}
            assert links[("trex-01", "enp65s0f0")] == [] and links[("dut-r640-1", "ens1f1")] == [], \
                "test ports disconnected"
            assert links[("trex-01", "eno1")] == [{"mode": "dhcp"}], "management left as MAAS configured it"

            inventory = yaml.safe_load((REPO / "inventory/generated/s8fm/hosts.yml").read_text())
            tester = inventory["all"]["children"]["testers"]["hosts"]["tester"]
            dut = inventory["all"]["children"]["duts"]["hosts"]["dut1"]
            assert inventory["all"]["vars"]["trexlab_lab"] == {"name": "s8fm", "kind": "maas", "topology": "single"}
            assert (tester["ansible_host"], dut["ansible_host"]) == ("10.20.0.11", "10.20.0.21")
            assert tester["trexlab_maas_host"] == "trex-01" and dut["ansible_user"] == "ubuntu"
            assert tester["test_ports"][0]["peer_mac"] == dut["test_ports"][0]["mac"] == "b4:96:91:b2:00:20"
            assert_key_written_nowhere(key, "s8fm")

            again = lab("up", env)
            assert again.returncode == 0 and len(maas.calls("allocate")) == 2, "a second lab-up allocates nothing"
        finally:
            down = lab("down", {**env, "TFVARS": ""})
        assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-3000:]
        released = sorted(s for c in maas.calls("release") for s in c["params"]["machines"])
        assert [maas.machines[s]["hostname"] for s in released] == ["trex-01", "dut-r640-1"]
        assert {m["status"] for m in maas.machines.values()} == {"Ready"}
        assert not (REPO / ".cache/labs/s8fm").exists() and not (REPO / "inventory/generated/s8fm").exists()


def test_a_machine_without_the_declared_test_port_fails_lab_up_and_lab_down_still_releases_it(tmp_path):
    key = random_api_key()
    machines = region_machines()
    machines[2]["interfaces"] = machines[2]["interfaces"][:2]  # the DUT lacks ens1f1 (b4:96:91:b2:00:21)
    with FakeMaas(key, machines) as maas:
        env = {"LAB": "maas", "LAB_NAME": "s8fx", "TOPOLOGY": "single", "TFVARS": str(EXAMPLE),
               "MAAS_API_URL": maas.url, "MAAS_API_KEY": key}
        try:
            up = lab("up", env)
            assert up.returncode != 0
            assert "network interface (b4:96:91:b2:00:21) was not found" in up.stderr, up.stderr[-3000:]
            assert not (REPO / "inventory/generated/s8fx/hosts.yml").exists()
            assert_key_written_nowhere(key, "s8fx")
        finally:
            down = lab("down", {**env, "TFVARS": ""})
        assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-3000:]
        assert {m["status"] for m in maas.machines.values()} == {"Ready"}, "nothing stays allocated"



def test_a_hostname_no_machine_can_have_is_refused_before_any_machine_is_allocated(tmp_path):
    # A typo (a blank) in dut1's hostname: its allocation could only fail, after the tester's had succeeded,
    # and the tester stayed allocated until lab-down.
    key = random_api_key()
    tfvars = tmp_path / "lab.tfvars"
    tfvars.write_text(EXAMPLE.read_text().replace('hostname   = "dut-r640-1"', 'hostname   = "dut r640-1"', 1))
    assert tfvars.read_text() != EXAMPLE.read_text()
    with FakeMaas(key, region_machines()) as maas:
        env = {"LAB": "maas", "LAB_NAME": "s8fr", "TOPOLOGY": "single", "TFVARS": str(tfvars),
               "MAAS_API_URL": maas.url, "MAAS_API_KEY": key}
        try:
            up = lab("up", env)
            assert up.returncode != 0
            assert "dut1: hostname 'dut r640-1' is not a host name" in " ".join(up.stderr.split()), up.stderr[-3000:]
            assert maas.calls("allocate") == [], "a refused declaration allocated machines"
        finally:
            down = lab("down", {**env, "TFVARS": ""})
        assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-3000:]
    assert not (REPO / ".cache/labs/s8fr").exists()
