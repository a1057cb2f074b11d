"""experiments/http-download-loss at CI scale on the local lab: curl downloads through a DUT dropping 0, 0.1 and
1 % of the frames towards the client take longer at 1 % loss, and the HTML report shows the median and the
1st/99th percentile per loss rate, as Lencse et al. 2020, Table III does."""

from __future__ import annotations

import json
import math
import re
import subprocess
import warnings

import pytest

from trexlab.results import analysis
from trexlab.results.report import render
from trexlab.spec.experiment import load

from browser import render as browse
from labtools import REPO, VENV, gso_max_segs, node_state, run

pytestmark = pytest.mark.lab
# The single-DUT lab of test_experiments.py, handed out again (lab_factory): its campaigns restore what they
# change, as this one does.
LAB = "ex1"
EXPERIMENT = "http-download-loss"
CI = load(REPO / "experiments" / EXPERIMENT).scaled("ci")
#: The least slowdown of the median download at 1 % loss that this lab shows (see below), with margin.
MIN_SLOWDOWN = 1.1
#: Bytes of a frame's Ethernet header (destination, source, EtherType), which the kernel's link counters include.
ETHERNET_HEADER = 14
#: Standard deviations of the binomial count of dropped segments within which the segments the server repaired must
#: lie at each loss rate: a DUT dropping at the rate it was given falls outside once in some 1.7 million points.
LOSS_BAND_SD = 5


def lab_state(lab) -> dict:
    """What the campaign must give back: qdiscs, nftables, links of tester and DUT; everything of the endpoints,
    with their ports' segment cap (gso_max_segs, which only ip -d shows)."""
    state = {n.name: {k: v for k, v in node_state(n.netns).items() if k in ("tc", "nft", "links")}
             for n in (lab.tester, *lab.duts)}
    state.update({n.name: {**node_state(n.netns), "gso": gso_max_segs(n)} for n in (lab.client, lab.server)})
    return state


def sent_towards_client(lab) -> tuple[int, int]:
    """Bytes (Ethernet header on) and frames the DUT's port 0 has sent: what its impairment towards the client
    acted on, one frame per packet the forward hook saw."""
    tx = json.loads(run("ip", "-n", lab.duts[0].netns, "-j", "-s", "link", "show", "dev",
                        lab.duts[0].port(0).name).stdout)[0]["stats64"]["tx"]
    return tx["bytes"], tx["packets"]


def test_download_time_grows_with_dut_loss_and_the_report_shows_median_and_percentiles(lab_factory, tmp_path):
    lab = lab_factory(LAB, "single", 1)
    before = lab_state(lab)
    sent_before = sent_towards_client(lab)
    result = subprocess.run([str(VENV / "bin" / "trexlab"), "campaign", f"experiments/{EXPERIMENT}", "--scale", "ci",
                             "--results", str(tmp_path),
                             "--ceilings", str(tmp_path / "tester-ceilings.json"), "--inventory", str(lab.inventory)],
                            capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout)
    assert outcome["failed"] == [] and outcome["done"] == outcome["points"] == 3
    assert lab_state(lab) == before, "the campaign restored the DUT and removed the endpoints' configuration"
    # What the loss acts on, not only its effect: the frames the DUT forwarded towards the client, of which the
    # loss points dropped 1 % and 0.1 %, were frames a wire carries (at most MTU + Ethernet header), not the
    # TSO/GSO super-frames of up to 64 KB that the endpoints' macvlan and veth pass whole unless roles/tcp_endpoints
    # caps the segments per packet (45,114 B on average over this campaign before it did).
    sent = [after - before for after, before in zip(sent_towards_client(lab), sent_before, strict=True)]
    mtu = int(run("ip", "netns", "exec", lab.duts[0].netns, "cat",
                  f"/sys/class/net/{lab.duts[0].port(0).name}/mtu").stdout)
    print(f"\nthe DUT sent {sent[1]:,} frames towards the client, {sent[0] / sent[1]:,.0f} B on average")
    assert sent[0] / sent[1] <= mtu + ETHERNET_HEADER, (sent, mtu)
    left = run("ip", "netns", "pids", lab.server.netns).stdout.split()
    assert all(open(f"/proc/{pid}/comm").read().strip() == "sshd" for pid in left), "no iperf3 or nginx is left"

    runs = analysis.load_campaigns(outcome["campaign"])
    summary = analysis.summarize_points(runs, "download_time_s").set_index("loss_percent")
    medians = summary["median"]
    print(f"\nmedian download time by loss %: {medians.round(4).to_dict()}")
    assert list(summary.index) == [0, 0.1, 1] and (summary["count"] == CI.repetitions).all()
    # The loss rates took turns (order: interleaved), so that a burst of other work on the host slows a few
    # downloads of each rate rather than all of one rate's: each round ran every rate's next repetitions_per_round
    # downloads. In sequence, a 5 s burst on both CPUs from the first lossless download slowed 6 or 9 of its 9 and
    # its median passed the 1 % one (0.440 s vs 0.257 s busy host, 0.158 s vs 0.130 s quiet); in rounds it slows
    # at most one round's of a rate (quiet host, same burst: 0.081 / 0.100 / 0.125 s).
    orders = runs["run"].map(lambda run: json.loads(open(f"{run}/provenance.json").read())["order"])
    assert {(o["order"], o["repetitions_per_round"]) for o in orders} == {("interleaved", CI.repetitions_per_round)}
    assert CI.repetitions_per_round < CI.repetitions, "more than one round"
    rounds = sorted(o["round"] for o in orders)
    assert rounds == sorted(-(-k // CI.repetitions_per_round) for k in range(1, CI.repetitions + 1)
                            for _ in CI.points())
    trials = runs["run"].map(lambda run: json.loads(open(f"{run}/trials.jsonl").readline()))
    # How the loss reached TCP, whatever else the host runs: the segments the server sent again, less those the
    # client reported it already had (D-SACK: spurious retransmissions, which a busy host's late ACKs set off at
    # 0 % too), are the segments the DUT dropped, a binomial count of the frames it forwarded at the point's loss
    # rate. In a CI campaign of this test beside other jobs and 8 busy loops switched on and off (load 16-28,
    # 2026-11-27) they came to 3 / 453 / 4,175 against 0 / 418 / 4,213 expected at 0 / 0.1 / 1 % (within 2 SD;
    # over 45-49 downloads per rate within 2 SD too), while the same downloads' times overlapped (below); with the
    # DUT's loss rule made to accept instead of drop, 0 / 0 / 2 against 0 / 417 / 4,172, and the medians passed.
    counted = {loss: [t["server_tcp"] for t, at in zip(trials, runs["loss_percent"], strict=True) if at == loss]
               for loss in summary.index}
    assert all(c is not None for tcp in counted.values() for c in tcp), "the server's TCP counters were read"
    repaired = {loss: sum(c["retransmitted_segments"] - c["duplicate_segments_reported"] for c in tcp)
                for loss, tcp in counted.items()}
    frames = {loss: sum(c["segments_sent"] + c["retransmitted_segments"] for c in tcp) for loss, tcp in counted.items()}
    print(f"segments the server repaired by loss %: {repaired} of {frames} sent")

    def band(loss: float, frames: int) -> tuple[float, float]:
        mean, sd = frames * loss / 100, math.sqrt(frames * loss / 100 * (1 - loss / 100))
        return mean - LOSS_BAND_SD * sd, mean + LOSS_BAND_SD * sd

    for loss in summary.index[summary.index > 0]:
        low, high = band(loss, frames[loss])
        assert low <= repaired[loss] <= high, (loss, repaired[loss], low, high)
    assert repaired[0] < band(min(summary.index[summary.index > 0]), frames[0])[0], repaired
    # 1 % loss slows the download, more than 0.1 % does, on a host that leaves the downloads its CPUs (make test
    # runs this file in its last phase, alone). Over 10 sets of 9 downloads per loss rate on this shared
    # 2-CPU host (wire-sized frames, reno, 2026-11-27), the 1 % median was 1.57-1.74x the lossless one with the
    # 64 MiB file (46,350 frames, 0.07 s lossless), 1.46-1.69x with 16 MiB, 1.41-1.72x with 8 MiB, 1.60-1.79x
    # with 128 MiB; the 0.1 % median 1.12-1.30x over those 40 sets. The paper saw 2.1x at 1 % and 1.004x at
    # 0.1 % (89.44 s vs 89.11 s); here the path is CPU-bound with microsecond RTTs, so reno's window regrows
    # within a fraction of the download. Inside make test (the clean clone of 7733e7d, its last phase) the host
    # was slower and the loss cost less beside it: 0.090 s lossless, 0.090 s at 0.1 %, 0.114 s at 1 % (1.26x),
    # so MIN_SLOWDOWN sits 0.16 below that, and 0.1 % is not ordered against lossless (the paper's 1.004x is
    # within any host's noise; here 0.99-1.30x). With
    # super-frames the DUT dropped 1 % of 45 KB packets (one loss event per some 3,000 segments) and the ratio
    # wandered over 1.33-3.95x and once fell to 1.199x. The medians of several downloads keep out a stall of
    # the host (a lossless download once took 9x its median).
    # Beside other work the time is the host's, not the path's: a CI-scale download is ~0.1 s of CPU-bound
    # transfer, and with other jobs' load coming and going (8 busy loops on and off beside load 15-30) lossless
    # downloads took 0.145-0.998 s, the 1 % median over 45-49 downloads per rate was only 1.21-1.23x the lossless one
    # and a 1 % download was under 1.1x the lossless one two downloads (about a second) before it in 44-49 % of
    # the pairs, so a paired comparison within a round gains nothing; resampled, the median comparison below
    # failed 43 % of 9-download campaigns and 25 % of 30-download ones, and that campaign's 1 % median came to 0.91x
    # the lossless one. Under steady load the effect grew instead (reno's halved window waits for a receiver the
    # scheduler runs late: 5x). The lossless downloads' own spread says which host this is: where their quartiles
    # lie further apart than the slowdown to be resolved, no median of nine resolves it, and the counts above are
    # the evidence that the loss acted (the campaign without any loss above passed the medians, 1.12x, with its
    # lossless quartiles 1.16x apart, 1.67x in the one at 0.91x; 1.03x on the quiet host).
    lossless = runs.loc[runs["loss_percent"] == 0, "download_time_s"]
    spread = lossless.quantile(0.75) / lossless.quantile(0.25)
    if spread > MIN_SLOWDOWN:
        warnings.warn(f"download times not compared: lossless downloads' quartiles {spread:.2f}x apart, more than the "
                      f"{MIN_SLOWDOWN}x slowdown to resolve (a busy host); medians {medians.round(4).to_dict()}",
                      stacklevel=1)
    else:
        assert medians[1] > MIN_SLOWDOWN * medians[0] and medians[1] > medians[0.1], medians.to_dict()
    assert all(t["kind"] == "http download" and t["curl"]["http_code"] == 200 for t in trials)
    assert {t["curl"]["size_download"] for t in trials} == {CI.spec["endpoints"]["http_file_mib"] * 1048576}

    html = render(outcome["campaign"])
    dom, bar_pixels = browse(html, tmp_path)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    assert "Traceback" not in text and "Download time (s) per DUT impairment" in text
    table = text[text.index("Download time (s) per DUT impairment"):]
    for row in ("median (s)", "1st percentile (s)", "99th percentile (s)"):
        assert row in table
    assert "none loss 0.1 % loss 1 %" in table
    for loss in (0, 0.1, 1):
        assert f"{medians[loss]:,.3f}" in table, loss
    assert "Side by side with RFC 2544" in text
    per_round = CI.repetitions_per_round
    assert (f"order of the repetitions: interleaved: round r runs repetitions {per_round}(r-1)+1 .. {per_round}r"
            in text), "the order is disclosed beside the figures"
    assert "the server's TCP sends frames of at most the MTU" in text, "the method says how the frames were cut"
    assert bar_pixels > 1000, "the download-time bars are drawn"
