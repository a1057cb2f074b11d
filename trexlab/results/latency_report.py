"""Latency percentile plots of a campaign, drawn from the histograms its trials stored.

Every RFC 8219 latency or PDV trial keeps each direction's HDR histogram in
trials.jsonl (trexlab.trial.Latency: delays of the frames received in time,
plus the lost or late ones as +infinity). Per direction this module merges a
point's repetitions and draws the delay at each percentile the way
HdrHistogram's plots do: the x axis is 1/(1 - q) on a log scale, so 90 %,
99 %, 99.9 %, 99.99 % are equally spaced and the tail that RFC 8219's
worst-case latency lives in gets as much room as the median. Where the
percentile reaches the lost or late tags the curve stops and a dashed line
says "> timeout (lost tags)": no delay is drawn that no frame had.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from trexlab.results.analysis import text
from trexlab.results.store import read_trials
from trexlab.trial import DIRECTIONS, Latency, format_seconds, lost_tags_text

#: The trials whose histograms are plotted (not RFC 2544's one-tag trials, nor a self-test's).
PHASES = ("RFC 8219 latency", "RFC 8219 PDV")
#: Percentile ticks: q -> where it sits on the 1/(1 - q) axis.
TICKS = (0.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)
POINTS_PER_DECADE = 40


def point_latencies(campaign: str | Path) -> dict[str, dict[str, Latency]]:
    """point label -> direction -> the histogram of that point's repetitions merged (only points with latency)."""
    campaign = Path(campaign)
    manifest = json.loads((campaign / "campaign.json").read_text())
    found: dict[str, dict[str, Latency]] = {}
    for point in manifest["points"]:
        per_direction: dict[str, list[Latency]] = {}
        for rep in sorted((campaign / point["point"]).glob("rep-*")):
            for trial in read_trials(rep):
                if (trial.get("context") or {}).get("phase") not in PHASES:
                    continue
                for direction, data in trial["directions"].items():
                    if data.get("latency"):
                        per_direction.setdefault(direction, []).append(Latency.from_dict(data["latency"]))
        if per_direction:
            label = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in point["values"].items()) or point["point"]
            found[label] = {d: merged for d, lats in per_direction.items() if (merged := Latency.merge(lats))}
    return found


def merged_table(latencies: dict[str, dict[str, Latency]]) -> str:
    """A Markdown table: per point and direction, frames measured, lost or late, median and 99.9th percentile of
    the merged repetitions ('> timeout (lost tags)' where the percentile lies among the lost ones). Pooled over the
    repetitions, so not RFC 8219's typical and worst-case latency (each repetition's own, the median over them
    reported): the header says so."""
    rows = ["| point | direction | measured | lost or late | median of the pooled delays | "
            "99.9th percentile of the pooled delays |", "|---|---|---|---|---|---|"]
    for label, per_direction in latencies.items():
        for direction, latency in per_direction.items():
            cells = [lost_tags_text(latency.timeout) if v == float("inf") else format_seconds(v)
                     for v in (latency.median(), latency.percentile(99.9))]
            # The point's label and direction are a campaign's (campaign.json, trials.jsonl): shown as text.
            rows.append(f"| {text(label)} | {text(direction)} | {latency.measured} | {latency.lost_or_late} | "
                        f"{cells[0]} | {cells[1]} |")
    return "\n".join(rows)


def curve(latency: Latency) -> tuple[list[float], list[float]]:
    """(1/(1 - q) for q up to the last received frame's rank, the delay there in seconds)."""
    import numpy as np

    measured = latency.measured
    if not latency.size:
        return [], []
    top = measured / max(1, measured - latency.size) if latency.lost_or_late else measured
    xs = np.logspace(0, np.log10(max(top, 10.0)), int(POINTS_PER_DECADE * max(1.0, np.log10(max(top, 10.0)))))
    qs = [min(100.0, 100.0 * (1 - 1 / x)) for x in xs]
    values = latency.percentiles(qs)
    kept = [(x, v) for x, v in zip(xs, values, strict=True) if v != float("inf")]
    return [x for x, _ in kept], [v for _, v in kept]


def figure_svg(direction: str, latencies: dict[str, Latency]) -> str:
    """One direction's percentile plot (every point a line) as an SVG document with id latency-percentiles-<dir>."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"svg.fonttype": "none"}):  # text stays text: a reader (and a test) can find it
        fig, ax = plt.subplots(figsize=(8, 4.5))
        fig.set_gid(f"latency-percentiles-{direction}")
        for label, latency in latencies.items():
            xs, ys = curve(latency)
            line, = ax.plot(xs, [y * 1e6 for y in ys], label=f"{label} ({latency.measured} measured, "
                                                               f"{latency.lost_or_late} lost or late)")
            if latency.lost_or_late and latency.size:
                lost_from = latency.measured / latency.lost_or_late
                ax.axvline(lost_from, color=line.get_color(), linestyle="--")
                ax.annotate(lost_tags_text(latency.timeout), (lost_from, 0.95), xycoords=("data", "axes fraction"),
                            rotation=90, ha="right", va="top", color=line.get_color(), fontsize=8)
        ax.set_xscale("log")
        # Up to the rank of the last measured frame (at least 99.9 %, RFC 8219's worst case).
        right = max([1000.0, *(lat.measured for lat in latencies.values())])
        shown = [q for q in TICKS if 1 / (1 - q / 100) <= right * 1.0001]
        ax.set_xticks([1 / (1 - q / 100) for q in shown], [f"{q:g}%" for q in shown])
        ax.minorticks_off()
        ax.set_xlim(1, right)
        ax.set_xlabel("percentile (log scale of 1/(1 - q), as HdrHistogram plots)")
        ax.set_ylabel("one-way delay (us)")
        ax.set_title(f"{direction}: delay at each percentile")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", bbox_inches="tight")
        plt.close(fig)
    return buffer.getvalue()


def show(campaign: str | Path) -> None:
    """In a notebook: a heading and one percentile plot per direction, when the campaign measured latency."""
    from IPython.display import HTML, Markdown, display

    latencies = point_latencies(campaign)
    if not latencies:
        return
    display(Markdown("## Latency percentiles per direction\n\nThe delay at each percentile of every measured frame "
                     "(tagged frames for latency, every frame for PDV), merged over each point's repetitions from "
                     "the HDR histograms stored with every trial; lost or late frames count as infinite delays, so "
                     "a curve ends where they begin (dashed line). These pool every repetition's frames: RFC 8219's "
                     "typical and worst-case latency and PDV are each repetition's own figures, reported as their "
                     "median over the repetitions (the tables above)."))
    display(Markdown(merged_table(latencies)))
    for direction in DIRECTIONS:
        per_point = {label: d[direction] for label, d in latencies.items() if direction in d}
        if per_point:
            svg = figure_svg(direction, per_point)
            # Inline SVG (not an image): the exported HTML keeps the plot's text searchable and its id findable.
            display(HTML(svg[svg.index("<svg"):]))
