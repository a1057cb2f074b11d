"""A known-answer DUT: each direction policed to a declared capacity, optionally lossy (roles/dut_reference).

The DUT forwards the test frames of a direction through an nftables token
bucket (``limit rate over R/second burst B packets`` drop): a bucket of B
tokens, full when a trial starts, refilled at R tokens per second, one token
per frame. A trial of T seconds at a constant offered load L therefore passes
every frame while L * T <= R * T + B, so its loss-free rate is known exactly:

    loss-free rate = R + B / T   frames/s per direction

This is the calibration siitperf's authors did against a commercial tester
(Lencse 2021), available on one machine: procedures run against it have a
known answer. The bucket is the kernel's (net/netfilter/nft_limit.c): a frame
costs floor(1e9 / R) ns of tokens and the bucket holds B frames' worth, so R
is exact when it divides 1e9 and otherwise off by less than R^2 / 1e9 fps
(EFFECTIVE_RATE). Measured on this host's kernel (6.18, nftables 1.0.6), 5 s
trials at 1.01-1.5 times R + B/T passed R * T + B frames within 16 frames
(tests/roles/test_dut_reference_role.py checks it within 1 %).

Between trials the bucket refills in B / R seconds, shorter than any
procedure's gap between trials (its receive tail alone) for the values a
reference DUT is declared with (the check below keeps B / R <= 0.25 s).

Optional loss comes after the policer in the same chain, as roles/netem's
nftables backend makes it (trexlab.impairment's rules, not a twin of them):
random (numgen random) or exactly every Nth frame (numgen inc) of what the
policer passed. The policer of a direction is one named limit shared by the
IPv4 and IPv6 rules of that direction, so mixed traffic meets one capacity.
Only test traffic is matched (trexlab.impairment.TEST_TRAFFIC).

The bucket counts packets as the forward hook sees them, and a port with
generic receive offload (GRO) on, as a virtio port is by default, hands it a
TCP flow's frames merged into packets of up to 64 KB: rate_fps would police
merged packets. While applied, GRO is off on the port each policed direction
enters by (trexlab.impairment.gro_off, as roles/netem's), and absent puts the
port's own value back. The namespace lab's veths do no GRO, so only the VM
lab or a physical DUT would show it.

The settings have no defaults here: roles/dut_reference's meta/argument_specs.yml
has them (the one source), as trexlab.impairment's are roles/netem's.

The table runs in the forward hook at priority -10, before roles/netem's
impairment table (priority 0): the capacity comes first, as a bottleneck
in front of an impaired link would.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from . import impairment
from .params import InvalidParameter, check_choice, check_range

TABLE = "trexlab_reference"
#: Forward-hook priority of the table: before roles/netem's (0), so the capacity applies first.
PRIORITY = -10
#: Longest bucket refill (B / R) accepted: the gap between a procedure's trials must refill it.
MAX_REFILL_S = 0.25
#: nftables' limit keeps its rate as an integer number of frames per second.
MAX_RATE_FPS = 100_000_000


@dataclass(frozen=True)
class ReferenceDut:
    rate_fps: int  # frames/s per direction: the token bucket's refill rate
    burst_frames: int  # frames: the bucket's depth (full when a trial starts)
    loss_percent: float  # % of the policed frames lost at random
    loss_every_nth: int  # exactly every Nth policed frame lost; 0: off
    directions: tuple[str, ...]

    def __post_init__(self) -> None:
        check_range("rate_fps", self.rate_fps, 1, MAX_RATE_FPS, integer=True)
        check_range("burst_frames", self.burst_frames, 1, integer=True)
        if self.burst_frames / self.rate_fps > MAX_REFILL_S:
            raise InvalidParameter("burst_frames", self.burst_frames,
                                   f"<= {MAX_REFILL_S:g} s x rate_fps ({MAX_REFILL_S * self.rate_fps:.0f}): the bucket "
                                   "must refill between trials")
        if not self.directions:
            raise InvalidParameter("directions", [], "forward and/or reverse")
        for direction in self.directions:
            check_choice("directions", direction, tuple(impairment.DIRECTION_EGRESS_PORT))
        # Loss values: the impairment's own checks (range, every-Nth of 1, ...).
        self.loss()

    def loss(self) -> impairment.Impairment:
        """The optional loss as roles/netem's nftables backend would apply it (directions as the policer's): no delay,
        no selection, no netem queue."""
        return impairment.Impairment(loss_percent=self.loss_percent, loss_every_nth=self.loss_every_nth, delay_ms=0,
                                     jitter_ms=0, selective_every_nth=0, selective_percent=0, limit=None,
                                     directions=self.directions, backend="nftables")

    @property
    def effective_rate(self) -> float:
        """frames/s the kernel's bucket really refills at: 1e9 / floor(1e9 / rate_fps) (see module doc)."""
        return 1e9 / (10**9 // self.rate_fps)

    def loss_free_rate(self, trial_duration: float) -> float:
        """frames/s per direction passed without policer loss in a trial of trial_duration s: R + B / T."""
        check_range("trial_duration", trial_duration, 0, low_open=True)
        return self.effective_rate + self.burst_frames / trial_duration

    @property
    def loss_ratio(self) -> float:
        """The share of the policed frames the optional loss drops (every-Nth: exactly 1/N in the long run)."""
        nth = 1 / self.loss_every_nth if self.loss_every_nth else 0.0
        return nth + self.loss_percent / 100 * (1 - nth)

    def describe(self, trial_duration: float | None = None) -> str:
        """One line for reports: the declared capacity and loss."""
        text = f"policed to {self.rate_fps:,} frames/s + a {self.burst_frames:,}-frame burst per direction"
        if trial_duration:
            rate = self.loss_free_rate(trial_duration)
            text += f" (loss-free rate {rate:,.0f} frames/s in {trial_duration:g} s trials)"
        if self.loss_every_nth:
            text += f", every {self.loss_every_nth:,}th frame lost"
        if self.loss_percent:
            text += f", {self.loss_percent:g} % of the frames lost at random"
        return text + "; GRO off on the port each policed direction enters by (put back as found afterwards)"


def from_settings(settings: dict) -> ReferenceDut:
    """The role's variables without prefix, or a spec's dut.reference block with its role's defaults filled, as a
    ReferenceDut."""
    known = {f.name for f in fields(ReferenceDut)}
    values = {k: v for k, v in settings.items() if k in known}
    if "directions" in values:
        values["directions"] = tuple(values["directions"])
    if not values.get("rate_fps"):
        raise InvalidParameter("rate_fps", values.get("rate_fps"),
                               "an integer >= 1 (the declared capacity, frames/s per direction)")
    if missing := sorted(known - set(values)):  # a block whose role defaults were not filled in: a bug, not input
        raise KeyError(f"reference settings without {', '.join(missing)} (trexlab.spec.experiment.with_role_defaults)")
    return ReferenceDut(**values)


def plan(settings: dict, ports: list[dict]) -> dict:
    """What roles/dut_reference applies on a DUT with these test ports: {"table", "nft": the ruleset, "gro_off": the
    ports the policed directions enter by}. The bucket and the loss count packets, and with GRO on the kernel merges
    a flow's received frames (TCP's: an http-download or RFC 6349 run through the reference DUT) into packets of up
    to 64 KB before the forward hook: rate_fps would police merged packets, not frames. So GRO goes off there
    (trexlab.impairment.gro_off, as roles/netem's)."""
    dut = from_settings(settings)
    by_index = impairment.ports_by_index(ports)
    limits, rules = [], []
    for direction in dut.directions:
        port = by_index[impairment.DIRECTION_EGRESS_PORT[direction]]
        bucket = f"police_{direction}"
        limits.append(f"  limit {bucket} {{ rate over {dut.rate_fps}/second burst {dut.burst_frames} packets }}")
        for family, match in impairment.TEST_TRAFFIC.items():
            rules.append(f'oifname "{port}" {match} limit name "{bucket}" counter drop '
                         f'comment "{direction} policer {family}"')
        rules += impairment.nft_rules(dut.loss(), "nftables", port)
    body = "\n".join(f"    {rule}" for rule in rules)
    hook = f"type filter hook forward priority {PRIORITY}; policy accept;"
    nft = (f"table inet {TABLE} {{}}\ndelete table inet {TABLE}\ntable inet {TABLE} {{\n" + "\n".join(limits) +
           f"\n  chain forward {{\n    {hook}\n{body}\n  }}\n}}\n")
    return {"table": TABLE, "nft": nft, "gro_off": impairment.gro_off(dut.directions, by_index)}
