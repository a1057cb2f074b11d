"""The CLI's commands: procedures, campaign and report are all argparse subcommands; Params flags come from
the procedures' resolved type hints (no eval of annotation strings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from trexlab import cli
from trexlab.plan.runplan import CONFIG_KEYS
from trexlab.procedures import names


def test_help_lists_every_procedure_and_campaign_and_report():
    listed = {line.split()[0] for line in cli.build_parser().format_help().splitlines() if line.startswith("    ")
              and not line.startswith("     ")}
    assert listed >= {*names(), "campaign", "report", "compare", "schema"}, listed
    # The COMMAND line names the verbs that are not procedures, each of them.
    assert "or campaign / report / compare / schema" in " ".join(cli.build_parser().format_help().split())


@pytest.mark.parametrize("command", ["campaign", "report"])
def test_campaign_and_report_have_their_own_help(command, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and f"usage: trexlab {command} " in out
    if command == "report":  # the notebook it takes: the spec's first (http-download-* share one), as notebook_for
        assert "the one the spec names, notebook:, else analysis/<experiment>.ipynb" in " ".join(out.split())


def test_a_campaign_and_a_missing_report_through_main(tmp_path, capsys):
    spec = {"name": "clicmd", "generator": "sim", "generator_options": {"capacity": 300000},
            "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "receive_tail": 0},
            "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "trial_duration": 1}},
            "repetitions": 1}
    (tmp_path / "spec.yml").write_text(yaml.safe_dump(spec))
    assert cli.main(["campaign", str(tmp_path / "spec.yml"), "--results", str(tmp_path / "r")]) == 0
    assert json.loads(capsys.readouterr().out)["done"] == 1
    assert cli.main(["report", "nosuch", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trexlab report: no campaign of experiment 'nosuch'") and err.count("\n") == 1


@dataclass(frozen=True)
class Params:
    where: Path | None = None  # a type no whitelist of names for eval() knew
    rate: float = 1.0
    sizes: tuple[int, ...] = (64, 1518)
    check: bool = False


def test_params_flags_come_from_resolved_type_hints():
    parser = cli.argparse.ArgumentParser()
    cli.add_params_flags(parser, Params)
    args = parser.parse_args(["--rate", "2.5", "--sizes", "64,128", "--check"])
    assert (args.param_rate, args.param_sizes, args.param_check) == (2.5, (64, 128), True)
    assert not hasattr(args, "param_where"), "a Path field is set through --config only"


def test_a_closed_stdout_stops_with_one_line_not_a_traceback(monkeypatch, capsys):
    """trexlab schema | head: the reader goes away before trexlab has written all; one line on stderr and exit
    status 141 (a shell's SIGPIPE status), as for every other stop, not Python's traceback."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    with os.fdopen(write, "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert cli.main(["schema"]) == 141
        monkeypatch.undo()
    assert capsys.readouterr().err == "trexlab: stdout closed by its reader; stopped\n"


def test_every_help_page_reads_as_written_and_names_the_inventory_default():
    """Each subcommand's --help as a user reads it: a percent sign printed as typed (argparse %-formats option help,
    not descriptions, so a description's '%%' was shown doubled) and --inventory with the lab it falls back to."""
    subcommands = cli.build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    for name, sub in subcommands.items():
        text = sub.format_help()
        assert "%%" not in text, f"trexlab {name} --help: {text[text.index('%%') - 60:text.index('%%') + 10]!r}"
        if "\n  --config CONFIG" in text:  # every key a --config file may hold (runplan.read_config's)
            config = " ".join(text[text.index("\n  --config CONFIG"):].split()[:12])
            assert all(key in config for key in CONFIG_KEYS), config
        if "\n  --inventory INVENTORY" in text:  # its option line, not the usage
            inventory = " ".join(text[text.index("\n  --inventory INVENTORY"):].split()[:16])
            assert "$TREXLAB_INVENTORY" in inventory and "inventory/generated/local/hosts.yml" in inventory, inventory


def test_compare_help_states_the_comparisons_confidence_from_its_constant(monkeypatch):
    """trexlab compare --help wrote "95 %" beside stats.SHIFT_CONFIDENCE: a changed level would be misstated."""
    from trexlab.results import stats

    monkeypatch.setattr(stats, "SHIFT_CONFIDENCE", 0.9)
    text = " ".join(cli.build_parser()._subparsers._group_actions[0].choices["compare"].format_help().split())  # noqa: SLF001
    assert "distribution-free 90 % (Mann-Whitney) confidence interval" in text, text


@pytest.mark.parametrize(("argv", "message"), [
    (["throughput", "--max-rate", "abc"], "argument --max-rate: 'abc' is not a number; allowed > 0 and <= 1e+09"),
    (["latency", "--tagged-frames", "1000.5"],
     "argument --tagged-frames: '1000.5' is not an integer; allowed >= 500 and <= 1e+07"),
    (["pdv", "--repeat", "x"], "argument --repeat: 'x' is not an integer; allowed 1..1000"),
    (["flr", "--destination-networks", "1.5"],
     "argument --destination-networks: '1.5' is not an integer; allowed 1..256"),
    (["throughput", "--receive-tail", "2s"], "argument --receive-tail: '2s' is not a number; allowed 0..60"),
])
def test_a_mistyped_number_is_one_line_naming_the_flag_and_its_range(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"trexlab {argv[0]}: {message}\n"


def test_an_integer_flag_takes_a_count_written_as_1e3_as_a_spec_does():
    assert cli.build_parser().parse_args(["latency", "--tagged-frames", "1e3"]).param_tagged_frames == 1000


#: Modules a command that reads or writes no table has no use for: they took half a second of every trexlab command's
#: start (results.store imported pandas and pyarrow at its top; the argument parser imported generators.sim, which
#: imported numpy, and results.compare, which imported pandas, for a constant).
TABLE_MODULES = ("numpy", "pandas", "pyarrow")


@pytest.mark.parametrize("argv", [["--help"], ["schema"], ["throughput", "--max-rate", "abc"], ["compare", "--help"]])
def test_a_command_that_reads_no_table_imports_no_table_library(argv):
    script = ("import sys\nfrom trexlab.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
              f"print(sorted(m for m in {TABLE_MODULES!r} if m in sys.modules), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).parents[1])
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr[-2000:]
