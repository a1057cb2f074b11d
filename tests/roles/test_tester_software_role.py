"""roles/tester_software over SSH: swtester built on the node from the repository's sources, idempotent, removed."""

import subprocess

import pytest

from labtools import changed_count, playbook, read_tester_counters, run

# Installing and applying roles, nothing measured; the lab sw is shared with tests/swtester and the other of
# test_collection_role / test_tester_software_role: one xdist worker for both (tests/conftest.py).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured, pytest.mark.xdist_group("lab-sw")]
PLAY = "playbooks/tester-software.yml"


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("sw", "single", 4)  # the software generator's lab (tests/swtester): one bring-up


def test_builds_installs_is_idempotent_and_absent_removes_it(lab, tmp_path):
    dirs = ["-e", f"tester_software_build_dir={tmp_path / 'src'}", "-e", f"tester_software_bin_dir={tmp_path / 'bin'}"]
    (tmp_path / "bin").mkdir()
    first = playbook(lab, PLAY, *dirs)
    assert first.returncode == 0, first.stdout[-3000:]
    binary = tmp_path / "bin" / "swtester"
    assert binary.is_file() and changed_count(first.stdout) > 0
    usage = subprocess.run([str(binary), "--help"], capture_output=True, text=True)
    assert "--port0" in usage.stdout + usage.stderr, "the installed program is swtester"
    assert len(read_tester_counters(lab.tester.netns)) == 4, "IPv4 and IPv6 test frames counted on both ports"

    again = playbook(lab, PLAY, *dirs)
    assert again.returncode == 0 and changed_count(again.stdout) == 0, again.stdout[-3000:]

    gone = playbook(lab, PLAY, *dirs, "-e", "tester_software_state=absent")
    assert gone.returncode == 0, gone.stdout[-3000:]
    assert not binary.exists() and not (tmp_path / "src").exists()
    table = run("ip", "netns", "exec", lab.tester.netns, "nft", "list", "table", "netdev", "trexlab_tester",
                check=False)
    assert table.returncode != 0, "the counters went with it"
