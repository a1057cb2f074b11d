"""The exact Jool configuration roles/siit_jool applies (trexlab.siit): Lencse & Szilagyi 2024, Fig. 8, as one
file of Jool's atomic configuration (``jool_siit file handle``).

What the file must be, from Jool's documentation of atomic configuration: one JSON object per instance whose
mandatory fields are the instance name and the framework (netfilter or iptables); pool6 sits in the "global"
object (since Jool 4); each "eamt" entry has an "ipv6 prefix" and an "ipv4 prefix"; an unknown tag is an error
(of an SIIT file's top-level tags only comment, instance, framework, global, eamt and denylist4 exist); a
field left out takes its default, so the file is the whole instance; overlapping EAM entries abort the load
unless forced. An EAM entry maps prefixes with suffixes of equal length."""

import ipaddress
import json

import pytest

from trexlab.params import InvalidParameter
from trexlab.siit import jool_config

SIIT_TOP_LEVEL = {"comment", "instance", "framework", "global", "eamt", "denylist4"}


def test_one_netfilter_instance_and_two_mappings_per_network_as_in_the_papers_script():
    config = jool_config(256)
    assert config["instance"] == "benchmarking" and config["framework"] == "netfilter"
    assert set(config) == {"instance", "framework", "eamt"}, "no pool6: no global object, Jool's defaults"
    assert len(config["eamt"]) == 2 * 256
    assert config["eamt"][:2] == [{"ipv6 prefix": "2001:2:0:8000::/120", "ipv4 prefix": "198.18.0.0/24"},
                                  {"ipv6 prefix": "2001:2:0:9000::/120", "ipv4 prefix": "198.19.0.0/24"}]
    # x in two hex digits: network 255 is 80ff / 90ff.
    assert config["eamt"][-1] == {"ipv6 prefix": "2001:2:0:90ff::/120", "ipv4 prefix": "198.19.255.0/24"}


@pytest.mark.parametrize("networks", [1, 2, 17, 256])
def test_the_file_is_jools_siit_format(networks):
    config = json.loads(json.dumps(jool_config(networks, "dut2", "64:ff9b::/96")))  # what the role writes
    assert set(config) <= SIIT_TOP_LEVEL and {"instance", "framework"} <= set(config)
    assert config["framework"] in ("netfilter", "iptables")
    assert config["global"] == {"pool6": "64:ff9b::/96"}
    v6 = [ipaddress.IPv6Network(e["ipv6 prefix"]) for e in config["eamt"]]
    v4 = [ipaddress.IPv4Network(e["ipv4 prefix"]) for e in config["eamt"]]
    assert all(set(e) == {"ipv6 prefix", "ipv4 prefix"} for e in config["eamt"])
    assert all(128 - a.prefixlen == 32 - b.prefixlen for a, b in zip(v6, v4, strict=True)), "equal suffixes"
    for nets in (v6, v4):
        assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:]), "no overlapping entries"
    assert len(config["eamt"]) == 2 * networks


def test_pool6_goes_in_the_global_object_normalised():
    assert jool_config(1, "dut2", "64:FF9B:0::/96")["global"] == {"pool6": "64:ff9b::/96"}


@pytest.mark.parametrize(("args", "name"), [((0,), "networks"), ((257,), "networks"), ((1, "bad name!"), "instance"),
                                            ((1, "x", "64:ff9b::/80"), "pool6"), ((1, "x", "10.0.0.0/8"), "pool6"),
                                            ((1, "x", "64:ff9b::1/96"), "pool6")])
def test_bad_settings_are_refused_naming_them(args, name):
    with pytest.raises(InvalidParameter, match=name):
        jool_config(*args)
