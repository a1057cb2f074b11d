"""RFC 2544 / RFC 5180 / RFC 8219 UDP test frames for TRex stateless (STL).

One call of ``get_streams`` gives the streams of one tester port:

* a continuous *test stream* of UDP test frames counted under its own pg_id
  (TRex flow statistics), so that stray frames on the port never count as
  received test frames;
* optionally a *latency stream* with another pg_id (``STLFlowLatencyStats``):
  TRex timestamps these frames and, with the server started with ``--hdrh``,
  keeps an HDR histogram of their one-way delays. It carries the test stream's
  field engine (RFC 4814 ports, N destination networks), so latency is
  measured on the flow mix the throughput was found with (one fixed flow would
  hit one RSS queue of the DUT). With ``tag_delay`` (RFC 8219 section 7.2:
  tags only after the DUT's warm-up) it starts that many seconds after the
  trial (its inter-stream gap), and a *warm-up stream* (a third pg_id, a single
  burst at the latency stream's rate for ``tag_delay`` seconds) carries its
  share of the offered load until then, so the DUT sees the offered load all
  along.

With ``frames`` (trexlab's trials) every stream is a single burst of its share
of them and the port stops by itself once all are sent; without, the test and
latency streams are continuous and trex-console's ``start -d`` sets their time.
A trial's count is exact either way, and a synchronized start (TRex's
``start_at_ts``) cannot cut a burst short, as it cuts a continuous stream with
a duration (TRex's duration timer runs from when the port is told to start).

Addresses follow the trexlab address plan (docs/architecture.md): port 0 sends
the *forward* direction from 198.18.0.2 / 2001:2:0:8000::2 to 198.19.x.2 /
2001:2:0:90xx::2, port 1 the *reverse* direction to 198.18.x.2 / 2001:2:0:80xx::2,
for destination networks x = 0..networks-1.  The MAC addresses are TRex's: every
stream tells the server to write each port's own source and configured (or
resolved) destination MAC (trex_cfg). A Scapy packet that sets its MACs, as the
template must (zeros, see UNSET_MAC), would otherwise have them sent as they are.

From trex-console in trex-profiles/, e.g. 1000 frames/s of 128-byte IPv6 frames with RFC 4814
ports to 16 networks (``-t --help`` lists every tunable with its default)::

    start -f stl_rfc2544_udp.py -p 0 1 -t --ip_version 6 --frame_size 128 --port_mode rfc4814 --networks 16 --rate 1000

The console's older form ``-t ip_version=6,frame_size=128,...`` works too. trexlab itself calls
``get_streams`` with the same names as keyword arguments; tunables given on the command line
override them.

The frames are Scapy packets padded to the frame size with a recognisable payload, and the
field engine (STLVM) rewrites the destination network and the RFC 4814 ports per frame.

Checksums: test frames leave TRex with correct IPv4 and UDP checksums, also
with RFC 4814 ports and several networks (the field engine fixes them after
each rewrite; checked on captured frames). Latency frames do not: TRex writes
its signature over the payload's tail after checksumming, so their UDP
checksum is wrong (captured, TRex v3.08). Routers and SIIT translators forward
them unchecked; a zero IPv4 UDP checksum, the other choice, would be dropped by
a stateless translator that does not compute one (RFC 7915, section 4.5), so
the profile leaves TRex's.
"""

from __future__ import annotations

import argparse
import os

#: Ethernet header (no VLAN) and FCS: frame sizes count the FCS, TRex's packet buffer does not.
ETHERNET_HEADER = 14
FCS = 4
UDP_HEADER = 8
IP_HEADER = {4: 20, 6: 40}
#: TRex appends a 16-byte signature (pg_id, sequence, timestamp) to every latency frame.
LATENCY_SIGNATURE = 16
#: Smallest frame that carries the latency signature: 82 bytes for IPv6/UDP, 62 for IPv4/UDP.
MIN_LATENCY_FRAME = {v: ETHERNET_HEADER + IP_HEADER[v] + UDP_HEADER + LATENCY_SIGNATURE + FCS for v in (4, 6)}

#: Fixed UDP ports when RFC 4814 pseudorandom ports are off.
FIXED_SOURCE_PORT = 1024
FIXED_DESTINATION_PORT = 1024
#: RFC 4814 section 4.5: source ports 1024..65535, destination ports 1..49151.
RFC4814_SOURCE_PORTS = (1024, 65535)
RFC4814_DESTINATION_PORTS = (1, 49151)
#: RFC 2544 leaves the payload open; a recognisable one tells test frames from stray ones in captures.
PAYLOAD_PATTERN = b"trexlab-rfc2544-"
#: Zeros keep Scapy from resolving the MACs (ARP) on the machine that builds the profile. STLStream takes the MACs
#: of a packet that sets them as the ones to send, so each stream says the port's own apply (get_streams).
UNSET_MAC = "00:00:00:00:00:00"

DIRECTION_NAMES = ("forward", "reverse")
#: The warm-up stream's pg_id is the test stream's plus this (pg_ids up to 2 * port + 2 are taken).
WARMUP_PG_OFFSET = 100
IP_VERSIONS = (4, 6)
PORT_MODES = ("fixed", "rfc4814")
LATENCY_MODES = ("none", "tagged", "all")
MAX_NETWORKS = 256  # the network number is one byte of the destination address
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _check(name: str, ok: bool, value: object, allowed: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r}: allowed {allowed}")


def _flag(text: str | bool) -> bool:
    """A yes/no tunable: trex-console passes `dont_fragment=true` on as the text "True"."""
    word = str(text).lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed {', '.join(TRUE_WORDS + FALSE_WORDS)}")
    return word in TRUE_WORDS


def addresses(direction: int, ip_version: int, network: int = 0) -> tuple[str, str]:
    """Source and destination address of the test frames of a direction (0 forward, 1 reverse)."""
    if ip_version == 4:
        src_net, dst_net = (18, 19) if direction == 0 else (19, 18)
        return f"198.{src_net}.0.2", f"198.{dst_net}.{network}.2"
    src_group, dst_group = (0x8000, 0x9000) if direction == 0 else (0x9000, 0x8000)
    return f"2001:2:0:{src_group:x}::2", f"2001:2:0:{dst_group + network:x}::2"


def test_packet(direction: int, ip_version: int, frame_size: int, network: int = 0,
                source_port: int = FIXED_SOURCE_PORT, destination_port: int = FIXED_DESTINATION_PORT,
                dont_fragment: bool = False):
    """One UDP test frame as a Scapy packet of frame_size - 4 bytes (the NIC adds the FCS).

    Scapy fills in lengths and checksums. dont_fragment sets IPv4's DF bit (path MTU trials);
    IPv6 routers never fragment, so it changes nothing there. IPv4's identification is 0, not
    Scapy's 1: the field means nothing for frames that are never fragmented, and 0 keeps the
    frames byte for byte what trexlab sent before its profile was built with Scapy.
    """
    from trex.stl.api import IP, UDP, Ether, IPv6, Raw  # TRex's client brings its own Scapy

    src, dst = addresses(direction, ip_version, network)
    if ip_version == 4:
        l3 = IP(src=src, dst=dst, id=0, flags="DF" if dont_fragment else 0)
    else:
        l3 = IPv6(src=src, dst=dst)
    headers = Ether(src=UNSET_MAC, dst=UNSET_MAC) / l3 / UDP(sport=source_port, dport=destination_port)
    padding = frame_size - FCS - len(headers)
    _check("frame_size", padding >= 0, frame_size, f">= {len(headers) + FCS} bytes for IPv{ip_version}/UDP")
    # TRex writes its latency signature over the payload's tail in latency frames.
    return headers / Raw(load=(PAYLOAD_PATTERN * (padding // len(PAYLOAD_PATTERN) + 1))[:padding])


def test_frame(*args, **kwargs) -> bytes:
    """test_packet's bytes, as the NIC sends them without the FCS (same arguments)."""
    return bytes(test_packet(*args, **kwargs))


def field_offsets(ip_version: int) -> dict[str, int]:
    """Byte offsets, from the frame start, of the fields the field engine rewrites."""
    l3 = ETHERNET_HEADER
    l4 = l3 + IP_HEADER[ip_version]
    # The byte that holds the destination network number x: 198.19.x.2 or 2001:2:0:90xx::2.
    network_byte = l3 + 16 + 2 if ip_version == 4 else l3 + 24 + 7
    return {"l3": l3, "l4": l4, "source_port": l4, "destination_port": l4 + 2, "network_byte": network_byte}


def tunables_parser() -> argparse.ArgumentParser:
    """The profile's tunables: what trex-console's `-t` passes and `-t --help` lists."""
    parser = argparse.ArgumentParser(
        prog=os.path.basename(__file__), formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="RFC 2544 / RFC 5180 / RFC 8219 UDP test frames of one tester port: a test stream, "
                    "optionally a latency stream and its warm-up stream.")
    add = parser.add_argument
    add("--frame_size", type=int, default=64, help="bytes on the wire including the 4-byte FCS")
    add("--ip_version", type=int, default=4, choices=IP_VERSIONS,
        help="IP version of the frames this port sends (SIIT: 6 on one port, 4 on the other)")
    add("--port_mode", default="fixed", choices=PORT_MODES,
        help=f"UDP ports: fixed {FIXED_SOURCE_PORT}/{FIXED_DESTINATION_PORT}, or RFC 4814 pseudorandom per "
             f"frame (source {RFC4814_SOURCE_PORTS[0]}..{RFC4814_SOURCE_PORTS[1]}, destination "
             f"{RFC4814_DESTINATION_PORTS[0]}..{RFC4814_DESTINATION_PORTS[1]})")
    add("--networks", type=int, default=1,
        help=f"destination networks x = 0..networks-1 the frames go to in turn (1..{MAX_NETWORKS})")
    add("--rate", type=float, default=1000.0, help="frames/s of the test stream (0: latency stream only)")
    add("--latency_rate", type=float, default=0.0,
        help="frames/s of the latency stream, part of the offered load (0: no latency stream)")
    add("--tag_delay", type=float, default=0.0,
        help="s after the start before latency frames are sent (RFC 8219 section 7.2); a warm-up stream "
             "at the latency stream's rate sends until then")
    add("--frames", type=int, default=0,
        help="frames of this port's streams together, each stream a single burst that ends by itself: the "
             "latency stream --latency_frames of them, the warm-up stream its rate x tag_delay, the test stream "
             "the rest (0: continuous streams, which trex-console's start -d stops)")
    add("--latency_frames", type=int, default=0, help="frames of the latency stream, with --frames")
    add("--dont_fragment", type=_flag, nargs="?", const=True, default=False,
        help="set IPv4's DF bit (path MTU trials)")
    add("--pg_id", type=int, default=None, help="pg_id of the test stream (None: 2 * port_id + 1)")
    add("--latency_pg_id", type=int, default=None, help="pg_id of the latency stream (None: 2 * port_id + 2)")
    add("--warmup_pg_id", type=int, default=None,
        help=f"pg_id of the warm-up stream (None: pg_id + {WARMUP_PG_OFFSET})")
    return parser


class RFC2544UDP:
    """STL profile: test stream (+ latency stream) of one tester port."""

    warmup_pg_offset = WARMUP_PG_OFFSET  # the generator numbers its pg_ids by it

    def get_streams(self, direction=0, tunables=(), **kwargs):
        """Streams of the port: direction 0 forward, 1 reverse (trex-console: port_id % 2).

        tunables: trex-console's `-t` list, e.g. ['--frame_size', '128']; keyword arguments with a
        tunable's name (trexlab's, or the console's older `-t a=1,b=2`) set its value, and the list
        overrides them. Other keyword arguments, such as TRex's port_id, are context.
        """
        from trex.stl.api import (
            STLVM,
            CTRexVmInsFixHwCs,
            STLFlowLatencyStats,
            STLFlowStats,
            STLPktBuilder,
            STLStream,
            STLStreamDstMAC_CFG_FILE,
            STLTXCont,
            STLTXSingleBurst,
        )

        def stream(**fields):
            # The port's own source MAC and its configured destination, never the template's zeros: left to
            # STLStream, a packet that sets its MACs sends them (00:00:00:00:00:00 both ways, which no DUT takes).
            return STLStream(mac_src_override_by_pkt=False, mac_dst_override_mode=STLStreamDstMAC_CFG_FILE, **fields)

        parser = tunables_parser()
        names = set(vars(parser.parse_args([])))
        parser.set_defaults(**{name: value for name, value in kwargs.items() if name in names})
        args = parser.parse_args([str(t) for t in tunables])  # -t --help prints the help and exits
        port_id = int(kwargs.get("port_id", 0))
        direction = int(direction) % 2
        frame_size, ip_version, networks = int(args.frame_size), int(args.ip_version), int(args.networks)
        port_mode, rate, latency_rate = str(args.port_mode), float(args.rate), float(args.latency_rate)
        tag_delay, dont_fragment = float(args.tag_delay), _flag(args.dont_fragment)
        frames, latency_frames = int(args.frames), int(args.latency_frames)
        pg_id = 2 * port_id + 1 if args.pg_id is None else int(args.pg_id)
        latency_pg_id = 2 * port_id + 2 if args.latency_pg_id is None else int(args.latency_pg_id)
        warmup_pg_id = pg_id + WARMUP_PG_OFFSET if args.warmup_pg_id is None else int(args.warmup_pg_id)

        # Keyword arguments bypass argparse's choices, so every value is checked here.
        _check("ip_version", ip_version in IP_VERSIONS, ip_version, ", ".join(map(str, IP_VERSIONS)))
        _check("port_mode", port_mode in PORT_MODES, port_mode, ", ".join(PORT_MODES))
        _check("networks", 1 <= networks <= MAX_NETWORKS, networks, f"1..{MAX_NETWORKS}")
        _check("rate", rate >= 0, rate, ">= 0 frames/s")
        _check("latency_rate", latency_rate >= 0, latency_rate, ">= 0 frames/s")
        _check("rate/latency_rate", rate > 0 or latency_rate > 0, (rate, latency_rate), "at least one > 0")
        _check("tag_delay", tag_delay >= 0, tag_delay, ">= 0 s")
        _check("frames", frames >= 0, frames, ">= 0 (0: continuous streams)")
        warmup_frames = round(latency_rate * tag_delay)
        test_frames = 0
        if frames:
            _check("latency_frames", latency_frames >= 1 if latency_rate > 0 else latency_frames == 0,
                   latency_frames, ">= 1 with a latency stream, else 0")
            if rate > 0:
                test_frames = frames - latency_frames - warmup_frames
                _check("frames", test_frames >= 1, frames,
                       f">= {latency_frames + warmup_frames + 1} (latency and warm-up frames, and a test frame)")
            else:  # the latency stream carries the whole load: the warm-up stream the rest of the frames
                warmup_frames = frames - latency_frames
                _check("frames", warmup_frames >= 0, frames, f">= {latency_frames} (the latency frames)")
        if latency_rate > 0:
            _check("frame_size", frame_size >= MIN_LATENCY_FRAME[ip_version], frame_size,
                   f">= {MIN_LATENCY_FRAME[ip_version]} bytes for IPv{ip_version}/UDP latency frames "
                   f"(TRex's {LATENCY_SIGNATURE}-byte signature must fit in the UDP payload)")

        packet = test_packet(direction, ip_version, frame_size, dont_fragment=dont_fragment)

        def builder():  # each stream its own field-engine program: the same flows, in every stream
            return STLPktBuilder(pkt=packet,
                                 vm=self._field_engine(STLVM, CTRexVmInsFixHwCs, ip_version, port_mode, networks))

        name = DIRECTION_NAMES[direction]
        streams = []
        # With frames, every stream is a single burst: it sends its count from its start (a synchronized start's
        # too, which TRex's duration would cut short: its timer runs from when the port is told, not from then).
        if rate > 0:
            mode = STLTXSingleBurst(pps=rate, total_pkts=test_frames) if frames else STLTXCont(pps=rate)
            streams.append(stream(name=f"test-{name}", packet=builder(), mode=mode,
                                  flow_stats=STLFlowStats(pg_id=pg_id)))
        if latency_rate > 0:
            # TRex timestamps latency frames on its receive core whatever their flow, so they can carry the
            # test stream's flows: RFC 4814 ports and N networks reach the same DUT queues as the test frames.
            if warmup_frames:
                streams.append(stream(name=f"warmup-{name}", packet=builder(),
                                      mode=STLTXSingleBurst(pps=latency_rate, total_pkts=warmup_frames),
                                      flow_stats=STLFlowStats(pg_id=warmup_pg_id)))
            mode = (STLTXSingleBurst(pps=latency_rate, total_pkts=latency_frames) if frames
                    else STLTXCont(pps=latency_rate))
            streams.append(stream(name=f"latency-{name}", packet=builder(), mode=mode,
                                  isg=tag_delay * 1e6,  # TRex's inter-stream gap is in microseconds
                                  flow_stats=STLFlowLatencyStats(pg_id=latency_pg_id)))
        return streams

    @staticmethod
    def _field_engine(STLVM, CTRexVmInsFixHwCs, ip_version: int, port_mode: str, networks: int):  # noqa: N803
        """Field-engine program: destination network and RFC 4814 ports per frame, then checksums."""
        if port_mode == "fixed" and networks == 1:
            return None
        at = field_offsets(ip_version)
        vm = STLVM()
        if networks > 1:
            vm.var(name="network", min_value=0, max_value=networks - 1, size=1, op="inc")
            vm.write(fv_name="network", pkt_offset=at["network_byte"])
        if port_mode == "rfc4814":
            # A 16-bit random variable yields only 15 random bits (values <= 33791 for
            # 1024..65535), so the ports come from 32-bit random variables whose low 16 bits
            # are written into the 16-bit port fields.
            for field, (low, high) in (("source_port", RFC4814_SOURCE_PORTS),
                                       ("destination_port", RFC4814_DESTINATION_PORTS)):
                vm.var(name=field, min_value=low, max_value=high, size=4, op="random")
                vm.write_mask(fv_name=field, pkt_offset=at[field], pkt_cast_size=2, mask=0xFFFF)
        # Rewritten addresses and ports invalidate the IPv4 header and UDP checksums.
        vm.fix_chksum_hw(l3_offset=at["l3"], l4_offset=at["l4"], l4_type=CTRexVmInsFixHwCs.L4_TYPE_UDP)
        return vm


def register():
    return RFC2544UDP()
