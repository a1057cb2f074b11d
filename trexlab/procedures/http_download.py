"""HTTP download time: the client node fetches the server node's file through the DUT, timed.

The user-experience side of Lencse, Kovacs & Shima 2020 (Figs. 3 and 5,
Tables I, III and IV): nginx on the server node serves a file sized for the
link (roles/tcp_endpoints), the client downloads it with curl and the time the
whole transfer took is the figure. One download is one run; a campaign repeats
it (20 times by default) per sweep point of DUT delay, loss or selective delay,
so the report shows its median and 1st/99th percentile next to the RFC 2544
figures of the same impairments.

The download must bring exactly the file's bytes with HTTP status 200, or the
run fails: a short or refused transfer is not a fast one.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from trexlab.params import InvalidParameter, check_range
from trexlab.procedures.common import RunContext
from trexlab.spec.schema import doc
from trexlab.testbed.endpoints import Endpoints, LabView, counted_between, node_tcp_counters, require_lab
from trexlab.trial import TrialSpec


class DownloadError(RuntimeError):
    """The download could not be measured (curl failed, timed out or fetched another size than the file's); one
    line. Not a generator's failure: no traffic generator takes part, the client node's curl does the transfer."""


NAME = "http_download"
TAKES_RATE = False
METHOD = "HTTP download of the server node's file by curl on the client node, through the DUT"
#: What curl reports about a transfer (--write-out '%{json}'), kept per download.
CURL_FIELDS = ("http_code", "size_download", "time_total", "time_connect", "time_starttransfer", "speed_download",
               "num_connects")

#: The longest a download may be given, s: a day, beyond any file roles/tcp_endpoints makes at any lab's speed; a
#: shared spec cannot hold the lab longer.
MAX_TIMEOUT = 86400


@dataclass(frozen=True)
class Params:
    timeout: float = field(default=600.0, metadata=doc(
        "s a download may take: one still running then is ended and the run fails", exclusiveMinimum=0,
        maximum=MAX_TIMEOUT))

    def __post_init__(self) -> None:
        check_range("timeout", self.timeout, 0, MAX_TIMEOUT, low_open=True)


@dataclass
class Download:
    """One download as the results store keeps it (trials.jsonl)."""

    url: str
    expected_bytes: int
    curl: dict  # CURL_FIELDS as curl reported them
    congestion_control: str | None
    #: Whether the server's TCP kept TSO/GSO (roles/tcp_endpoints): False, frames of at most the MTU; None, facts of
    #: a role that did not say.
    segmentation_offload: bool | None = None
    #: The server node's TCP counters over the download (trexlab.testbed.endpoints.TCP_COUNTERS): how the DUT's
    #: loss or delay reached the transfer, its segments sent again, which the time alone does not show; None: not
    #: read (or a download recorded before they were).
    server_tcp: dict | None = None

    @property
    def time_s(self) -> float:
        return float(self.curl["time_total"])

    def to_dict(self) -> dict:
        return {"kind": "http download", **asdict(self), "download_time_s": self.time_s}


@dataclass
class DownloadResult:
    params: Params
    download: Download

    def to_dict(self) -> dict:
        d = self.download
        return {"procedure": NAME, "method": METHOD, "url": d.url, "bytes": d.expected_bytes,
                "download_time_s": d.time_s, "congestion_control": d.congestion_control,
                "segmentation_offload": d.segmentation_offload, "curl": d.curl, "server_tcp": d.server_tcp,
                "params": asdict(self.params),
                "headline": dict(zip(HEADLINE, (d.time_s, d.expected_bytes * 8 / d.time_s if d.time_s else None),
                                     strict=True))}


#: The headline figures, in order: the download's time, s, and its file's bits over that time, bit/s.
HEADLINE = ("download_time_s", "download_throughput_bps")


def headline_names(params: Params, traffic) -> tuple[str, ...]:
    """The headline figures a run reports."""
    return HEADLINE


def needs_tcp_endpoints(params: Mapping) -> bool:
    return True


def check(plan) -> None:
    """One IP version, and a lab with client and server nodes (whether they are configured: check_lab)."""
    ip_version(plan.traffic)
    if plan.lab is None and plan.capabilities.needs_lab:
        return  # a dry run without the lab's inventory
    lab = require_lab(plan.lab, plan.generator, NAME)
    lab.client, lab.server  # noqa: B018  (each raises LabError naming the missing node)


def cost(params: Params, traffic: TrialSpec):
    """At most the timeout; how long a download takes is not known before the first one."""
    from trexlab.plan.estimate import Cost

    return Cost(params.timeout, None, 1, 1, f"{NAME}: at most its timeout {params.timeout:g} s; expected not known "
                                            "before the first download (the refined ETA gives it)")


def check_lab(plan, lab: LabView) -> None:
    """Procedure.check_lab: the lab's endpoints as the run will find them (check_endpoints)."""
    check_endpoints(Endpoints(require_lab(lab.lab, plan.generator, NAME), lab.endpoint_facts), plan.traffic)


def check_endpoints(endpoints: Endpoints, traffic: TrialSpec | None = None) -> Endpoints:
    """The endpoints configured, nginx on the server, an address of the traffic's IP version there."""
    if "http_path" not in endpoints.facts:
        raise InvalidParameter("server", endpoints.server.name, "a server node with nginx (roles/tcp_endpoints)")
    endpoints.server_address(ip_version(traffic))
    return endpoints


def ip_version(traffic: TrialSpec | None) -> int:
    """The download's IP version: the traffic's (--ip-version), the same on both tester ports."""
    if traffic is None:
        return 4
    if traffic.ip_version[0] != traffic.ip_version[1]:
        raise InvalidParameter("ip_version", traffic.ip_version, "the same on both tester ports for a download")
    return traffic.ip_version[0]


def curl_argv(url: str, timeout: float) -> list[str]:
    """curl fetching url into nothing, one JSON line of its figures on stdout."""
    return ["curl", "--silent", "--show-error", "--output", "/dev/null", "--max-time", f"{timeout:g}",
            "--write-out", "%{json}", url]


def run(context: RunContext, params: Params, endpoints: Endpoints | None = None) -> DownloadResult:
    """endpoints: given by tests; otherwise the generator's lab's, which check_lab found fit."""
    traffic, on_trial, progress = context.traffic, context.on_trial, context.progress
    endpoints = endpoints or Endpoints(require_lab(context.generator.lab, context.generator.name, NAME))
    url = endpoints.url(ip_version(traffic))
    if progress:
        progress("download", {"test": url, "trial": 1})
    argv = endpoints.client.command(curl_argv(url, params.timeout))
    counters = node_tcp_counters(endpoints.server)
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=params.timeout + 30)
    except subprocess.TimeoutExpired:
        raise DownloadError(f"download of {url} did not end within {params.timeout + 30:.0f} s") from None
    server_tcp = counted_between(counters, node_tcp_counters(endpoints.server))
    try:
        report = json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        last = (result.stderr.strip().splitlines() or [f"curl exit status {result.returncode}"])[-1]
        raise DownloadError(f"download of {url}: {last}") from None
    curl = {k: report.get(k) for k in CURL_FIELDS}
    if result.returncode != 0 or curl["http_code"] != 200 or curl["size_download"] != endpoints.http_file_bytes:
        reason = (result.stderr.strip().splitlines() or [report.get("errormsg") or ""])[-1]
        raise DownloadError(f"download of {url}: HTTP {curl['http_code']}, {curl['size_download']} of "
                             f"{endpoints.http_file_bytes} bytes{': ' + reason if reason else ''}")
    download = Download(url, endpoints.http_file_bytes, curl, endpoints.client_facts.get("congestion_control"),
                        endpoints.facts.get("segmentation_offload"), server_tcp)
    if on_trial:
        on_trial(download, {"procedure": NAME, "phase": "download", "trial": 1})
    if progress:
        progress("download", {"test": url, "trial": 1, "done": True,
                              "throughput_bps": {"download": download.expected_bytes * 8 / download.time_s}})
    return DownloadResult(params, download)
