"""Progress of long runs on stderr: one updating line on a terminal, plain lines elsewhere."""

from __future__ import annotations

import sys
import time

from trexlab.results.stats import WHOLE


def trial_text(phase: str, info: dict) -> str:
    """One trial (or TCP test, download) as progress shows it: the search phase, its number, load and outcome."""
    text = f"{phase}: trial {info.get('trial', '?')}"
    if "test" in info:  # a TCP test or download (RFC 6349, HTTP): named, with what each direction carried
        text += f" {info['test']}" + "".join(f", {name} {bps / 1e6:,.1f} Mbit/s"
                                             for name, bps in (info.get("throughput_bps") or {}).items())
    else:
        text += f" at {info.get('offered_load', 0):{WHOLE}} fps"
    if "loss_ratio" in info:
        text += f", loss ratio {info['loss_ratio']:.3e}"
        if info.get("stretched"):
            text += " (stretched: tester could not keep up)"
        if info.get("host_steal"):
            text += f" (the hypervisor took {info['host_steal'] * 1000:.0f} ms of the tester's CPU)"
        if info.get("host_drops"):
            text += f" (host receive backlog dropped {info['host_drops']:,} frames)"
    return text


class ProgressDisplay:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.repetition = ""

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "repetition":
            self.repetition = f"rep {info['repetition']}/{info['repetitions']}"
            if info.get("skipped"):
                self._line(f"{self.repetition}: finished earlier, kept", final=True)
            return
        if phase == "resume":  # trexlab.plan.resume: the repetition's logged trials go back into its search
            self._line(f"{self.repetition}: resumed, {info['replayed']} logged trial(s) replayed, not run again",
                       final=True)
            return
        text = f"[{time.monotonic() - self.start:7.1f}s] {self.repetition} {trial_text(phase, info)}"
        if self.tty:
            self._line(text, final=False)
        elif info.get("done"):
            self._line(text, final=True)

    def _line(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
