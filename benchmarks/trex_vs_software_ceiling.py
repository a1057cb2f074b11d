"""Self-test ceilings of TRex and the software tester (swtester) on the same loopback lab, side by side.

    TREXLAB_TREX_SERVER=tester .venv/bin/python benchmarks/trex_vs_software_ceiling.py \
        --inventory inventory/generated/<loopback lab>/hosts.yml [--frame-sizes 64,1518] [--seconds 10]

Runs only against a TRex server that is already running (CI cannot build TRex): TREXLAB_TREX_SERVER is
``tester`` for the server roles/trex runs on the lab's tester node (reached through an SSH tunnel), or the
server's IPv4 address. The lab must have the loopback topology (tester port 0 wired to port 1, no DUT).
For each frame size and generator it runs the self-test procedure (an RFC 2544 throughput search with zero
loss tolerance, bidirectional) and prints the loss-free ceiling, the first offered load at which the
generator could not send on time (a stretched trial), and the ratio of the two generators' ceilings. A
benchmark, not a test: it never fails on a figure. The TRex server keeps AF_PACKET sockets on the tester
ports while swtester runs, so the kernel also copies swtester's frames to it: stop the server for a
software ceiling without that cost.
"""

from __future__ import annotations

import argparse
import os
import sys

from trexlab.generators import create_generator
from trexlab.procedures import selftest
from trexlab.procedures.common import RunContext
from trexlab.testbed.inventory import load_lab
from trexlab.trial import TrialSpec


def ceiling(generator, frame_size: int, seconds: float, max_rate: float) -> tuple[float | None, float | None]:
    """(loss-free ceiling, lowest offered load whose trial was stretched) in fps per direction."""
    params = selftest.Params(frame_sizes=(frame_size,), max_rate=max_rate, min_rate=1000.0,
                             resolution=max_rate / 400, trial_duration=seconds)
    result = selftest.run(RunContext(generator, TrialSpec(offered_load=1.0, duration=1.0, receive_tail=1.0)), params)
    trials = result.searches[str(frame_size)]["search"]
    stretched = [t["offered_load"] for t in trials if t["stretched"]]
    return result.ceilings[frame_size], min(stretched, default=None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inventory", required=True, help="generated inventory of a loopback lab")
    parser.add_argument("--frame-sizes", default="64", help="comma-separated (default 64)")
    parser.add_argument("--seconds", type=float, default=10.0, help="trial duration (default 10)")
    parser.add_argument("--max-rate", type=float, default=1_000_000.0, help="search start, fps (default 1e6)")
    args = parser.parse_args()
    server = os.environ.get("TREXLAB_TREX_SERVER")
    if not server:
        print("trex_vs_software_ceiling: set TREXLAB_TREX_SERVER (tester, or the server's address)", file=sys.stderr)
        return 2
    lab = load_lab(args.inventory)
    if lab.topology != "loopback":
        print(f"trex_vs_software_ceiling: --inventory {args.inventory}: topology {lab.topology}, needs loopback",
              file=sys.stderr)
        return 2
    trex_options = {} if server == "tester" else {"server": server}
    generators = {"trex": create_generator("trex", lab=lab, **trex_options),
                  "software": create_generator("software", lab=lab)}
    print(f"{'frame B':>7} {'generator':9} {'ceiling fps':>12} {'first stretched fps':>20}", flush=True)
    try:
        for size in (int(s) for s in args.frame_sizes.split(",")):
            found = {}
            for name, generator in generators.items():
                found[name], stretched = ceiling(generator, size, args.seconds, args.max_rate)
                print(f"{size:7} {name:9} {found[name] or 0:12,.0f} "
                      f"{'-' if stretched is None else f'{stretched:,.0f}':>20}", flush=True)
            if found["trex"] and found["software"]:
                print(f"{size:7} software / trex ceiling: {found['software'] / found['trex']:.1f} x", flush=True)
    finally:
        for generator in generators.values():
            generator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
