"""What the swtester tests share."""

import os

import pytest

from labtools import REPO, run


@pytest.fixture(scope="module", params=["swtester", "swtester-asan"])
def binary(request) -> str:
    """swtester's release build, then its AddressSanitizer/UndefinedBehaviorSanitizer build (swtester/Makefile)."""
    run("make", "-s", "-C", "swtester", request.param)
    return str(REPO / "swtester" / request.param)


@pytest.fixture(scope="module")
def tester_and_dut(request):
    """Two network namespaces of the test module's own (named after it and this process): the tester's, with ports
    p0 and p1, and the DUT's, with their veth peers q0 and q1, all up; the module's TESTER_MAC and DUT_MAC (a MAC
    address per port) where it gives them, else the kernel's. The module's own fixture makes the DUT of the DUT's
    namespace. Both are removed when the module is done."""
    name = request.module.__name__.rsplit("_", 1)[-1]
    tester, dut = f"trexlab-{name}-t-{os.getpid()}", f"trexlab-{name}-d-{os.getpid()}"
    macs = [getattr(request.module, key, None) for key in ("TESTER_MAC", "DUT_MAC")]
    run("ip", "netns", "add", tester)
    run("ip", "netns", "add", dut)
    try:
        for i in (0, 1):
            p, q = (["address", side[i]] if side else [] for side in macs)
            run("ip", "-n", tester, "link", "add", f"p{i}", *p, "type", "veth", "peer", "name", f"q{i}", *q, "netns",
                dut)
            run("ip", "-n", tester, "link", "set", f"p{i}", "up")
            run("ip", "-n", dut, "link", "set", f"q{i}", "up")
        yield tester, dut
    finally:
        run("ip", "netns", "del", tester, check=False)
        run("ip", "netns", "del", dut, check=False)
