"""RFC 6349 TCP throughput test for TRex advanced stateful (ASTF): bulk transfer over N connections.

TRex plays both ends of every connection: the clients behind tester port 0,
the server behind tester port 1, so each connection crosses the DUT. Directions
are named from the client's point of view, as RFC 6349 tools do: *download*
= the server sends (tester port 1 -> port 0), *upload* = the client sends,
*bidirectional* = both at once. ``connections`` connections open together and
then send ``chunk`` bytes at a time until ``bytes`` per connection have gone
or the test is stopped (trexlab stops it after its duration and reads TRex's
TCP counters in between). With ``bitrate`` each sender waits after every chunk
so that one connection carries about that many bit/s (the low load of RFC
6349's baseline RTT); the chunk then is one MSS.

Sends are non-blocking: a blocking ASTF send waits until every byte of the
chunk is acknowledged, one idle round trip per chunk, which a bulk transfer
must not have.

From trex-console (ASTF mode; -t comes last, its tunables as on a command line, -t --help lists them)::

    start -f trex-profiles/astf_tcp_throughput.py -t --direction upload --connections 4 --window 65536
"""

from __future__ import annotations

import argparse

DIRECTIONS = ("download", "upload", "bidirectional")
#: Addresses of docs/architecture.md: the tester ports' own (the DUT keeps permanent neighbour entries for them).
CLIENT_ADDRESS = "198.18.0.2"
SERVER_ADDRESS = "198.19.0.2"
#: Bytes per send command of an unpaced sender: large enough that the loop costs nothing, far below the
#: uint32 size of one send.
BULK_CHUNK = 1 << 20
#: A flow variable is a uint64: a loop count this large outlasts any test (it is stopped by time).
ENDLESS = 1 << 62


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="astf_tcp_throughput", description=__doc__.split("\n\n")[0])
    p.add_argument("--direction", choices=DIRECTIONS, default="download",
                   help="who sends: download (server), upload (client) or bidirectional (default %(default)s)")
    p.add_argument("--connections", type=int, default=1, help="concurrent TCP connections (default %(default)s)")
    p.add_argument("--window", type=int, default=0,
                   help="bytes of send and receive buffer per connection on both ends (TCP window); "
                        "0: TRex's default (default %(default)s)")
    p.add_argument("--mss", type=int, default=0, help="TCP maximum segment size; 0: TRex's default")
    p.add_argument("--dscp", type=int, default=-1,
                   help="DSCP 0..63 on the client's segments (as iperf3 marks only its own); -1: unmarked")
    p.add_argument("--bitrate", type=float, default=0.0,
                   help="bit/s per connection and sending direction; 0: as fast as TCP (default %(default)s)")
    p.add_argument("--bytes", type=int, default=0,
                   help="bytes each connection sends per direction; 0: until stopped (default %(default)s)")
    p.add_argument("--client-address", default=CLIENT_ADDRESS, help="clients' IPv4 address (tester port 0)")
    p.add_argument("--server-address", default=SERVER_ADDRESS, help="server's IPv4 address (tester port 1)")
    p.add_argument("--port", type=int, default=5201, help="server's TCP port (one per concurrent test)")
    return p


def check(args: argparse.Namespace) -> None:
    """One line naming the bad tunable, as argparse's own errors do."""
    rules = [("connections", args.connections >= 1, ">= 1"), ("window", args.window >= 0, ">= 0"),
             ("mss", args.mss == 0 or 88 <= args.mss <= 9000, "0 or 88..9000"),
             ("dscp", -1 <= args.dscp <= 63, "-1..63"), ("bitrate", args.bitrate >= 0, ">= 0"),
             ("bytes", args.bytes >= 0, ">= 0"), ("port", 1 <= args.port <= 65535, "1..65535")]
    for name, ok, allowed in rules:
        if not ok:
            raise ValueError(f"--{name}={getattr(args, name)}: allowed {allowed}")


def pacing(args: argparse.Namespace, mss: int) -> tuple[int, float]:
    """(bytes per send, microseconds to wait after it) of one sender: bulk, or one MSS per bitrate share."""
    if not args.bitrate:
        return BULK_CHUNK, 0.0
    return mss, mss * 8 / args.bitrate * 1e6


def loops(args: argparse.Namespace, chunk: int) -> int:
    return -(-args.bytes // chunk) if args.bytes else ENDLESS


class TcpThroughput:
    def sender(self, program, args, mss: int) -> int:
        """Append the sending loop to an ASTF program; the bytes it sends at most."""
        chunk, wait_us = pacing(args, mss)
        count = loops(args, chunk)
        program.set_send_blocking(False)
        program.set_var("chunks", count)
        program.set_label("send:")
        program.send(b"t", size=chunk, fill=b"t")
        if wait_us:
            program.delay(int(round(wait_us)))
        program.jmp_nz("chunks", "send:")
        return min(chunk * count, ENDLESS)

    def get_profile(self, tunables, **kwargs):
        # Imported here so that trexlab can read the tunables without a TRex client installed.
        from trex.astf.api import (
            ASTFAssociationRule,
            ASTFGlobalInfo,
            ASTFIPGen,
            ASTFIPGenDist,
            ASTFIPGenGlobal,
            ASTFProfile,
            ASTFProgram,
            ASTFTCPClientTemplate,
            ASTFTCPServerTemplate,
            ASTFTemplate,
        )

        args = parser().parse_args(list(tunables))
        check(args)
        # TRex's default MSS when none is given: pacing needs a segment size to send one per wait.
        mss = args.mss or 1460
        client, server = ASTFProgram(), ASTFProgram()
        senders = {"download": (server,), "upload": (client,), "bidirectional": (client, server)}[args.direction]
        total = ENDLESS
        for program in senders:
            total = self.sender(program, args, mss)
        # A receiver only waits for the whole transfer: TRex acknowledges and counts what arrives meanwhile, also
        # on a side that is still sending (bidirectional, its sends being non-blocking).
        for program in (client, server):
            program.recv(total)

        infos = []
        for _ in ("client", "server"):
            info = ASTFGlobalInfo()
            if args.window:
                info.tcp.rxbufsize = args.window
                info.tcp.txbufsize = args.window
            if args.mss:
                info.tcp.mss = args.mss
            infos.append(info)
        if args.dscp >= 0:
            infos[0].ip.tos = args.dscp << 2  # DSCP is the upper six bits of the ToS byte

        addresses = ASTFIPGen(
            glob=ASTFIPGenGlobal(ip_offset="0.0.0.0"),
            dist_client=ASTFIPGenDist(ip_range=[args.client_address, args.client_address], distribution="seq"),
            dist_server=ASTFIPGenDist(ip_range=[args.server_address, args.server_address], distribution="seq"))
        # The connections open at 1000/s at least (100 of them within 0.1 s), and no more than that many (limit).
        template = ASTFTemplate(
            client_template=ASTFTCPClientTemplate(program=client, ip_gen=addresses, port=args.port,
                                                  cps=max(1000.0, float(args.connections)), limit=args.connections),
            server_template=ASTFTCPServerTemplate(program=server, assoc=ASTFAssociationRule(port=args.port)))
        return ASTFProfile(default_ip_gen=addresses, default_c_glob_info=infos[0], default_s_glob_info=infos[1],
                           templates=template)


def register():
    return TcpThroughput()
