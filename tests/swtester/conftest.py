"""What the swtester tests share."""

import pytest

from labtools import REPO, run


@pytest.fixture(scope="module", params=["swtester", "swtester-asan"])
def binary(request) -> str:
    """swtester's release build, then its AddressSanitizer/UndefinedBehaviorSanitizer build (swtester/Makefile)."""
    run("make", "-s", "-C", "swtester", request.param)
    return str(REPO / "swtester" / request.param)
