"""swtester figures (issue 4): send rate per core and pacing beside Debian's trafgen; latency through a DUT.

    .venv/bin/python benchmarks/swtester_figures.py [--repeat 3] [--seconds 3] [--only send-rate,pacing,latency]
        [--baseline PATH]  (another swtester build, e.g. main's, measured beside this one in every round)

It brings up its own local labs with scripts/lab.sh (LAB_NAME bsl: loopback, tester port 0 wired to port 1;
LAB_NAME bsw: one idle DUT namespace), takes them down at the end, prints every figure as it is measured and
writes them all to benchmarks/results/swtester-<time>.json (rewritten after each measurement, so an interrupted
run keeps what it measured). Frames on the wire are those the tester's nftables netdev-ingress counter on the
receiving port counted: it matches test frames only. Both tools send IPv4/UDP test frames of the same size out
of the same port. A benchmark, not a test: it never fails on a figure; without root or terraform it says so
and stops, without trafgen it measures swtester alone.

Send rate per core (64 and 1518 B): each tool sends as fast as it can from one sender pinned to CPU 0.
  swtester           sender on CPU 0, its receiver on CPU 1, send and receive method auto (the ones it took are
                     printed: tx_ring and tcx where the kernel allows);
  swtester-sendmmsg  the same with --send-method sendmmsg (swtester before its transmit ring), side by side;
  swtester-bpf       the same with --receive-method bpf (the counting program as its receive socket's filter, as a
                     trial that times frames or a kernel without tcx counts), side by side;
  swtester-ring      the same with --receive-method ring (swtester before its counting filter: every frame into
                     its receive ring), side by side;
  swtester-baseline  the --baseline build, the same way, in the same rounds (before and after a change, side by side),
                     and with each receive method (swtester-bpf-baseline, swtester-ring-baseline);
  swtester-Nthreads  N sender threads (--threads N, thread j on CPU j: CPU 1 also runs the receiver), for each
                     N up to the CPU count: the scaling; per CPU-s counts every sender thread and each CPU's
                     ksoftirqd;
  trafgen            nothing receives but the counter;
  trafgen+receiver   netsniff-ng captures the receiving port into a TPACKET_V3 ring like swtester's, on CPU 1.
On a looped-back veth the kernel delivers each frame to the receiving port inside the sender's system call,
so the receive work (counter, swtester's counting filter or receive ring) runs on the sending core: compare
swtester with trafgen+receiver for the same work, with trafgen for a sender that feeds nobody. The "rx on CPU 1"
rows (swtester, trafgen) repeat the runs with RPS steering the receiving port's frames to CPU 1, as a NIC's
receive queue would take them off the sending core: what sending alone costs each tool (the receive work is then
counted for neither).
Rate = frames on the wire / the tool's own sending time; per CPU-s = frames / the sender's CPU time (swtester's
sender thread, trafgen's processes), which includes the receive work done in its context and is less disturbed
by other jobs on a shared CPU. trafgen's CPU time is its whole process's, start-up and ring set-up included (a few
ms, against trafgen), swtester's its sender thread's from the trial's start; trafgen runs in the normal scheduling
class, swtester's sender in the realtime one, as each does by itself.

Pacing (64 B, forward): swtester (auto, and sendmmsg; and the --baseline build) at 100k, 500k and 1M fps;
trafgen -b at the same rate for the same frame count. achieved = frames on the wire / the tool's sending time,
error = achieved / offered - 1 (target: |error| <= 0.01 %); worst 100 ms = the largest deviation from the offered
count of the frames that reached the receiving port in any 100 ms window (starting at, or just after, a frame) of
the sending period: bursts and stalls that the total hides. It comes from the receive timestamps of every frame,
which netsniff-ng captures on CPU 1 (kernel timestamps, taken as the veth hands the frame over inside the sender's
system call: the time it left the tool), the same instrument for every tool; "-" when the capture missed frames.
stolen = the time the hypervisor took from the sender's CPU during the run (/proc/stat steal, 10 ms ticks): a
stall of the virtual CPU that no tester on it can avoid (swtester's slips are its stalls beyond 512 frames).
platform floor = what a sender that loses no time of its own would score on the sender's CPU, measured in each
round just before the tools (swtester/stall_probe: a thread that only sleeps to a deadline every pacing quantum,
realtime class, as swtester's sender, under the same capture): worst 100 ms = its longest wake-up delay over
100 ms (the window that ends in that stall misses the frames due during it), error = minus the time its stalls
beyond the catch-up limit (512 frames at the offered rate) would slip a schedule, over the run; slips and slip ms
likewise. The platform's stalls are not the same ones as during the tools' runs: compare orders of magnitude.
platform floor (never sleeps) = the same from stall_probe --spin, run right after it: a realtime thread on the
sender's CPU that never sleeps (it reads CLOCK_MONOTONIC back to back), so no slow wake-up of a halted virtual CPU
is in it; its stalls are its gaps between two readings less the time it waited runnable in them (schedstat
run_delay: the realtime throttle or fair server, which stop a thread that keeps its CPU busy for up to 50 ms of
each second while a normal task waits there, and other jobs' threads; a sender that sleeps now and then meets
neither), what remains being the hypervisor's stops (the steal clock) and interrupt work in the guest: stalls that
no sender on this CPU avoids, sleeping or not. A lower bound (a wait just before a gap is subtracted from it too,
and the thread sees nothing while it waits). The 0.1 % window needs no such stall over 100 us in the run.
Not all of them show as steal: a stall in the guest's interrupt handling is charged to the task it interrupted.

Latency (64 B, bidirectional): the software generator as trials use it (all its threads on the lab's tester
CPU, the DUT forwarding on its own) at 1k, 10k and 100k fps, every frame timestamped: median and 99.9th
percentile of the one-way delay per direction, from kernel receive timestamps; first with the ports looped
back (the tester's own floor: the frame is received inside the sender's system call), then through the idle
DUT namespace (which forwards on its own CPU, reached by RPS: the hop to another CPU is part of the delay).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trexlab.generators import create_generator
from trexlab.generators.software import PROC_STAT, cpu_steal, steal_between
from trexlab.results.store import write_json_atomic
from trexlab.testbed.inventory import load_lab
from trexlab.trial import TrialSpec

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
LOOPBACK_LAB, DUT_LAB = "bsl", "bsw"
SIZES = (64, 1518)
PACING_RATES = (100_000, 500_000, 1_000_000)
LATENCY_RATES = (1_000, 10_000, 100_000)
UNREACHABLE_RATE = 20e6  # fps: more than any AF_PACKET sender, so swtester sends as fast as it can
SENDER_CPU, RECEIVER_CPU = 0, 1
STALL_PROBE = REPO / "swtester" / "stall_probe"
COUNTER = "port1_ipv4"  # the tester's counter of IPv4 test frames arriving on port 1

WINDOW = 0.1  # s: the pacing window
PCAP_NS_MAGIC = 0xA1B23C4D  # pcap with nanosecond timestamps (netsniff-ng -T)


def say(line: str) -> None:
    print(line, flush=True)


def softirq_cpu_seconds(cpu: int) -> float:
    """CPU time of ksoftirqd/<cpu>: receive work the kernel deferred from the sender's context to its thread."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if stat.with_name("comm").read_text().strip() == f"ksoftirqd/{cpu}":
                fields = stat.read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


@contextlib.contextmanager
def local_lab(name: str, topology: str):
    """A local lab up and configured (make lab-up, make configure), taken down whatever happens."""
    env = {**os.environ, "LAB": "local", "LAB_NAME": name, "TOPOLOGY": topology, "NETWORKS": "1"}
    try:
        for action in ("up", "configure"):
            subprocess.run(["scripts/lab.sh", action], cwd=REPO, env=env, check=True, capture_output=True,
                           text=True, timeout=600)
        yield load_lab(REPO / "inventory" / "generated" / name / "hosts.yml")
    finally:
        subprocess.run(["scripts/lab.sh", "down"], cwd=REPO, env=env, capture_output=True, timeout=600)


class Bench:
    """The tools on one loopback lab: swtester through the software generator's command line, trafgen."""

    def __init__(self, lab):
        self.generator = create_generator("software", lab=lab, cross_check=False)
        self.tester = lab.tester
        self.ports = self.tester.port(0), self.tester.port(1)

    def counted(self) -> int:
        return self.generator.counters()[COUNTER]

    def swtester(self, spec: TrialSpec, method: str = "auto", threads: int = 1, receive: str = "auto",
                 binary: str | None = None) -> dict:
        """One swtester run (binary: another build than this checkout's), sender alone on CPU 0 (threads > 1:
        thread j on CPU j): its forward report plus the frames counted on the wire."""
        listed = [SENDER_CPU, RECEIVER_CPU, *range(2, threads)]  # thread j on listed[j], the receiver on listed[1]
        argv = self.generator.argv(spec) + ["--cpus", ",".join(map(str, listed)), "--send-method", method,
                                            "--threads", str(threads), "--receive-method", receive]
        if binary:
            argv[0] = binary
        cpus = listed[:threads]
        before, softirq = self.counted(), sum(softirq_cpu_seconds(cpu) for cpu in cpus)
        out = subprocess.run(self.tester.command(argv), capture_output=True, text=True, check=True,
                             timeout=spec.duration * 2 + 30).stdout
        softirq = sum(softirq_cpu_seconds(cpu) for cpu in cpus) - softirq
        forward = json.loads(out)["directions"]["forward"]
        return {"on_wire": self.counted() - before, "sent": forward["sent"], "intended": forward["intended"],
                "seconds": forward["send_duration"], "cpu_seconds": forward["send_cpu"] + softirq,
                "ksoftirqd_seconds": softirq, "send_method": forward["send_method"],
                "receive_method": forward["receive_method"], "slips": forward.get("slips"),
                "slip_ns": forward.get("slip_ns"), "max_lag_ns": forward.get("max_lag_ns"),
                "start_lag_ns": forward.get("start_lag_ns"), "max_burst": forward.get("max_burst")}

    def trafgen_config(self, size: int) -> str:
        """The same IPv4/UDP test frame as swtester's (FCS excluded), in trafgen's packet syntax."""
        p0, p1 = self.ports
        fill = size - 4 - 14 - 20 - 8
        config = (f"{{ eth(da={p0.peer_mac}, sa={p0.mac}), ipv4(sa={p0.ipv4_address}, da={p1.ipv4_address}), "
                  f"udp(sp=1024, dp=1024), fill(0x00, {fill}) }}\n")
        path = Path(tempfile.mkstemp(prefix="bsl-trafgen-", suffix=".cfg")[1])
        path.write_text(config)
        return str(path)

    def trafgen(self, size: int, seconds: float | None = None, rate: float | None = None,
                count: int | None = None, receiver: bool = False) -> dict:
        """trafgen pinned to CPU 0 (one sender), for a time or a frame count, optionally at a rate."""
        config = self.trafgen_config(size)
        argv = ["taskset", "-c", str(SENDER_CPU), "trafgen", "--dev", self.ports[0].name, "--conf", config,
                "--cpus", "1", "--no-sock-mem", "--notouch-irq"]
        if rate:
            argv += ["--rate", f"{rate:.0f}pps"]
        if count:
            argv += ["--num", str(count)]
        if seconds:
            argv = ["timeout", "-s", "INT", str(seconds), *argv]
        try:
            with self.netsniff() if receiver else contextlib.nullcontext():
                before, cpu = self.counted(), resource.getrusage(resource.RUSAGE_CHILDREN)
                softirq = softirq_cpu_seconds(SENDER_CPU)
                out = subprocess.run(self.tester.command(argv), capture_output=True, text=True,
                                     timeout=(seconds or count / rate) * 2 + 30)
                after_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
                softirq = softirq_cpu_seconds(SENDER_CPU) - softirq
                on_wire = self.counted() - before
        finally:
            Path(config).unlink()
        match = re.search(r"(\d+) sec, (\d+) usec on CPU\d+ \((\d+) packets\)", out.stdout + out.stderr)
        if not match:
            raise RuntimeError(f"trafgen printed no statistics: {(out.stdout + out.stderr).strip()[-300:]}")
        cpu_seconds = (after_cpu.ru_utime + after_cpu.ru_stime) - (cpu.ru_utime + cpu.ru_stime) + softirq
        return {"on_wire": on_wire, "sent": int(match[3]), "seconds": int(match[1]) + int(match[2]) / 1e6,
                "cpu_seconds": cpu_seconds, "ksoftirqd_seconds": softirq}

    @contextlib.contextmanager
    def receive_on(self, cpu: int):
        """RPS steers the receiving port's frames to cpu for the block (its rps_cpus mask, restored after)."""
        path = f"/sys/class/net/{self.ports[1].name}/queues/rx-0/rps_cpus"
        read = subprocess.run(self.tester.command(["cat", path]), capture_output=True, text=True, check=True)
        subprocess.run(self.tester.command(["sh", "-c", f"echo {1 << cpu:x} > {path}"]), check=True)
        try:
            yield
        finally:
            subprocess.run(self.tester.command(["sh", "-c", f"echo {read.stdout.strip()} > {path}"]), check=True)

    @contextlib.contextmanager
    def netsniff(self, *options: str):
        """netsniff-ng receives port 1 into its TPACKET_V3 ring on CPU 1 for the block (options: a pcap to write)."""
        capture = subprocess.Popen(self.tester.command(
            ["netsniff-ng", "--in", self.ports[1].name, "--silent", "--no-promisc", "--no-sock-mem", "--notouch-irq",
             "--no-hwtimestamp", "--bind-cpu", str(RECEIVER_CPU), *options]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            yield
        finally:
            capture.send_signal(signal.SIGINT)
            try:
                capture.wait(timeout=30)
            except subprocess.TimeoutExpired:
                capture.kill()
                capture.wait()

    def captured(self, run, frame_size: int):
        """(result of run(), receive times in s of the frames of frame_size bytes that reached port 1 meanwhile,
        the steal of the sender's CPU in s): netsniff-ng captures the port on CPU 1 into a pcap."""
        fd, pcap = tempfile.mkstemp(prefix="bsl-pacing-", suffix=".pcap")
        os.close(fd)
        try:
            with self.netsniff("--out", pcap, "--ring-size", "256MiB", "--magic", hex(PCAP_NS_MAGIC)):
                steal = cpu_steal(PROC_STAT)
                result = run()
                steal = steal_between(steal, cpu_steal(PROC_STAT), (SENDER_CPU,))
                time.sleep(0.3)  # the last frames into the pcap
            return result, receive_times(Path(pcap), frame_size - 4), steal
        finally:
            Path(pcap).unlink()


def receive_times(pcap: Path, length: int) -> np.ndarray:
    """The timestamps (s) of the records of `length` bytes (the test frames) in a nanosecond pcap."""
    data = pcap.read_bytes()
    if len(data) < 24 or int.from_bytes(data[:4], "little") != PCAP_NS_MAGIC:
        raise RuntimeError(f"{pcap}: not a little-endian nanosecond pcap (netsniff-ng --magic)")
    header, times, offset = struct.Struct("<IIII"), [], 24
    while offset + header.size <= len(data):
        sec, nsec, incl, orig = header.unpack_from(data, offset)
        if orig == length:
            times.append(sec + nsec * 1e-9)
        offset += header.size + incl
    return np.array(times)


def worst_window(times: np.ndarray, offered: float, window: float = WINDOW) -> float | None:
    """Largest relative deviation from offered * window of the frames received in any window of the sending
    period (from its first to its last frame): windows starting at a frame (the most frames) or just after one
    (the fewest), from the frames' receive times (s, ascending)."""
    times = np.sort(times)
    if len(times) < 2 or times[-1] - times[0] < window:
        return None
    starts = times[times <= times[-1] - window]
    most = np.searchsorted(times, starts + window, side="left") - np.searchsorted(times, starts, side="left")
    fewest = np.searchsorted(times, starts + window, side="right") - np.searchsorted(times, starts, side="right")
    expected = offered * window
    return float(max(abs(most.max() / expected - 1), abs(fewest.min() / expected - 1)))


def wire_rate(run: dict) -> float:
    return run["on_wire"] / run["seconds"]


def per_cpu(run: dict) -> float | None:
    return run["on_wire"] / run["cpu_seconds"] if run["cpu_seconds"] else None


def send_rate(bench: Bench, figures: dict, args, save) -> None:
    say(f"\nsend rate per core: one sender on CPU {SENDER_CPU}, {args.seconds:g} s per run, {args.repeat} round(s)")
    say(f"{'size':>5} {'round':>5} {'tool':20} {'on wire':>11} {'Mfps':>7} {'Mfps/CPU-s':>11}")
    rows = figures.setdefault("send_rate", [])
    for size in SIZES:
        spec = TrialSpec(offered_load=UNREACHABLE_RATE, duration=args.seconds, directions="forward",
                         frame_size=(size, size), receive_tail=0.2)
        for k in range(1, args.repeat + 1):
            runs = {"swtester": bench.swtester(spec), "swtester-sendmmsg": bench.swtester(spec, "sendmmsg"),
                    "swtester-bpf": bench.swtester(spec, receive="bpf"),
                    "swtester-ring": bench.swtester(spec, receive="ring")}
            if args.baseline:
                runs["swtester-baseline"] = bench.swtester(spec, binary=args.baseline)
                runs["swtester-bpf-baseline"] = bench.swtester(spec, receive="bpf", binary=args.baseline)
                runs["swtester-ring-baseline"] = bench.swtester(spec, receive="ring", binary=args.baseline)
            for threads in range(2, min(os.cpu_count() or 1, 8) + 1):
                runs[f"swtester-{threads}threads"] = bench.swtester(spec, threads=threads)
            if args.trafgen:
                runs["trafgen"] = bench.trafgen(size, seconds=args.seconds)
                runs["trafgen+receiver"] = bench.trafgen(size, seconds=args.seconds, receiver=True)
            with bench.receive_on(RECEIVER_CPU):
                runs["swtester rx on CPU 1"] = bench.swtester(spec)
                if args.trafgen:
                    try:  # trafgen gives up when its ring flush meets a full socket buffer (EAGAIN), as here
                        runs["trafgen rx on CPU 1"] = bench.trafgen(size, seconds=args.seconds)
                    except RuntimeError as exc:
                        say(f"{size:>5} {k:>5} trafgen rx on CPU 1: {str(exc).splitlines()[-1]}")
            for tool, run in runs.items():
                row = {"size": size, "round": k, "tool": tool, **run, "fps": wire_rate(run),
                       "fps_per_cpu": per_cpu(run), "loadavg": os.getloadavg()[0]}
                rows.append(row)
                say(f"{size:>5} {k:>5} {tool:20} {run['on_wire']:>11} {row['fps'] / 1e6:>7.3f} "
                    f"{(row['fps_per_cpu'] or 0) / 1e6:>11.3f}  {run.get('send_method', '')} "
                    f"{run.get('receive_method', '')}")
            save()
    say("\nmedians over the rounds, and swtester / the other tool:")
    for size in SIZES:
        for figure, label in (("fps", "Mfps"), ("fps_per_cpu", "Mfps/CPU-s")):
            median = {tool: statistics.median(r[figure] for r in rows if r["size"] == size and r["tool"] == tool)
                      for tool in {r["tool"] for r in rows}}
            pairs = [(s, t) for s in ("swtester", "swtester-baseline") for t in median
                     if t.startswith("trafgen") and "CPU 1" not in t]
            pairs += [("swtester", "swtester-baseline"), ("swtester-bpf", "swtester-bpf-baseline"),
                      ("swtester-ring", "swtester-ring-baseline")]
            pairs += [("swtester rx on CPU 1", "trafgen rx on CPU 1"), ("swtester", "swtester-sendmmsg"),
                      ("swtester", "swtester-bpf"), ("swtester", "swtester-ring")]
            pairs += [(t, "swtester") for t in sorted(median) if t.endswith("threads")]
            ratios = "  ".join(f"{a}/{b} {median[a] / median[b]:.2f}" for a, b in pairs if a in median and b in median)
            say(f"{size:>5} B {label:11} " + "  ".join(f"{t} {m / 1e6:.3f}" for t, m in sorted(median.items())))
            say(f"{'':>7} {'':11} {ratios}")


# The pacing table's columns, for the header and every row alike.
PACING_COLUMNS = "{:>9} {:>5} {:29} {:>9} {:>9} {:>12} {:>9} {:>15} {:>9} {:>5} {:>8} {:>5}"


def pacing_row(offered: float, k: int, tool: str, frames: int | None, on_wire: int | None, row: dict,
               load: float) -> str:
    """One printed row of the pacing table; a figure a tool or the platform floor does not have prints '-'."""
    def fmt(value, spec: str, scale: float = 1) -> str:
        return "-" if value is None else format(value * scale, spec)
    return PACING_COLUMNS.format(
        offered, k, tool, fmt(frames, "d"), fmt(on_wire, "d"), fmt(row.get("achieved"), ".1f"),
        fmt(row.get("error_percent"), "+.4f"), fmt(row.get("worst_window_percent"), ".3f"),
        fmt(row.get("stolen_seconds"), ".0f", 1e3), fmt(row.get("slips"), "d"), fmt(row.get("slip_ns"), ".2f", 1e-6),
        f"{load:.2f}")


def pacing(bench: Bench, figures: dict, args, save) -> None:
    seconds = max(args.seconds, 3.0)
    say(f"\npacing accuracy: 64 B forward, {seconds:g} s per run, {args.repeat} round(s)")
    say(PACING_COLUMNS.format("offered", "round", "tool", "frames", "on wire", "achieved", "error %", "worst 100 ms %",
                              "stolen ms", "slips", "slip ms", "load"))
    rows = figures.setdefault("pacing", [])
    for offered in PACING_RATES:
        count = int(offered * seconds)
        for k in range(1, args.repeat + 1):
            spec = TrialSpec(offered_load=offered, duration=seconds, directions="forward", receive_tail=0.2)
            tools = {"swtester": lambda spec=spec: bench.swtester(spec),
                     "swtester-sendmmsg": lambda spec=spec: bench.swtester(spec, "sendmmsg")}
            if args.baseline:
                tools["swtester-baseline"] = lambda spec=spec: bench.swtester(spec, binary=args.baseline)
            if args.trafgen:
                tools["trafgen"] = lambda offered=offered, count=count: bench.trafgen(64, rate=offered, count=count)
            for spin in (False, True):
                floor_row(bench, offered, k, seconds, args, rows, spin)
                save()
            for tool, measure in tools.items():
                load = os.getloadavg()[0]
                if args.trafgen:
                    run, times, stolen = bench.captured(measure, 64)
                else:
                    run, times, stolen = measure(), np.array([]), None
                # A capture that missed frames would count a window short: no figure then.
                complete = len(times) == run["on_wire"]
                worst = worst_window(times, offered) if complete else None
                row = {"offered": offered, "round": k, "tool": tool, **run, "achieved": wire_rate(run),
                       "error_percent": (wire_rate(run) / offered - 1) * 100, "captured": len(times),
                       "worst_window_percent": worst * 100 if worst is not None else None,
                       "stolen_seconds": stolen, "loadavg": load}
                rows.append(row)
                say(pacing_row(offered, k, tool, count, run["on_wire"], row, load))
                save()


#: The pacing table's names of the platform floor rows, by stall_probe mode.
FLOOR_ROWS = {False: "platform floor", True: "platform floor (never sleeps)"}


def probe_stalls(probe: dict) -> list[int]:
    """The stalls (ns) of a stall_probe report: a sleeping probe's late wake-ups; a spinning probe's gaps less the
    time it waited runnable in them (the guest's scheduling: the realtime throttle, other threads), which a sender
    that does not keep its CPU busy does not meet."""
    if probe.get("mode") == "spin":
        return [late[1] - late[2] for late in probe["late"]]
    return [late[1] for late in probe["late"]]


def platform_floor(probe: dict, offered: float, window: float = WINDOW) -> dict:
    """The pacing figures of a sender that loses no time of its own, from stall_probe's stalls on its CPU
    (probe_stalls): the worst window misses the frames due in the longest stall (at most the whole window); each
    stall longer than the catch-up limit's frames at the offered rate slips the schedule by its excess, which the
    run's achieved rate loses."""
    longest = probe["longest_unwaited_ns"] if probe.get("mode") == "spin" else probe["longest_ns"]
    worst = {"worst_window_percent": min(longest / 1e9, window) / window * 100}
    if len(probe["late"]) < probe["late_total"]:
        # The probe lists its first late wake-ups only; from part of them the slips would be understated: no figure.
        return {**worst, "error_percent": None, "slips": None, "slip_ns": None}
    kept = (probe["catch_up_limit"] - 1) / offered * 1e9
    excess = [stall - kept for stall in probe_stalls(probe) if stall > kept]
    return {**worst, "error_percent": -sum(excess) / 1e9 / probe["seconds"] * 100, "slips": len(excess),
            "slip_ns": int(sum(excess))}


def floor_row(bench: Bench, offered: float, k: int, seconds: float, args, rows: list, spin: bool = False) -> None:
    """One run of stall_probe on the sender's CPU (under the same capture as the tools, where they have one):
    a platform floor row of this round, of the sleeping probe or (spin) of the one that never sleeps."""
    def probe() -> dict:
        out = subprocess.run([str(STALL_PROBE), *(["--spin"] if spin else []), f"{seconds:g}", str(SENDER_CPU)],
                             capture_output=True, text=True, check=True, timeout=seconds + 30).stdout
        return json.loads(out)
    load = os.getloadavg()[0]
    if args.trafgen:
        result, _, stolen = bench.captured(probe, 64)
    else:
        result, stolen = probe(), None
    floor = platform_floor(result, offered)
    rows.append({"offered": offered, "round": k, "tool": FLOOR_ROWS[spin], **floor, "stall_probe": result,
                 "stolen_seconds": stolen, "loadavg": load})
    say(pacing_row(offered, k, FLOOR_ROWS[spin], None, None, {**floor, "stolen_seconds": stolen}, load))


def latency(lab, figures: dict, args, save) -> None:
    seconds = max(args.seconds, 3.0)
    generator = create_generator("software", lab=lab)
    path = f"through idle DUT namespace {lab.duts[0].netns}" if lab.duts else "of the tester alone, ports looped back"
    say(f"\nlatency {path}: 64 B bidirectional, {seconds:g} s, every frame")
    say(f"{'rate':>7} {'round':>5} {'direction':9} {'samples':>8} {'lost':>6} {'median us':>10} {'p99.9 us':>9}")
    rows = figures.setdefault("latency", [])
    for offered in LATENCY_RATES:
        for k in range(1, args.repeat + 1):
            result = generator.run_trial(TrialSpec(offered_load=offered, duration=seconds, latency_mode="all",
                                                   receive_tail=0.5))
            for direction, d in result.directions.items():
                row = {"path": lab.topology, "rate": offered, "round": k, "direction": direction,
                       "samples": d.latency.size,
                       "lost": d.frames_lost, "median_s": d.latency.percentile(50),
                       "p99_9_s": d.latency.percentile(99.9), "stretched": result.stretched,
                       "loadavg": os.getloadavg()[0]}
                rows.append(row)
                say(f"{offered:>7} {k:>5} {direction:9} {row['samples']:>8} {row['lost']:>6} "
                    f"{row['median_s'] * 1e6:>10.1f} {row['p99_9_s'] * 1e6:>9.1f}")
            save()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds of each measurement (default 3)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per run (default 3)")
    parser.add_argument("--only", default="send-rate,pacing,latency", help="comma-separated parts to run")
    parser.add_argument("--baseline", help="another swtester build (e.g. main's), measured beside this one in the "
                                           "send-rate and pacing rounds as swtester-baseline")
    args = parser.parse_args()
    if args.baseline and not os.access(args.baseline, os.X_OK):
        parser.error(f"--baseline {args.baseline}: not an executable file")
    parts = set(args.only.split(","))
    if unknown := parts - {"send-rate", "pacing", "latency"}:
        parser.error(f"--only {sorted(unknown)[0]}: allowed send-rate, pacing, latency")
    if os.geteuid() != 0 or not shutil.which("terraform"):
        say("swtester figures: skipped: needs root (network namespaces) and terraform on PATH")
        return 0
    args.trafgen = bool(shutil.which("trafgen") and shutil.which("netsniff-ng"))
    if not args.trafgen:
        say("swtester figures: trafgen/netsniff-ng not found (make setup installs netsniff-ng): swtester alone")
    subprocess.run(["make", "-s", "-C", "swtester", "swtester", "stall_probe"], cwd=REPO, check=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"swtester-{time.strftime('%Y%m%d-%H%M%S')}.json"
    figures = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": platform.node(),
               "kernel": platform.release(), "cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg(),
               "args": {"repeat": args.repeat, "seconds": args.seconds, "parts": sorted(parts),
                        "baseline": args.baseline},
               "note": "CPU shared with other jobs: figures vary from round to round; compare within a round"}

    def save() -> None:
        write_json_atomic(path, figures)

    say(f"swtester figures -> {path.relative_to(REPO)} (load average {os.getloadavg()[0]:.2f} at start; "
        "other jobs on this machine disturb the figures)")
    with local_lab(LOOPBACK_LAB, "loopback") as lab:
        bench = Bench(lab)
        if "send-rate" in parts:
            send_rate(bench, figures, args, save)
        if "pacing" in parts:
            pacing(bench, figures, args, save)
        if "latency" in parts:
            latency(lab, figures, args, save)  # the tester's own floor, for the DUT figures below
    if "latency" in parts:
        with local_lab(DUT_LAB, "single") as lab:
            latency(lab, figures, args, save)
    figures["loadavg_at_end"] = os.getloadavg()
    save()
    say(f"\nfigures written to {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
