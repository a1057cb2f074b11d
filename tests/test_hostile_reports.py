"""A hostile spec (or a shared campaign directory) against the report: its text is shown as text, never as HTML,
a script or a link in the page a reader opens, and it names no notebook but the tree's own analysis notebooks.

Fast: the report's Markdown is rendered by the exporter the report uses, without a notebook kernel."""

from __future__ import annotations

import html
import json
import os
import re

import nbformat
import pytest
from nbconvert import HTMLExporter

from trexlab import cli
from trexlab.paths import paths
from trexlab.results import analysis

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
