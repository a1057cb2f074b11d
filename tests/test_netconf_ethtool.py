"""trexlab.lab.netconf's NIC settings read back the way ethtool prints them, and dut_tuning's cpufreq and
port-driver filters."""

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ansible_collections.trexlab.lab.plugins.filter.trexlab import (  # noqa: E402
    cpufreq_settings,
    port_drivers,
    probed_host_facts,
    probed_port_facts,
)

MODULE = REPO / "ansible_collections/trexlab/lab/plugins/modules/netconf.py"
_spec = importlib.util.spec_from_file_location("trexlab_netconf", MODULE)
netconf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(netconf)

# A stand-in ethtool keeping one port's RSS hash fields, pause and GRO settings in files, printing as ethtool 6.1 does.
FAKE_ETHTOOL = r"""#!/bin/sh
dir=$(dirname "$0")
case "$1" in
  -n) printf 'UDP over IPV4 flows use these fields for computing Hash flow key:\n'
      f=$(cat "$dir/fields"); case $f in *s*) echo 'IP SA';; esac; case $f in *d*) echo 'IP DA';; esac
      case $f in *f*) echo 'L4 bytes 0 & 1 [TCP/UDP src port]';; esac
      case $f in *n*) echo 'L4 bytes 2 & 3 [TCP/UDP dst port]';; esac; echo;;
  -N) echo "$5" > "$dir/fields";;
  -a) p=$(cat "$dir/pause"); printf 'Pause parameters for %s:\nAutonegotiate:\toff\nRX:\t\t%s\nTX:\t\t%s\n' "$2" $p;;
  -A) echo "$4 $6" > "$dir/pause";;
  -k) printf 'Features for %s:\ngeneric-receive-offload: %s\n' "$2" "$(cat "$dir/gro")";;
  -K) echo "$4" > "$dir/gro";;
esac
"""


@pytest.fixture
def ethtool(tmp_path, monkeypatch):
    tool = tmp_path / "ethtool"
    tool.write_text(FAKE_ETHTOOL)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "fields").write_text("sd\n")
    (tmp_path / "pause").write_text("on off\n")
    (tmp_path / "gro").write_text("off\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_rss_hash_fields_are_read_as_ethtool_letters_and_written_back(ethtool):
    assert netconf.read_flow_hash("eth1/udp4") == "sd"
    netconf.write_flow_hash("eth1/udp4", "sdfn")
    assert sorted(netconf.read_flow_hash("eth1/udp4")) == sorted("sdfn")


def test_pause_reads_one_word_when_rx_and_tx_agree_and_restores_a_mixed_setting(ethtool):
    assert netconf.read_pause("eth1") == "rx on tx off"
    netconf.write_pause("eth1", "off")
    assert netconf.read_pause("eth1") == "off"
    netconf.write_pause("eth1", "rx on tx off")
    assert netconf.read_pause("eth1") == "rx on tx off"


def run_module(ethtool: Path, **args) -> dict:
    """The module run as Ansible runs it (its arguments on stdin), against the stand-in ethtool; about 0.3 s."""
    stdin = json.dumps({"ANSIBLE_MODULE_ARGS": {"state_file": str(ethtool / "netconf.json"), **args}})
    done = subprocess.run([sys.executable, str(MODULE)], input=stdin, capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout)


@pytest.mark.parametrize("bad", ["maybe", 1])
def test_every_on_off_option_takes_a_yaml_boolean_and_refuses_anything_else_in_one_line_naming_it(ethtool, bad):
    """pause and gro are ethtool's on or off, and YAML reads a bare on or off as a boolean: pause took False as the
    word 'False' (ethtool -A DEV rx False tx False) while gro took it as off. Either option's boolean is its word; any
    other value is refused before anything changes, naming the option, the device and what is allowed."""
    done = run_module(ethtool, pause={"eth1": False}, gro={"eth1": True})
    assert done["changes"] == ["set gro eth1 off -> on", "set pause eth1 rx on tx off -> off"], done
    settings = {name: (ethtool / name).read_text() for name in ("pause", "gro", "netconf.json")}
    assert settings["pause"].split() == ["off", "off"] and settings["gro"].split() == ["on"]
    for option in ("pause", "gro"):
        refused = run_module(ethtool, **{option: {"eth1": bad}})
        assert refused.get("failed") and refused["msg"] == (
            f"bad declaration: {option} eth1: {bad!r}, allowed on or off (or a YAML boolean)"), refused
        assert {name: (ethtool / name).read_text() for name in settings} == settings, "nothing changed"


def test_cpufreq_settings_fix_min_and_max_per_cpu_and_nothing_when_not_asked():
    assert cpufreq_settings([2], "performance", 2400000) == {
        "/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor": "performance",
        "/sys/devices/system/cpu/cpu2/cpufreq/scaling_max_freq": "2400000",
        "/sys/devices/system/cpu/cpu2/cpufreq/scaling_min_freq": "2400000"}
    assert cpufreq_settings([1, 3], None, None) == {}


def test_port_drivers_come_from_the_network_facts_and_a_port_with_a_device_is_a_nic():
    """Facts as Ansible's setup module gathers them: a virtio NIC (module and device), a NIC whose driver is
    built into the kernel (device, no module), a veth (neither); '-' of a name is '_' in the facts' keys."""
    facts = {"eth1": {"device": "eth1", "module": "virtio_net", "pciid": "virtio3", "type": "ether"},
             "eth2": {"device": "eth2", "pciid": "0000:00:05.0", "type": "ether"},
             "dut_p0": {"device": "dut-p0", "type": "ether"}, "interfaces": ["eth1", "eth2", "dut_p0"]}
    assert port_drivers(["eth1", "eth2", "dut-p0"], facts) == [
        {"name": "eth1", "driver": "virtio_net", "nic": True}, {"name": "eth2", "driver": "built-in", "nic": True},
        {"name": "dut-p0", "driver": "virtual", "nic": False}]
    with pytest.raises(ValueError, match=r"^test_ports: no interface p9 on this node"):
        port_drivers(["eth1", "p9"], facts)


def test_the_dut_tuning_probe_reads_as_the_network_facts():
    """roles/dut_tuning reads the ports with a shell probe instead of the setup module: its lines (a tty's '\\r'
    kept) give port_drivers what the facts above gave it; a port that does not exist is missing, as from the facts."""
    lines = ["eth1 virtio3 virtio_net\r", "eth2 0000:00:05.0 -", "dut-p0 - -", "p9 -", "no-cpufreq",
             "kernel: 6.1.0-28-amd64\r", "cpu_model: AMD EPYC"]
    facts = probed_port_facts(lines)  # the host lines are no ports, though a model name may have three words
    assert probed_host_facts(lines) == {"kernel": "6.1.0-28-amd64", "cpu_model": "AMD EPYC"}
    assert probed_host_facts(["kernel: 6.1.0", "cpu_model:"]) == {"kernel": "6.1.0", "cpu_model": None}
    assert facts == {"eth1": {"device": "eth1", "pciid": "virtio3", "module": "virtio_net"},
                     "eth2": {"device": "eth2", "pciid": "0000:00:05.0"}, "dut_p0": {"device": "dut-p0"}}
    assert port_drivers(["eth1", "eth2", "dut-p0"], facts) == [
        {"name": "eth1", "driver": "virtio_net", "nic": True}, {"name": "eth2", "driver": "built-in", "nic": True},
        {"name": "dut-p0", "driver": "virtual", "nic": False}]
    with pytest.raises(ValueError, match=r"^test_ports: no interface p9 on this node"):
        port_drivers(["eth1", "p9"], facts)
