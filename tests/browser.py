"""Looking at a report as a reader does: headless Chromium, its DOM and a screenshot."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

#: The bars' colour in trexlab.results.analysis.bar_plot.
BAR_RGB = (0x4C, 0x72, 0xB0)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Chromium not found: make test installs Debian's chromium (apt-get install chromium)"
    return found


def render(html: Path, workdir: Path) -> tuple[str, int]:
    """The DOM Chromium builds from a report, and how many pixels of its screenshot have the bars' colour."""
    from PIL import Image

    browser = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={workdir / 'profile'}"]
    dom = subprocess.run([*browser, "--dump-dom", html.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    shot = workdir / "report.png"
    subprocess.run([*browser, "--window-size=1000,2400", f"--screenshot={shot}", html.as_uri()],
                   capture_output=True, timeout=120, check=True)
    pixels = Image.open(shot).convert("RGB").get_flattened_data()
    bars = sum(1 for rgb in pixels if all(abs(c - b) < 12 for c, b in zip(rgb, BAR_RGB, strict=True)))
    return dom, bars
