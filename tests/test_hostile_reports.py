"""A hostile spec (or a shared campaign directory) against the report: its text is shown as text, never as HTML,
a script or a link in the page a reader opens, and it names no notebook but the tree's own analysis notebooks.

Fast: the report's Markdown is rendered by the exporter the report uses, without a notebook kernel."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import IPython.display
import nbformat
import pytest
from nbconvert import HTMLExporter

from trexlab import cli
from trexlab.paths import paths
from trexlab.results import analysis, latency_report
from trexlab.trial import Latency

SCRIPT = "<script>alert(1)</script>"
HOSTILE = {
    "description": f"Throughput. {SCRIPT} <img src=x onerror=alert(2)> [click](javascript:alert(3)) "
                   "![pixel](http://tracker.example/p.png) <http://tracker.example/a>\n# not a heading",
    "reproduces": "<iframe src=javascript:alert(4)></iframe> `x` **y**",
}


def campaign_dir(tmp_path, **manifest) -> str:
    spec = {"name": "hostile", "generator": "sim", "procedure": {"name": "throughput", "params": {}}, **HOSTILE}
    data = {"experiment": "hostile", "campaign": "c-1", "spec": spec, "points": [], **manifest}
    (tmp_path / "campaign.json").write_text(json.dumps(data))
    return str(tmp_path)


def as_report_html(markdown: str) -> str:
    """The HTML the report makes of a display(Markdown(...)) output (trexlab.results.report._execute's exporter)."""
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": markdown, "text/plain": ""})]
    notebook.cells.append(cell)
    body, _ = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                           exclude_output_prompt=True).from_notebook_node(notebook)
    return body[body.index("<main>"):]


def test_a_specs_text_is_disclosed_as_text_never_as_markup(tmp_path):
    page = as_report_html(analysis.method_disclosure(campaign_dir(tmp_path)))
    for markup in ("<script", "<img", "<iframe", "<h1", "<strong", "<code>x"):
        assert markup not in page, (markup, page)
    links = re.findall(r'(?:href|src)="([^"]*)"', page)
    assert all(link.startswith("#") for link in links), links  # the headings' own anchors only
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert SCRIPT in shown and "[click](javascript:alert(3))" in shown and "**y**" in shown, shown


def test_a_campaign_value_with_backticks_stays_in_its_code_span(tmp_path):
    page = as_report_html(analysis.method_disclosure(campaign_dir(tmp_path, campaign=f"c`{SCRIPT}`")))
    assert "<script" not in page and f"<code>c`{html.escape(SCRIPT, quote=False)}`</code>" in page, page


@pytest.mark.parametrize("newline", ["\n", "\n\n", "\r"])
def test_a_campaign_value_with_a_line_break_stays_in_its_code_span(tmp_path, newline):
    """A line break would end the list item (a blank line the paragraph): what followed was Markdown, HTML too."""
    page = as_report_html(analysis.method_disclosure(campaign_dir(tmp_path, campaign=f"c{newline}{SCRIPT}")))
    assert "<script" not in page, page
    escaped = newline.replace("\r", "\\r").replace("\n", "\\n")
    assert f"<code>c{escaped}{html.escape(SCRIPT, quote=False)}</code>" in page, page


def test_the_shipped_description_reads_as_before():
    """Plain prose (the shipped specs' descriptions) renders as it did: the escapes are invisible."""
    text = "A DUT policed to 40,000 frames/s (roles/dut_reference: rate_fps) - 0.011 % loss; see *Lencse*."
    shown = html.unescape(re.sub(r"<[^>]+>", "", as_report_html(analysis.text(text))))
    assert text in shown


@pytest.mark.parametrize("manifest", [
    {"spec": {"notebook": "{evil}"}},  # an absolute path
    {"spec": {"notebook": "analysis/../{from_root}"}},
    {"experiment": "{rel_stem}"},  # analysis/<experiment>.ipynb
])
def test_a_campaign_names_no_notebook_outside_analysis(tmp_path, capsys, manifest):
    """render would execute the notebook it names: a shared campaign.json must not name one of its own."""
    marker = tmp_path / "executed"
    evil = tmp_path / "evil.ipynb"
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                 "display_name": "Python 3"}})
    notebook.cells.append(nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').write('x')"))
    nbformat.write(notebook, evil)
    rel = os.path.relpath(evil, paths().notebooks)
    values = json.loads(json.dumps(manifest).replace("{evil}", str(evil))
                        .replace("{from_root}", os.path.relpath(evil, paths().root))
                        .replace("{rel_stem}", rel.removesuffix(".ipynb")))
    spec = {"name": "hostile", "procedure": {"name": "throughput"}, **values.pop("spec", {})}
    directory = tmp_path / "results" / "hostile" / "c-1"
    directory.mkdir(parents=True)
    (directory / "campaign.json").write_text(json.dumps({"experiment": "hostile", "campaign": "c-1", "points": [],
                                                        **values, "spec": spec}))
    code = cli.main(["report", "hostile", "--campaign", str(directory)])
    err = capsys.readouterr().err
    assert not marker.exists(), "the campaign's own notebook was executed"
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(directory / "campaign.json") in err and ("spec.notebook" in err or "experiment" in err), err
    assert not (directory / "report.html").exists()


# -- a campaign directory received from someone else, holding symbolic links -----------------------------------

SIM_SPEC = {"name": "linked", "generator": "sim", "generator_options": {"capacity": 300000},
            "traffic": {"receive_tail": 0}, "repetitions": 1,
            "procedure": {"name": "throughput", "params": {"max_rate": 1e6, "resolution_percent": 10,
                                                           "trial_duration": 1}}}


@pytest.fixture
def linked_campaign(tmp_path, capsys):
    """A finished sim campaign (spec file, results root, campaign directory) and a file of the user's."""
    spec = tmp_path / "linked.yml"
    spec.write_text(json.dumps(SIM_SPEC))
    argv = ["campaign", str(spec), "--results", str(tmp_path / "results"), "--ceilings", str(tmp_path / "c.json")]
    assert cli.main(argv) == 0
    capsys.readouterr()
    (directory,) = (tmp_path / "results" / "linked").iterdir()
    victim = tmp_path / "bashrc"
    victim.write_text("the user's own file\n")
    return argv, directory, victim


@pytest.mark.parametrize("name", ["report.html", "report.ipynb"])
def test_a_report_does_not_write_through_a_link_in_the_campaign(linked_campaign, capsys, name):
    _, directory, victim = linked_campaign
    (directory / name).symlink_to(victim)
    code = cli.main(["report", "linked", "--campaign", str(directory)])
    err = capsys.readouterr().err
    assert victim.read_text() == "the user's own file\n", "the report overwrote the link's target"
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(directory / name) in err, err


@pytest.mark.parametrize("name", ["campaign.log", "points.jsonl"])
def test_a_resumed_campaign_does_not_append_through_a_link(linked_campaign, capsys, name):
    argv, directory, victim = linked_campaign
    (directory / name).unlink()
    (directory / name).symlink_to(victim)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert victim.read_text() == "the user's own file\n", "the campaign wrote through the link"
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(directory / name) in err, err


@pytest.mark.parametrize("file, content, again", [("campaign.json", "[1]", False), *(
    ("points.jsonl", line, again) for line in ("[1]", "{}", '{"point": ["x"]}') for again in (False, True))])
def test_a_resumed_campaign_whose_records_are_not_trexlabs_is_refused_in_one_line(linked_campaign, capsys, file,
                                                                                 content, again):
    """A received (or edited) campaign directory run again, or measured again (make demo): campaign.json that is not
    a mapping, or a points.jsonl line that is JSON but not a point's record (a crash cuts a line short, which is not
    JSON and is skipped), was a traceback (AttributeError, TypeError, KeyError)."""
    argv, directory, _ = linked_campaign
    with open(directory / file, "w" if file == "campaign.json" else "a") as out:
        out.write(content + "\n")
    code = cli.main([*argv, *(["--measure-again"] if again else [])])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(directory / file) in err, err


# -- a received results directory: what its files hold is shown in the report's tables as text ------------------

IMG = "<img src=x onerror=alert(5)>"


class LiveMarkup(HTMLParser):
    """What a browser would run in a page: script elements with their text, and event-handler attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.handlers: list[tuple[str, str | None]] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")
        self.handlers += [(name, value) for name, value in attrs if name.startswith("on")]

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def executed_in_process(notebook: Path, campaigns: list[str], monkeypatch) -> str:
    """The report's HTML of an analysis notebook run in this process (no kernel: seconds, not tens): its code
    cells executed in order with its campaigns parameter, each display() an output as the kernel makes it."""
    import matplotlib

    matplotlib.use("Agg")
    outputs = []

    def display(*objects):
        for shown in objects:
            if isinstance(shown, IPython.display.Markdown):
                data = {"text/markdown": shown.data}
            else:
                data = {"text/html": shown._repr_html_()}
            outputs.append(nbformat.v4.new_output("display_data", data={**data, "text/plain": ""}))

    monkeypatch.setattr(IPython.display, "display", display)
    namespace: dict = {}
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(notebook), "exec"), namespace)  # noqa: S102 - the tree's own notebook
            if "parameters" in cell.metadata.get("tags", []):
                namespace["campaigns"] = campaigns
    page = nbformat.v4.new_notebook()
    page.cells.append(nbformat.v4.new_code_cell("", outputs=outputs))
    body, _ = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                           exclude_output_prompt=True).from_notebook_node(page)
    return body


def test_a_received_campaigns_sweep_values_and_errors_are_text_in_the_reports_tables(linked_campaign, monkeypatch):
    """A point's error (points.jsonl) and a sweep value (campaign.json, result.json's provenance) are the
    received directory's to write: the tables show them as written, and nothing in them runs."""
    _, directory, _ = linked_campaign
    manifest = json.loads((directory / "campaign.json").read_text())
    (point,) = manifest["points"]
    point["values"] = {"procedure.params.loss_tolerance_percent": IMG}
    (directory / "campaign.json").write_text(json.dumps(manifest))
    (run,) = directory.glob("*/rep-*")
    provenance = json.loads((run / "provenance.json").read_text())
    provenance["sweep"] = point["values"]
    (run / "provenance.json").write_text(json.dumps(provenance))
    with (directory / "points.jsonl").open("a") as log:
        log.write(json.dumps({"point": point["point"], "status": "failed", "error": SCRIPT}) + "\n")
    page = executed_in_process(paths().notebooks / "report.ipynb", [str(directory)], monkeypatch)
    live = LiveMarkup()
    live.feed(page)
    assert not [s for s in live.scripts if "alert" in s] and not live.handlers, (live.scripts, live.handlers)
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert shown.count(SCRIPT) == 1 and shown.count(IMG) == 2, shown  # the error; the value in both tables


def test_a_report_tables_headers_and_labels_are_text_too():
    """A sweep key names a column, a point's label an index: the Styler writes labels as they are, too."""
    import pandas as pd

    frame = pd.DataFrame({IMG: [SCRIPT], "n": [[SCRIPT]]}, index=pd.Index([SCRIPT], name=IMG))
    frame.columns.name = SCRIPT
    live = LiveMarkup()
    live.feed(analysis.report_table(frame).to_html())
    assert not [s for s in live.scripts if "alert" in s] and not live.handlers, (live.scripts, live.handlers)


def test_every_table_a_notebook_shows_is_a_report_table():
    """A Styler made in a notebook (DataFrame.style) writes its cells into the page as HTML: every analysis
    notebook makes its tables with analysis.report_table (or styled, which does)."""
    for notebook in sorted(paths().notebooks.glob("*.ipynb")):
        for cell in nbformat.read(notebook, as_version=4).cells:
            assert cell.cell_type != "code" or not re.search(r"\.style\b", cell.source), (notebook.name, cell.source)


def test_a_received_campaigns_point_label_is_text_in_the_latency_table():
    """The latency report's Markdown table of points (labels from campaign.json's sweep values, directions from
    trials.jsonl): a label can neither add HTML nor a cell (a '|')."""
    latency = Latency.from_delays([10e-6, 12e-6])
    page = as_report_html(latency_report.merged_table({f"x={IMG} | {SCRIPT}": {SCRIPT: latency}}))
    live = LiveMarkup()
    live.feed(page)
    assert not [s for s in live.scripts if "alert" in s] and not live.handlers, (live.scripts, live.handlers)
    assert re.findall(r"<td>(.*?)</td>", page)[:2] == [html.escape(f"x={IMG} | {SCRIPT}", quote=False),
                                                       html.escape(SCRIPT, quote=False)], page


def test_the_compare_headings_directory_names_stay_in_their_code_spans(linked_campaign, tmp_path, monkeypatch):
    """trexlab compare's heading names both directories in code spans: a backtick in a name closed its span (and
    a line break its heading), and the rest of the name was Markdown, HTML included."""
    _, baseline, _ = linked_campaign
    others = [tmp_path / "received" / f"c`{IMG}`", tmp_path / "received" / f"c\n\n{IMG}"]
    for other in others:
        shutil.copytree(baseline, other)
    page = executed_in_process(paths().notebooks / "compare.ipynb", [str(baseline), *map(str, others)], monkeypatch)
    live = LiveMarkup()
    live.feed(page)
    assert not live.handlers, live.handlers
    headings = [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page, re.S)]
    names = [str(other).replace("\n", "\\n") for other in others]
    assert [h.removesuffix("¶") for h in headings if h.startswith("B = ")] == [
        f"B = {n} against A = {baseline}" for n in names], headings


@pytest.fixture
def demo_campaign(tmp_path, capsys):
    """A demo campaign as the reference DUT makes it (a sim one: a sim spec cannot declare the DUT, so campaign.json
    gains it afterwards), with two tolerant trials below the capacity that this machine disturbed: one stretched,
    one that lost more than every 10,000th frame. demo.ipynb's last cell names both by their repetition."""
    spec = {"name": "demo", "generator": "sim", "generator_options": {"capacity": 40333, "every_nth_loss": 10000},
            "traffic": {"receive_tail": 0}, "repetitions": 1,
            "procedure": {"name": "throughput", "params": {"max_rate": 56000, "min_rate": 500, "resolution": 250,
                                                           "trial_duration": 3}},
            "sweep": {"procedure.params.loss_tolerance_percent": [0.011]}}
    (tmp_path / "demo.yml").write_text(json.dumps(spec))
    assert cli.main(["campaign", str(tmp_path / "demo.yml"), "--results", str(tmp_path / "results"),
                     "--ceilings", str(tmp_path / "c.json")]) == 0
    capsys.readouterr()
    (directory,) = (tmp_path / "results" / "demo").iterdir()
    manifest = json.loads((directory / "campaign.json").read_text())
    manifest["spec"]["dut"] = {"reference": {"rate_fps": 40000, "burst_frames": 1000, "loss_every_nth": 10000}}
    (directory / "campaign.json").write_text(json.dumps(manifest))
    (run,) = directory.glob("*/rep-*")
    trials = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
    stretched, stalled = json.loads(json.dumps(trials[0])), json.loads(json.dumps(trials[0]))
    for trial in (stretched, stalled):
        trial["spec"]["offered_load"] = 20000.0
    stretched["stretched"] = True
    for direction in stalled["directions"].values():
        direction["frames_lost"], direction["loss_ratio"] = 600, 0.01
    with (run / "trials.jsonl").open("a") as log:
        log.write(json.dumps(stretched) + "\n" + json.dumps(stalled) + "\n")
    return directory, run


def test_the_demo_reports_disturbed_trials_by_repetition(demo_campaign, monkeypatch):
    directory, _ = demo_campaign
    page = executed_in_process(paths().notebooks / "demo.ipynb", [str(directory)], monkeypatch)
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert shown.count("rep 1 at 20,000") == 2, shown  # stalled, stretched


@pytest.mark.parametrize("repetition", [f"1 {IMG} {SCRIPT}", "\n\n1.", True, 0])
def test_a_received_campaigns_repetition_is_a_whole_number_or_refused(demo_campaign, monkeypatch, repetition):
    """The repetition is provenance.json's, the received directory's to write. demo.ipynb's last cell wrote it into
    its Markdown as it was: float() made one of "\n\n1." (an ordered list in the page) and a traceback of markup."""
    directory, run = demo_campaign
    provenance = json.loads((run / "provenance.json").read_text())
    provenance["repetition"] = repetition
    (run / "provenance.json").write_text(json.dumps(provenance))
    with pytest.raises(ValueError) as refused:
        executed_in_process(paths().notebooks / "demo.ipynb", [str(directory)], monkeypatch)
    message = str(refused.value)
    assert message == f"{run / 'provenance.json'}: repetition: {repetition!r} is not a whole number >= 1", message
