"""DUT impairments as exact kernel configuration: what roles/netem applies, planned here and unit-tested.

An impairment acts on the test frames a DUT forwards out of a port (the
forward direction leaves through the DUT's port 1, the reverse through port 0):

* ``loss_percent``: each frame is lost with this probability;
* ``loss_every_nth``: exactly every Nth frame is lost (always by nftables: netem has no such mode);
* ``delay_ms`` / ``jitter_ms``: every frame is delayed (netem);
* ``selective_every_nth`` / ``selective_percent`` with ``delay_ms``: only every
  Nth frame (or a random share) is delayed, the rest pass untouched, as in
  Lencse, Kovacs & Shima 2020, Figs. 4-6: frames are marked, and an htb root
  sends marked frames through a netem class, the others through a plain one
  (htb's default leaf, a pfifo as long as the port's txqueuelen); with
  ``delay_ms`` 0 nothing is delayed and nothing is configured (a sweep's
  loss-free point).

Two backends. ``netem`` needs the kernel's sch_netem; its queue ``limit`` is the
role's netem_limit, far above netem's own default of 1000 frames, which silently
drops frames at benchmark rates (the seed paper's finding). ``nftables`` gives loss only
(numgen random / numgen inc in the forward hook) and is what a kernel without
sch_netem can do. Selection and marking use nftables in both cases, matching
test traffic only: the tester's UDP test frames and the TCP of the lab's client
and server nodes (roles/tcp_endpoints) to 198.18.0.0/15 or 2001:2::/48, so an
HTTP download or an RFC 6349 test meets the same impairment as the test frames.

The settings have no defaults here: roles/netem's meta/argument_specs.yml has them
(the one source). The role hands every variable to this module (the collection's
plugin_utils, which cannot read the role's files); trexlab fills what a spec's
block leaves out from the role's specs first (trexlab.spec.experiment.with_role_defaults).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from . import rolevalues
from .params import InvalidParameter, check_choice, check_range

TABLE = "trexlab_impairment"
#: The firewall mark of frames chosen for the selective netem class.
MARK = 0x7E1
DIRECTION_EGRESS_PORT = {"forward": 1, "reverse": 0}
#: nftables' numgen modulus and netem's queue limit are 32-bit: a larger value fails on the DUT (nft: "Numerical
#: result out of range"), after the campaign has begun, so it is refused with the spec.
U32_MAX = 2**32 - 1
#: The longest netem delay (and jitter) tc takes, ms: it counts them in 32-bit ticks of the kernel's 64 ns packet
#: scheduler clock, 2^32 x 64 ns = 274,877.9 ms, and refuses more ("Illegal ... time (too large)", iproute2 6.1, on
#: the DUT after the campaign has begun), except from about 1e19 ms, where its conversion wraps and a delay the spec
#: never said is applied unseen (1e+20ms was taken). Whole ms below it.
MAX_DELAY_MS = 274_877
#: The finest loss (and selection) percentage, %: nftables draws its random loss per million (numgen random mod
#: 1000000 < ppm), so 0.12345678 % was applied as 0.1235 % and 0.00004 % as no loss at all, unsaid. One rule for both
#: backends: what a DUT was given must not depend on whether its kernel had sch_netem.
PER_MILLION = 1_000_000
PERCENT_RESOLUTION = 100 / PER_MILLION
TEST_TRAFFIC = {"ipv4": "ip daddr 198.18.0.0/15 meta l4proto { tcp, udp }",
                "ipv6": "ip6 daddr 2001:2::/48 meta l4proto { tcp, udp }"}


@dataclass(frozen=True)
class Impairment:
    """The settings of roles/netem (its variables without the netem_ prefix), each given (see module doc). limit is
    None only with the nftables backend, which has no netem queue (a reference DUT's loss)."""

    loss_percent: float
    loss_every_nth: int
    delay_ms: float
    jitter_ms: float
    selective_every_nth: int
    selective_percent: float
    limit: int | None
    directions: tuple[str, ...]
    backend: str

    def __post_init__(self) -> None:
        check_range("loss_percent", self.loss_percent, 0, 100)
        check_range("loss_every_nth", self.loss_every_nth, 0, U32_MAX, integer=True)
        check_range("delay_ms", self.delay_ms, 0, MAX_DELAY_MS)
        check_range("jitter_ms", self.jitter_ms, 0, MAX_DELAY_MS)
        check_range("selective_every_nth", self.selective_every_nth, 0, U32_MAX, integer=True)
        check_range("selective_percent", self.selective_percent, 0, 100)
        for name in ("loss_percent", "selective_percent"):
            _check_per_million(name, getattr(self, name))
        if self.limit is not None:
            check_range("limit", self.limit, 1, U32_MAX, integer=True)
        elif self.backend != "nftables":
            raise InvalidParameter("limit", None, f"an integer 1..{U32_MAX} (none only with backend nftables)")
        check_choice("backend", self.backend, ("auto", "netem", "nftables"))
        for direction in self.directions:
            check_choice("directions", direction, tuple(DIRECTION_EGRESS_PORT))
        for name in ("loss_every_nth", "selective_every_nth"):
            if getattr(self, name) == 1:
                raise InvalidParameter(name, 1, "0 (off) or >= 2")
        if self.jitter_ms and not self.delay_ms:
            raise InvalidParameter("jitter_ms", self.jitter_ms, "0 unless delay_ms is set")
        # Selection with delay_ms 0 delays nothing and plans nothing (active is False): a sweep over the delay
        # measures its loss-free control with the same settings otherwise (gaming-selective-throughput).
        if self.selective_every_nth and self.selective_percent:
            raise InvalidParameter("selective_percent", self.selective_percent, "0 when selective_every_nth is set")

    @property
    def selective(self) -> bool:
        return bool(self.selective_every_nth or self.selective_percent)

    @property
    def needs_netem(self) -> bool:
        """Whether only sch_netem can give this impairment (delay of any kind)."""
        return self.delay_ms > 0 or self.backend == "netem"

    @property
    def active(self) -> bool:
        return bool(self.loss_percent or self.loss_every_nth or self.delay_ms)

    def backend_for(self, kernel_has_netem: bool) -> str:
        """The backend to use here, or InvalidParameter naming sch_netem when it is needed and missing."""
        if self.needs_netem and not kernel_has_netem:
            wanted = "delay" if self.delay_ms else "backend netem"
            raise InvalidParameter(wanted, self.delay_ms if self.delay_ms else "netem",
                                   "a kernel with sch_netem (this one has none): run it on the VM lab or a DUT "
                                   "with netem; nftables gives loss only")
        if self.backend != "auto":
            return self.backend
        return "netem" if kernel_has_netem else "nftables"


def ports_by_index(ports: list[dict]) -> dict[int, str]:
    """Each test port's name by its index (0, 1), checked: the names go into nft strings and tc command lines, so
    only interface names, nothing either would interpret."""
    return {int(p["index"]): rolevalues.check_interface(f"test_ports[{i}].name", p["name"])
            for i, p in enumerate(ports)}


def gro_off(directions: tuple[str, ...] | list[str], by_index: dict[int, str]) -> list[str]:
    """The ports the frames of these directions enter the DUT by (by_index: ports_by_index's), where a plan whose
    rules or qdiscs act per packet turns generic receive offload off (roles/netem, roles/dut_reference, through
    trexlab.lab.netconf's gro, put back as found by absent).

    With GRO on (a virtio port's default) the kernel merges a flow's received frames into packets of up to 64 KB
    before the forward hook: every Nth packet, a share of packets or a rate of packets would not be every Nth
    frame, that share of frames or that rate of frames (the VM lab's virtio DUT: 38-40 packets of 26-28 KB for a
    1 MiB download of 728 frames)."""
    # A direction enters by the port the other one leaves by.
    return [by_index[1 - DIRECTION_EGRESS_PORT[d]] for d in directions]


def nft_rules(imp: Impairment, backend: str, port: str) -> list[str]:
    """The forward-hook rules for frames leaving through one port (one rule per family: exact counters)."""
    rules = []
    for family, match in TEST_TRAFFIC.items():
        head = f'oifname "{port}" {match}'
        if imp.loss_every_nth:  # netem has no exact every-Nth loss: nftables gives it with either backend
            rules.append(f"{head} numgen inc mod {imp.loss_every_nth} 0 counter drop comment \"{family} every nth\"")
        if backend == "nftables" and imp.loss_percent:
            rules.append(f"{head} numgen random mod {PER_MILLION} < {_ppm(imp.loss_percent)} counter drop "
                         f"comment \"{family} random\"")
        if backend == "netem" and imp.selective_every_nth:
            rules.append(f"{head} numgen inc mod {imp.selective_every_nth} 0 meta mark set {MARK:#x} counter")
        if backend == "netem" and imp.selective_percent:
            rules.append(f"{head} numgen random mod {PER_MILLION} < {_ppm(imp.selective_percent)} meta mark set "
                         f"{MARK:#x} counter")
    return rules


def _check_per_million(name: str, percent: float) -> None:
    """A percentage nftables' per-million draw (_ppm) gives exactly (PERCENT_RESOLUTION)."""
    if abs(percent * PER_MILLION / 100 - _ppm(percent)) > 1e-6:
        raise InvalidParameter(name, percent, f"a multiple of {PERCENT_RESOLUTION:g} (1 per million, the finest "
                               "random loss nftables draws)")


def _ppm(percent: float) -> int:
    return round(percent * PER_MILLION / 100)


def _number(value: float) -> str:
    """A value as tc is given it, every digit the spec gave (':g' kept six: 1234.5678 ms was applied as 1234.57).
    trexlab.results.stats.exact's rule; not imported: this module is also the collection's plugin_utils/impairment.py,
    which has only its sibling modules (params, rolevalues)."""
    return format(value, ".15g")


def _netem_args(imp: Impairment, with_loss: bool) -> str:
    args = []
    if imp.delay_ms:
        args.append(f"delay {_number(imp.delay_ms)}ms" + (f" {_number(imp.jitter_ms)}ms" if imp.jitter_ms else ""))
    if with_loss and imp.loss_percent:
        args.append(f"loss {_number(imp.loss_percent)}%")
    args.append(f"limit {imp.limit}")
    return " ".join(args)


def _tc_commands(imp: Impairment, port: str) -> list[str]:
    if not imp.selective:
        return [f"tc qdisc replace dev {port} root netem {_netem_args(imp, with_loss=True)}"]
    # htb root: unmarked frames to 1:10 (undelayed), marked ones to 1:20 (netem); rates far above any link.
    commands = [
        f"tc qdisc replace dev {port} root handle 1: htb default 10",
        f"tc class replace dev {port} parent 1: classid 1:10 htb rate 100gbit",
        f"tc class replace dev {port} parent 1: classid 1:20 htb rate 100gbit",
    ]
    if imp.loss_percent:  # loss applies to every frame, marked or not
        commands.append(f"tc qdisc replace dev {port} parent 1:10 handle 10: netem loss {_number(imp.loss_percent)}% "
                        f"limit {imp.limit}")
    commands += [
        f"tc qdisc replace dev {port} parent 1:20 handle 20: netem {_netem_args(imp, with_loss=True)}",
        f"tc filter replace dev {port} parent 1: protocol all prio 1 handle {MARK:#x} fw flowid 1:20",
    ]
    return commands


def from_settings(settings: dict) -> Impairment:
    """The Impairment of roles/netem's variables without prefix, or of a spec's dut.impairment block with its
    role's defaults filled (its keys that are Impairment's fields; directions as a tuple)."""
    known = {f.name for f in fields(Impairment)}
    if missing := sorted(known - set(settings)):  # a block whose role defaults were not filled in: a bug, not input
        raise KeyError(f"impairment settings without {', '.join(missing)} (trexlab.spec.experiment.with_role_defaults)")
    return Impairment(**{k: v for k, v in settings.items() if k in known and k != "directions"},
                      directions=tuple(settings["directions"]))


def configures_nothing(settings: dict) -> bool:
    """Whether roles/netem would apply nothing for these settings on any DUT (no loss, no delay): a campaign's
    point with them need not run the role (seconds per run on an emulated DUT). Settings the role would refuse:
    False, so that the role runs and names them."""
    try:
        imp = from_settings(settings)
    except (InvalidParameter, TypeError):
        return False
    return not imp.active


def disclosure(settings: dict) -> dict:
    """Every setting of the impairment emulator that shapes a run's figures, the defaults included (a spec's
    dut.impairment block names only what it sets: not netem's queue limit, nor the queues the frames wait in),
    for the run's provenance (settings: the block with its role's defaults filled). InvalidParameter for settings the
    role would refuse."""
    imp = from_settings(settings)
    found = {**asdict(imp), "directions": list(imp.directions)}
    if not imp.active:
        queues = "none: the DUT's own egress queues, untouched"
    elif imp.selective and imp.delay_ms:
        chosen = (f"every {imp.selective_every_nth}th (numgen inc)" if imp.selective_every_nth
                  else f"{_number(imp.selective_percent)} % (numgen random)")
        queues = (f"per egress port an htb root, rate 100gbit per class: the frames nftables marks, {chosen}, in "
                  f"class 1:20, a netem of limit {imp.limit} frames; the others in class 1:10, htb's default pfifo "
                  "leaf (as long as the port's txqueuelen)")
    elif imp.delay_ms or imp.loss_percent:
        queues = (f"per egress port a netem root qdisc of limit {imp.limit} frames (loss alone on a kernel without "
                  "sch_netem: nftables numgen random in the forward hook instead)")
    else:
        queues = "the DUT's own egress queues; nftables numgen inc drops every Nth frame in the forward hook"
    if imp.active:  # plan's gro_off: per frame, not per merged packet
        queues += "; GRO off on the port each impaired direction enters by (put back as found afterwards)"
    return {**found, "queues": queues}


def plan(settings: dict, ports: list[dict], kernel_has_netem: bool) -> dict:
    """Everything the role applies for these settings on a DUT with these test ports.

    Returns {"backend", "devices": egress ports, "nft": ruleset text or "", "tc": [commands], "gro_off": the
    ports that receive the impaired frames}. Each rule and qdisc acts per packet, so GRO goes off on the port each
    impaired direction enters by (gro_off).
    """
    imp = from_settings(settings)
    by_index = ports_by_index(ports)
    devices = [by_index[DIRECTION_EGRESS_PORT[d]] for d in imp.directions]
    if not imp.active:
        return {"backend": "none", "devices": [], "nft": "", "tc": [], "gro_off": []}
    backend = imp.backend_for(kernel_has_netem)
    rules = [rule for port in devices for rule in nft_rules(imp, backend, port)]
    nft = ""
    if rules:
        body = "\n".join(f"    {rule}" for rule in rules)
        nft = (f"table inet {TABLE} {{}}\ndelete table inet {TABLE}\ntable inet {TABLE} {{\n"
               f"  chain forward {{\n    type filter hook forward priority 0; policy accept;\n{body}\n  }}\n}}\n")
    netem_work = imp.delay_ms or imp.loss_percent  # every-Nth loss alone is nftables' job
    tc = [c for port in devices for c in _tc_commands(imp, port)] if backend == "netem" and netem_work else []
    return {"backend": backend, "devices": devices if tc else [], "nft": nft, "tc": tc,
            "gro_off": gro_off(imp.directions, by_index)}
