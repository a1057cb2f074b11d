"""The VM lab (terraform/labs/vm): DUTs are QEMU VMs with Debian's own kernel, the tester a namespace.

Same inventory shape as every lab kind, the guest image cached by what goes into it, the TCG warning
in what procedures print and keep, bad input refused before anything changes, and lab-down leaving
no QEMU, tap, namespace or runtime file; and swtester on Debian 12's kernel, which has no tcx.
(netem and Jool on the VM DUT: tests/roles.)"""

import dataclasses
import ipaddress
import json
import re
import subprocess

import pytest

from trexlab.generators.software import SoftwareGenerator

from labtools import REPO, VENV, lab_env, lab_leftovers, run, terraform_test

pytestmark = [pytest.mark.lab, pytest.mark.vm]
NAME = "vm1"  # shared with tests/roles/test_netem_role.py and test_siit_jool_role.py (same arguments)


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory(NAME, "single", 2, kind="vm")


def guest(dut, *argv) -> str:
    return run(*dut.command(list(argv))).stdout


def test_inventory_has_the_shape_of_every_lab_and_the_dut_runs_debians_kernel(lab):
    assert (lab.kind, lab.topology) == ("vm", "single")
    tester, dut = lab.tester, lab.duts[0]
    assert tester.netns == f"tl-{NAME}-tester" and dut.netns is None, "only the tester is a namespace"
    assert [p.name for p in tester.test_ports] == ["port0", "port1"]
    assert [p.name for p in dut.test_ports] == ["left", "right"]
    assert tester.port(0).peer_mac == dut.port(0).mac and dut.port(1).peer_mac == tester.port(1).mac
    assert (dut.port(0).ipv4, dut.port(1).ipv6) == ("198.18.0.1/24", "2001:2:0:9000::1/64")
    assert ipaddress.ip_address(dut.ansible_host) in ipaddress.ip_network("2001:2:0:ff80::/57"), "management block"
    assert dut.extra["trexlab_vm_accel"] in ("kvm", "tcg") and "trexlab_vm_accel" not in tester.extra
    image = json.loads(run("cat", *(REPO / ".cache" / "vm" / "images").glob("*/manifest.json")).stdout)
    assert guest(dut, "uname", "-r").strip() == image["kernel_release"]
    # Named by MAC as the inventory says, whatever the PCI order.
    for port in dut.test_ports:
        assert guest(dut, "cat", f"/sys/class/net/{port.name}/address").strip() == port.mac
    assert guest(dut, "sh", "-c", "modinfo -n sch_netem && modinfo -n jool_siit").count(".ko") == 2


def test_the_duts_sshd_listens_on_the_management_address_only(lab):
    """A login on a test port would let test traffic reach a root shell: sshd listens on the guest's management
    address alone, never on a wildcard or a test address, and nothing else listens beyond loopback (the guest's
    sockets: ss -ltn)."""
    dut = lab.duts[0]

    def address(local: str):  # "[2001:2::5]:22" or "0.0.0.0:22" -> (address, port)
        host, _, port = local.rpartition(":")
        return ipaddress.ip_address(host.strip("[]").split("%")[0]), int(port)

    listening = [address(line.split()[3]) for line in guest(dut, "ss", "-Hltn").splitlines() if line.strip()]
    management = ipaddress.ip_address(dut.ansible_host)
    assert [a for a, port in listening if port == 22] == [management], listening
    assert all(a == management or a.is_loopback for a, _ in listening), listening


def test_swtester_on_debian_12s_kernel_counts_in_its_socket_filter_and_says_why_not_tcx(lab):
    """Linux 6.1 has no tcx (6.6 and later): where a trial times no frame, swtester's auto receive method falls back
    from tc ingress to its eBPF socket filter there and says why (receive_method_fallback), and a timed trial takes
    the filter without trying tcx. Asked as the generator asks (SoftwareGenerator.probe: its argv, --probe); the
    DUT guest stands in for an SSH tester with Debian 12's kernel, this checkout's swtester on its PATH and its
    test ports as the tester's (--probe sets up the sockets and the programs, sends nothing)."""
    dut = lab.duts[0]
    installed = "/usr/local/bin/swtester"  # the PATH an SSH tester's generator runs "swtester" from
    with open(REPO / "swtester" / "swtester", "rb") as binary:  # Debian 12's user space on both sides
        subprocess.run(dut.command(["sh", "-c", f"cat >{installed} && chmod 0755 {installed}"]), stdin=binary,
                       check=True, timeout=60)
    try:
        tester = dataclasses.replace(dut, role="tester")
        probed = SoftwareGenerator(dataclasses.replace(lab, nodes={tester.name: tester})).probe()
    finally:
        run(*dut.command(["rm", "-f", installed]))
    assert "receive_methods" in probed, f"swtester --probe gave no answer there: {probed}"
    untimed, timed = probed["receive_methods"], probed["receive_methods_timed"]
    assert set(untimed) == set(timed) == {"forward", "reverse"}, probed
    for direction in untimed.values():
        assert direction["method"] == "bpf", probed
        # The link the kernel refused, in its own words after it; the filter it then took, refused nothing.
        assert direction["fallback"].startswith("tcx: BPF_LINK_CREATE (tcx ingress) refused: "), probed
        assert "; bpf: " not in direction["fallback"], probed
    assert all(d == {"method": "bpf", "fallback": None} for d in timed.values()), probed


def test_the_guest_image_is_reused_while_its_ingredients_stay(lab):
    result = run(str(REPO / "terraform/labs/vm/scripts/image.sh"), str(REPO / ".cache" / "vm"), timeout=60)
    assert "cached" in result.stderr and result.stdout.strip().startswith(str(REPO / ".cache" / "vm" / "images"))


def test_procedures_warn_that_an_emulated_dut_measures_the_emulator(lab, tmp_path):
    result = run(str(VENV / "bin" / "trexlab"), "throughput", "--generator", "software", "--inventory",
                 str(lab.inventory), "--max-rate", "2000", "--resolution", "1000", "--trial-duration", "0.5",
                 "--receive-tail", "0.5", "--results", str(tmp_path), check=False, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    provenance = json.loads(next(tmp_path.glob("rep-*/provenance.json")).read_text())
    if lab.duts[0].extra["trexlab_vm_accel"] == "tcg":
        assert "warning" in result.stderr and "emulator, not a device" in result.stderr
        assert any("emulator, not a device" in w for w in provenance["lab"]["warnings"])
    else:
        assert provenance["lab"]["warnings"] == []


def test_bad_input_is_refused_before_anything_is_built():
    result = run("scripts/lab.sh", "up", env={**lab_env("vmbad", "loopback"), "LAB": "vm"}, check=False)
    assert result.returncode != 0 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "TOPOLOGY=loopback" in result.stderr
    assert not (REPO / ".cache" / "labs" / "vmbad").exists()


def test_lab_down_leaves_no_qemu_tap_namespace_or_file(lab):
    env = {**lab_env(NAME), "LAB": "vm"}
    run("scripts/lab.sh", "down", env=env)
    assert lab_leftovers(NAME) == []
    links = run("ip", "-o", "link").stdout
    assert not re.search(rf"^\d+: tl{NAME}", links, re.M), "no tap or management link is left"
    qemus = subprocess.run(["pgrep", "-f", f"trexlab-{NAME}-"], capture_output=True, text=True).stdout.split()
    assert qemus == [], "no QEMU of this lab is left"
    assert not (REPO / ".cache" / "labs" / NAME).exists() and not (REPO / "inventory" / "generated" / NAME).exists()
    assert "nothing to destroy" in run("scripts/lab.sh", "down", env=env).stdout


def test_terraform_plans_refuse_bad_input_and_have_the_inventory_shape(tmp_path):
    """terraform/labs/vm/tests: plans only (the real apply is lab-up above)."""
    terraform_test("terraform/labs/vm", tmp_path)
