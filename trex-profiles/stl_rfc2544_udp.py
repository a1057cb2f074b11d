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

Addresses follow the trexlab address plan (docs/architecture.md): port 0 sends
the *forward* direction from 198.18.0.2 / 2001:2:0:8000::2 to 198.19.x.2 /
2001:2:0:90xx::2, port 1 the *reverse* direction to 198.18.x.2 / 2001:2:0:80xx::2,
for destination networks x = 0..networks-1.  The MAC addresses are TRex's: the
server writes each port's own source and configured destination MAC (trex_cfg).

From trex-console in trex-profiles/, e.g. 1000 frames/s of 128-byte IPv6 frames with RFC 4814
ports to 16 networks::

    start -f stl_rfc2544_udp.py -p 0 1 -t ip_version=6,frame_size=128,port_mode=rfc4814,networks=16,rate=1000

The frames are built byte by byte (no Scapy) so that their length and fields
are exact and testable without TRex.

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

import ipaddress
import struct

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

DIRECTION_NAMES = ("forward", "reverse")
#: The warm-up stream's pg_id is the test stream's plus this (pg_ids up to 2 * port + 2 are taken).
WARMUP_PG_OFFSET = 100
PORT_MODES = ("fixed", "rfc4814")
LATENCY_MODES = ("none", "tagged", "all")


def _check(name: str, ok: bool, value: object, allowed: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r}: allowed {allowed}")


def addresses(direction: int, ip_version: int, network: int = 0) -> tuple[str, str]:
    """Source and destination address of the test frames of a direction (0 forward, 1 reverse)."""
    if ip_version == 4:
        src_net, dst_net = (18, 19) if direction == 0 else (19, 18)
        return f"198.{src_net}.0.2", f"198.{dst_net}.{network}.2"
    src_group, dst_group = (0x8000, 0x9000) if direction == 0 else (0x9000, 0x8000)
    return f"2001:2:0:{src_group:x}::2", f"2001:2:0:{dst_group + network:x}::2"


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def test_frame(direction: int, ip_version: int, frame_size: int, network: int = 0,
               source_port: int = FIXED_SOURCE_PORT, destination_port: int = FIXED_DESTINATION_PORT,
               dont_fragment: bool = False) -> bytes:
    """One UDP test frame without FCS (frame_size - 4 bytes), checksums correct.

    MAC addresses are zero: TRex replaces them with the port's configured ones. dont_fragment sets
    IPv4's DF bit (path MTU trials); IPv6 routers never fragment, so it changes nothing there.
    """
    src, dst = addresses(direction, ip_version, network)
    src_b = ipaddress.ip_address(src).packed
    dst_b = ipaddress.ip_address(dst).packed
    ip_len = frame_size - FCS - ETHERNET_HEADER
    udp_len = ip_len - IP_HEADER[ip_version]
    _check("frame_size", udp_len >= UDP_HEADER, frame_size, f">= {ETHERNET_HEADER + IP_HEADER[ip_version] + 12}")
    # A recognisable payload (RFC 2544 leaves it open); TRex overwrites its tail in latency frames.
    payload = (b"trexlab-rfc2544-" * (udp_len // 16 + 1))[: udp_len - UDP_HEADER]
    udp = struct.pack("!HHHH", source_port, destination_port, udp_len, 0) + payload
    if ip_version == 4:
        pseudo = src_b + dst_b + struct.pack("!BBH", 0, 17, udp_len)
        flags = 0x4000 if dont_fragment else 0
        header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, flags, 64, 17, 0, src_b, dst_b)
        header = header[:10] + struct.pack("!H", _checksum(header)) + header[12:]
        ethertype = 0x0800
    else:
        pseudo = src_b + dst_b + struct.pack("!IxxxB", udp_len, 17)
        header = struct.pack("!IHBB16s16s", 6 << 28, udp_len, 17, 64, src_b, dst_b)
        ethertype = 0x86DD
    udp = udp[:6] + struct.pack("!H", _checksum(pseudo + udp) or 0xFFFF) + udp[8:]
    return bytes(12) + struct.pack("!H", ethertype) + header + udp


def field_offsets(ip_version: int) -> dict[str, int]:
    """Byte offsets, from the frame start, of the fields the field engine rewrites."""
    l3 = ETHERNET_HEADER
    l4 = l3 + IP_HEADER[ip_version]
    # The byte that holds the destination network number x: 198.19.x.2 or 2001:2:0:90xx::2.
    network_byte = l3 + 16 + 2 if ip_version == 4 else l3 + 24 + 7
    return {"l3": l3, "l4": l4, "source_port": l4, "destination_port": l4 + 2, "network_byte": network_byte}


class RFC2544UDP:
    """STL profile: test stream (+ latency stream) of one tester port."""

    warmup_pg_offset = WARMUP_PG_OFFSET  # the generator numbers its pg_ids by it

    def get_streams(self, tunables=(), direction=0, port_id=0, frame_size=64, ip_version=4, port_mode="fixed",
                    networks=1, rate=1000.0, latency_rate=0.0, pg_id=None, latency_pg_id=None, dont_fragment=False,
                    tag_delay=0.0, warmup_pg_id=None, **kwargs):
        """Streams of the port; every tunable has a default so trex-console can list them.

        rate / latency_rate are frames/s of the test and latency stream (latency_rate 0 = no
        latency stream, rate 0 = latency stream only); pg_id defaults to 2 * port_id + 1,
        latency_pg_id to 2 * port_id + 2 and warmup_pg_id to pg_id + WARMUP_PG_OFFSET, so that
        each direction has its own. tag_delay: s before the latency stream starts.
        """
        from trex.stl.api import (  # imported here so the frame builders work without TRex
            STLVM,
            CTRexVmInsFixHwCs,
            STLFlowLatencyStats,
            STLFlowStats,
            STLPktBuilder,
            STLStream,
            STLTXCont,
            STLTXSingleBurst,
        )

        options = dict(frame_size=frame_size, ip_version=ip_version, port_mode=port_mode, networks=networks,
                       rate=rate, latency_rate=latency_rate, pg_id=pg_id, latency_pg_id=latency_pg_id,
                       dont_fragment=dont_fragment, tag_delay=tag_delay, warmup_pg_id=warmup_pg_id)
        options.update(_parse_console_tunables(tunables))
        frame_size, ip_version = int(options["frame_size"]), int(options["ip_version"])
        port_mode, networks = str(options["port_mode"]), int(options["networks"])
        rate, latency_rate = float(options["rate"]), float(options["latency_rate"])
        dont_fragment = str(options["dont_fragment"]).lower() in ("1", "true", "yes")  # console tunables are text
        direction = int(direction) % 2
        pg_id = 2 * port_id + 1 if options["pg_id"] is None else int(options["pg_id"])
        latency_pg_id = 2 * port_id + 2 if options["latency_pg_id"] is None else int(options["latency_pg_id"])
        warmup_pg_id = pg_id + WARMUP_PG_OFFSET if options["warmup_pg_id"] is None else int(options["warmup_pg_id"])
        tag_delay = float(options["tag_delay"])

        _check("ip_version", ip_version in (4, 6), ip_version, "4, 6")
        _check("port_mode", port_mode in PORT_MODES, port_mode, ", ".join(PORT_MODES))
        _check("networks", 1 <= networks <= 256, networks, "1..256")
        _check("rate", rate >= 0, rate, ">= 0 frames/s")
        _check("latency_rate", latency_rate >= 0, latency_rate, ">= 0 frames/s")
        _check("rate/latency_rate", rate > 0 or latency_rate > 0, (rate, latency_rate), "at least one > 0")
        _check("tag_delay", tag_delay >= 0, tag_delay, ">= 0 s")
        if latency_rate > 0:
            _check("frame_size", frame_size >= MIN_LATENCY_FRAME[ip_version], frame_size,
                   f">= {MIN_LATENCY_FRAME[ip_version]} bytes for IPv{ip_version}/UDP latency frames "
                   f"(TRex's {LATENCY_SIGNATURE}-byte signature must fit in the UDP payload)")

        frame = test_frame(direction, ip_version, frame_size, dont_fragment=dont_fragment)

        def packet():  # each stream its own field-engine program: the same flows, in every stream
            return STLPktBuilder(pkt_buffer=frame,
                                 vm=self._field_engine(STLVM, CTRexVmInsFixHwCs, ip_version, port_mode, networks))

        name = DIRECTION_NAMES[direction]
        streams = []
        if rate > 0:
            streams.append(STLStream(name=f"test-{name}", packet=packet(), mode=STLTXCont(pps=rate),
                                     flow_stats=STLFlowStats(pg_id=pg_id)))
        if latency_rate > 0:
            # TRex timestamps latency frames on its receive core whatever their flow, so they can carry the
            # test stream's flows: RFC 4814 ports and N networks reach the same DUT queues as the test frames.
            warmup_frames = round(latency_rate * tag_delay)
            if warmup_frames:
                streams.append(STLStream(name=f"warmup-{name}", packet=packet(),
                                         mode=STLTXSingleBurst(pps=latency_rate, total_pkts=warmup_frames),
                                         flow_stats=STLFlowStats(pg_id=warmup_pg_id)))
            streams.append(STLStream(name=f"latency-{name}", packet=packet(), mode=STLTXCont(pps=latency_rate),
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


def _parse_console_tunables(tunables) -> dict:
    """trex-console passes -t a=1,b=2 as ['--a', '1', '--b', '2'] (TRex >= 2.8x)."""
    items = list(tunables or ())
    parsed = {}
    for i in range(0, len(items) - 1, 2):
        key = str(items[i]).lstrip("-").replace("-", "_")
        parsed[key] = items[i + 1]
    return parsed


def register():
    return RFC2544UDP()
