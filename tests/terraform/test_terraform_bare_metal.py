"""terraform test of the bare-metal labs (static, MAAS) and their shared topology module, with no network.

The MAAS lab's tests mock canonical/maas, but the mock takes its schemas from the provider binary that
`make providers` put in terraform/providers/mirror (scripts/test.sh builds it in CI); without the mirror
those tests are skipped with that reason. Every Terraform run here happens in an empty network namespace
(as root) or behind a dead proxy, so anything reaching for the network fails the test.

The MAAS API key is a fresh random one per test session: it must show up nowhere, not in Terraform's
output, not in a log or state file of lab.sh, not in the repository.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from tftools import MIRROR_RC, NEEDS_MIRROR, random_api_key

from labtools import REPO, refused_port, run, terraform, terraform_test, tf_env

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]

API_KEY = random_api_key()


def test_topology_module_cables_addresses_and_names_every_problem(tmp_path):
    terraform_test("terraform/modules/topology", tmp_path)


def test_static_lab_terraform_test(tmp_path):
    terraform_test("terraform/labs/static", tmp_path)


@NEEDS_MIRROR
def test_maas_lab_terraform_test_with_the_mocked_provider(tmp_path):
    out = terraform_test("terraform/labs/maas", tmp_path, str(MIRROR_RC), TF_VAR_maas_api_key=API_KEY)
    assert API_KEY not in out


def plan(module: str, tmp_path, tfvars: str, *args: str, cli_config: str = "/dev/null",
         **extra: str) -> subprocess.CompletedProcess:
    """terraform plan of a lab against a throwaway state, with the declaration in a tfvars file."""
    env = tf_env(tmp_path, cli_config, **extra)
    init = terraform(module, "init", "-input=false", f"-backend-config=path={tmp_path / 'state'}", env=env)
    assert init.returncode == 0, init.stdout[-2000:] + init.stderr[-2000:]
    (tmp_path / "lab.tfvars").write_text(tfvars)
    return terraform(module, "plan", "-input=false", f"-var-file={tmp_path / 'lab.tfvars'}", *args, env=env)


def test_static_example_plans(tmp_path):
    example = (REPO / "terraform/labs/static/examples/single.tfvars").read_text()
    result = plan("terraform/labs/static", tmp_path, example)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "enp65s0f0" in result.stdout and "198.18.0.2/24" in result.stdout


@NEEDS_MIRROR
def test_maas_example_plans_two_machines_without_contacting_maas(tmp_path):
    example = (REPO / "terraform/labs/maas/examples/single.tfvars").read_text()
    result = plan("terraform/labs/maas", tmp_path, example, cli_config=str(MIRROR_RC),
                  TF_VAR_maas_api_url="http://127.0.0.1:9/MAAS", TF_VAR_maas_api_key=API_KEY)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Plan: 2 to add" in result.stdout and 'hostname      = "dut-r640-1"' in result.stdout
    assert API_KEY not in result.stdout + result.stderr


def machine(name: str, n: int, cpus: list[int], ports: int = 2, host: str | None = None, port0: str = "p0") -> str:
    names = [port0, *(f"p{i}" for i in range(1, ports))]
    port_list = ", ".join(f'{{ name = "{names[i]}", mac = "02:00:00:00:{n:02x}:{i:02x}" }}' for i in range(ports))
    where = f'machine = "{host}", ' if host else ""
    return f'{name} = {{ ansible_host = "192.0.2.{n}", {where}cpus = {cpus}, test_ports = [{port_list}] }}\n'


@pytest.mark.parametrize(("machines", "topology", "message"), [
    (machine("tester", 1, [0]) + machine("dut1", 2, [1]), "dual",
     "topology dual needs dut1 and dut2; declared: dut1"),
    (machine("tester", 1, [0]) + machine("dut1", 2, [1], ports=1), "single",
     "dut1 declares 1 test port(s); every node needs two"),
    (machine("tester", 1, [0, 1], host="box") + machine("dut1", 2, [1], host="box"), "single",
     "CPU lists overlap on machine box: dut1 [1] and tester [0,1]"),
    (machine("tester", 1, [0]) + machine("dut1", 2, [1], port0="p0;reboot"), "single",
     "dut1 port 0: name 'p0;reboot' is not an interface name"),
])
def test_bad_declarations_stop_the_static_plan_naming_the_problem(tmp_path, machines, topology, message):
    result = plan("terraform/labs/static", tmp_path, f"machines = {{\n{machines}}}\n", f"-var=topology={topology}")
    assert result.returncode != 0
    # Terraform wraps long messages: compare with the line breaks taken out.
    assert message in " ".join(result.stderr.split()), result.stderr[-2000:]


@NEEDS_MIRROR
def test_the_api_key_appears_in_no_output_log_state_or_file(tmp_path):
    """lab-up of a MAAS lab against a MAAS that refuses connections: it fails, and the key is nowhere."""
    tfvars = tmp_path / "maas.tfvars"
    tfvars.write_text((REPO / "terraform/labs/maas/examples/single.tfvars").read_text())
    state_dir = REPO / ".cache/labs/s8m"
    with refused_port() as port:
        env = {"LAB": "maas", "LAB_NAME": "s8m", "TOPOLOGY": "single", "TFVARS": str(tfvars),
               "MAAS_API_URL": f"http://127.0.0.1:{port}/MAAS", "MAAS_API_KEY": API_KEY}
        try:
            up = run("scripts/lab.sh", "up", env=env, check=False, timeout=300)
            assert up.returncode != 0 and "lab-up failed" in up.stderr, up.stdout + up.stderr
            assert "connection refused" in up.stderr.lower(), up.stderr[-2000:]
            leaks = [str(p) for p in state_dir.rglob("*") if p.is_file() and not p.is_symlink()
                     and API_KEY.encode() in p.read_bytes()]
            assert leaks == [], f"the API key was written to {leaks}"
            assert API_KEY not in up.stdout + up.stderr
        finally:
            down = run("scripts/lab.sh", "down", env={**env, "TFVARS": ""}, check=False, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert API_KEY not in down.stdout + down.stderr
    assert not state_dir.exists() and not (REPO / "inventory/generated/s8m").exists()
    in_tree = run("git", "grep", "--untracked", "-l", "-F", API_KEY, check=False)
    assert in_tree.returncode == 1 and in_tree.stdout == "", "the key is in the working tree"


@pytest.mark.parametrize(("env", "message"), [
    ({"MAAS_API_URL": "", "MAAS_API_KEY": ""}, "LAB=maas needs MAAS_API_URL and MAAS_API_KEY in the environment"),
    ({"TFVARS": ""}, "LAB=maas needs TFVARS=<file.tfvars> declaring the machines"),
    ({"TFVARS": "KEY_IN_FILE"}, "sets maas_api_key: the key comes from the environment only (MAAS_API_KEY)"),
])
def test_maas_lab_up_bad_input_is_one_line_and_changes_nothing(tmp_path, env, message):
    if env.get("TFVARS") == "KEY_IN_FILE":
        env = {"TFVARS": str(tmp_path / "with-key.tfvars")}
        (tmp_path / "with-key.tfvars").write_text(f'maas_api_key = "{API_KEY}"\n')
    full = {"LAB": "maas", "LAB_NAME": "s8b", "TFVARS": "terraform/labs/maas/examples/single.tfvars",
            "MAAS_API_URL": "http://127.0.0.1:9/MAAS", "MAAS_API_KEY": API_KEY, **env}
    result = run("scripts/lab.sh", "up", env=full, check=False)
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr, result.stderr
    assert not (REPO / ".cache/labs/s8b").exists()
