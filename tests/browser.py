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
    shot = workdir / "report.png"
    # One load of the page gives both (Chromium's headless mode runs every command it is given): a browser start
    # fewer per report, 1-3 CPU-s each on the shared 2 CPUs.
    dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={workdir / 'profile'}", "--window-size=1000,2400", f"--screenshot={shot}",
                          "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    return dom, pixels_of_colour(shot, BAR_RGB)


def pixels_of_colour(image: Path, rgb: tuple[int, int, int], tolerance: int = 12) -> int:
    """How many pixels of an image lie within `tolerance` of colour `rgb` in each of red, green and blue.

    Counted with numpy: a 1000x2400 screenshot has 2.4 million pixels, a loop over them in Python cost
    seconds of CPU per screenshot."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(image).convert("RGB"), dtype=np.int16)
    return int((np.abs(pixels - np.array(rgb, dtype=np.int16)) < tolerance).all(axis=-1).sum())
