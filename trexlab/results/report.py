"""Campaign reports: an analysis notebook executed headless and exported to one HTML file.

The notebook of an experiment is the one its spec names (``notebook:``, shared
by related experiments), else analysis/<experiment>.ipynb when it has one,
else analysis/report.ipynb. It is executed with papermill (its
``campaigns`` parameter set to the campaign directories) and exported with
nbconvert, code cells hidden, plots embedded: the HTML is self-contained.
The executed notebook is kept beside it, so a reader can open and rerun it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from trexlab.paths import paths
from trexlab.spec.schema import NAME_PATTERN, NOTEBOOK_PATTERN


class ReportError(RuntimeError):
    """The report could not be made; one line."""


def notebook_for(experiment: object, declared: str | None = None, source: str = "campaign.json") -> Path:
    """The spec's notebook (several experiments may share one), else analysis/<experiment>.ipynb, else report.

    Both names come from a campaign's campaign.json, which may have come from someone else (a shared results
    directory): they are held to the spec's own rules again, so that they name one of the tree's analysis
    notebooks and never another file to execute."""
    if declared is not None:
        if not isinstance(declared, str) or not re.match(NOTEBOOK_PATTERN, declared):
            raise ReportError(f"{source}: spec.notebook: {declared!r} does not match {NOTEBOOK_PATTERN}")
        return paths().notebooks / declared.removeprefix("analysis/")
    if not isinstance(experiment, str) or not re.match(NAME_PATTERN, experiment):
        raise ReportError(f"{source}: experiment: {experiment!r} does not match {NAME_PATTERN}")
    own = paths().notebooks / f"{experiment}.ipynb"
    return own if own.is_file() else paths().notebooks / "report.ipynb"


def latest_campaign(results: str | Path, experiment: str) -> Path:
    """The most recently written campaign of an experiment under a results root."""
    found = sorted((results_dir for results_dir in (Path(results) / experiment).glob("*/campaign.json")),
                   key=lambda p: p.stat().st_mtime)
    if not found:
        raise ReportError(f"no campaign of experiment {experiment!r} under {results}: run `make run EXP={experiment}`")
    return found[-1].parent


def _execute(notebook: Path, campaigns: list[Path], html: Path) -> Path:
    """Execute a notebook with its campaigns parameter set; export it to html (code hidden), keep it beside."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    executed = html.with_suffix(".ipynb")
    # The kernel's channels are unix sockets (transport ipc) in a directory of this user's only, made for this run.
    # Over TCP, jupyter_client finds each port by binding port 0 and closing it before the kernel binds it, so another
    # process could take it in between; ipc names the sockets in that directory, where nothing else creates files.
    # The path is absolute: ipc's default (kernel-ipc-N) is relative, the manager's cwd for its client and the
    # notebook's (the checkout) for the kernel. "auto" still gives the kernel CurveZMQ keys when its kernelspec
    # declares it supports them (ipykernel 7 does), as it needs over TCP, where the kernel would warn without them.
    with tempfile.TemporaryDirectory(prefix="trexlab-kernel-") as sockets:  # mkdtemp: mode 0700
        kernel = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets, "kernel"),
                                           "transport_encryption": "auto"}})
        try:
            papermill.execute_notebook(str(notebook), str(executed),
                                       parameters={"campaigns": [str(c) for c in campaigns]}, kernel_name="python3",
                                       cwd=str(paths().root), progress_bar=False, config=kernel)
        except papermill.PapermillExecutionError as exc:
            raise ReportError(f"{notebook.name} failed on {', '.join(map(str, campaigns))}: {exc.ename}: "
                              f"{exc.evalue}") from None
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    html.write_text(body)
    return html


#: The notebook of `trexlab compare`: each campaign after the first against the first.
COMPARE_NOTEBOOK = "compare.ipynb"


def render_compare(campaigns: list[str | Path], html: str | Path) -> Path:
    """Execute the compare notebook on several campaigns (the first is the baseline); return the HTML's path."""
    directories = [Path(c).resolve() for c in campaigns]
    for campaign in directories:
        if not (campaign / "campaign.json").is_file():
            raise ReportError(f"{campaign}: not a campaign directory (no campaign.json)")
    if len(directories) < 2:
        raise ReportError("a comparison needs two campaigns or more")
    output = Path(html).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    return _execute(paths().notebooks / COMPARE_NOTEBOOK, directories, output)


def render(campaign: str | Path, notebook: str | Path | None = None, html: str | Path | None = None) -> Path:
    """Execute the analysis notebook on one campaign; return the HTML report's path."""
    return _execute(*checked_render(campaign, notebook, html))


def checked_render(campaign: str | Path, notebook: str | Path | None = None, html: str | Path | None = None
                   ) -> tuple[Path, list[Path], Path]:
    """What render refuses before it executes anything (ReportError): a directory that is no campaign, its notebook
    unnamed by the rules, a symbolic link where the report writes; else _execute's arguments. make report asks it
    before its recipe (trexlab report --check), so that through make a refusal is one line."""
    campaign = Path(campaign).resolve()
    record = campaign / "campaign.json"
    if not record.is_file():
        raise ReportError(f"{campaign}: not a campaign directory (no campaign.json)")
    # A campaign.json trexlab did not write (received, edited, cut short) ended in a traceback here.
    try:
        manifest = json.loads(record.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{record}: unreadable ({' '.join(str(exc).split())}): not a campaign.json trexlab "
                          "writes") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("spec"), dict):
        raise ReportError(f"{record}: not a campaign's record (a mapping with its experiment and spec)")
    notebook = Path(notebook) if notebook else notebook_for(manifest.get("experiment"),
                                                            manifest["spec"].get("notebook"), str(record))
    if html is None:  # written into the campaign directory, with the executed notebook beside it
        from trexlab.results.store import first_link

        if (link := first_link(campaign)) is not None:
            raise ReportError(f"{campaign}: {link} is a symbolic link (the report writes there: remove it)")
    html = Path(html) if html else campaign / "report.html"
    return notebook, [campaign], html
