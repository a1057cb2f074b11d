"""The exact Jool configuration roles/siit_jool applies (trexlab.siit): Lencse & Szilagyi 2024, Fig. 8."""

import pytest

from trexlab.params import InvalidParameter
from trexlab.siit import jool_commands


def test_one_netfilter_instance_and_two_mappings_per_network_as_in_the_papers_script():
    commands = jool_commands(256)
    assert commands[0] == 'jool_siit instance add "benchmarking" --netfilter'
    assert len(commands) == 1 + 2 * 256
    assert commands[1:3] == ['jool_siit -i "benchmarking" eamt add 2001:2:0:8000::/120 198.18.0.0/24',
                             'jool_siit -i "benchmarking" eamt add 2001:2:0:9000::/120 198.19.0.0/24']
    # x in two hex digits: network 255 is 80ff / 90ff.
    assert commands[-1] == 'jool_siit -i "benchmarking" eamt add 2001:2:0:90ff::/120 198.19.255.0/24'


def test_pool6_prefix_goes_with_the_instance():
    first = jool_commands(1, "dut2", "64:ff9b::/96")[0]
    assert first == 'jool_siit instance add "dut2" --netfilter --pool6 64:ff9b::/96'


@pytest.mark.parametrize(("args", "name"), [((0,), "networks"), ((257,), "networks"), ((1, "bad name!"), "instance"),
                                            ((1, "x", "64:ff9b::/80"), "pool6"), ((1, "x", "10.0.0.0/8"), "pool6")])
def test_bad_settings_are_refused_naming_them(args, name):
    with pytest.raises(InvalidParameter, match=name):
        jool_commands(*args)
