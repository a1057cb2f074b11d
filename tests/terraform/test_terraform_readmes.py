"""Every Terraform module and lab root module keeps the standard layout (variables.tf, outputs.tf, versions.tf,
README.md), and its README lists exactly the variables and outputs its .tf files declare, so that the READMEs
cannot drift from the code unnoticed. The lab READMEs (terraform/labs) also carry each variable's type, default
and description and each output's description as the .tf files write them. No terraform binary needed."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ("variables.tf", "outputs.tf", "versions.tf", "README.md")

# terraform fmt puts a block's closing brace in column 0 and its own attributes at two spaces, so a regex is enough.
BLOCK = re.compile(r'^(variable|output) "([^"]+)" \{\n(.*?)^\}', re.M | re.S)
ATTRIBUTE = re.compile(r"^  (description|type|default)\s*=\s*(.*)$", re.M)
HEREDOC = re.compile(r"^  description\s*=\s*<<-EOT\n(.*?)^\s*EOT$", re.M | re.S)
TYPE_BLOCK = re.compile(r"^  type = (\S*\(\{\n.*?^  \}\)+)$", re.M | re.S)
CELL_SPLIT = re.compile(r"(?<!\\)\|")


def module_dirs() -> list[Path]:
    """The shared modules and the lab root modules: every directory right under them holding a .tf file."""
    return sorted(d for parent in ("terraform/modules", "terraform/labs") for d in (ROOT / parent).iterdir()
                  if d.is_dir() and any(d.glob("*.tf")))


def declared(module: Path) -> dict[str, dict[str, dict]]:
    """variable and output blocks of the module's .tf files: kind -> name -> {file, description, type, default}."""
    found: dict[str, dict[str, dict]] = {"variable": {}, "output": {}}
    for tf in sorted(module.glob("*.tf")):
        for kind, name, body in BLOCK.findall(tf.read_text()):
            attrs: dict = {"file": tf.name}
            for key, value in ATTRIBUTE.findall(body):
                attrs[key] = value.strip()
            heredoc = HEREDOC.search(body)
            if heredoc:
                attrs["description"] = textwrap.dedent(heredoc.group(1)).strip()
                attrs["heredoc"] = True
            type_block = TYPE_BLOCK.search(body)
            if type_block:
                first, *rest = type_block.group(1).splitlines()
                attrs["type_block"] = "\n".join([first, *(line[2:] for line in rest)])
            elif attrs.get("description", "").startswith('"'):
                attrs["description"] = attrs["description"][1:-1].replace('\\"', '"').replace("\\\\", "\\")
            found[kind][name] = attrs
    return found


def readme_table(readme: str, heading: str) -> dict[str, dict[str, str]]:
    """Rows of the table under '## <heading>': first column's `name` -> {column header: cell}."""
    section = re.search(rf"^## {heading}\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    if not section:
        return {}
    lines = [line for line in section.group(1).splitlines() if line.startswith("|")]
    if len(lines) < 2:
        return {}

    def cells(line: str) -> list[str]:
        return [c.strip() for c in CELL_SPLIT.split(line.strip().strip("|"))]

    header = cells(lines[0])
    rows = {}
    for line in lines[2:]:
        row = dict(zip(header, cells(line), strict=False))
        name = re.fullmatch(r"`([^`]+)`", row.get(header[0], ""))
        if name:
            rows[name.group(1)] = row
    return rows


def readme_problems(module: Path, exact: bool) -> list[str]:
    """What in the module's layout or README disagrees with its .tf files, one sentence each."""
    rel = module.relative_to(ROOT) if module.is_relative_to(ROOT) else module
    problems = [f"{rel}: no {name}" for name in LAYOUT if not (module / name).is_file()]
    blocks = declared(module)
    for kind, home in (("variable", "variables.tf"), ("output", "outputs.tf")):
        problems += [f"{rel}: {kind} {name} is declared in {a['file']}, not {home}"
                     for name, a in blocks[kind].items() if a["file"] != home]
    if not (module / "README.md").is_file():
        return problems
    readme = (module / "README.md").read_text()
    for kind, heading in (("variable", "Inputs"), ("output", "Outputs")):
        rows = readme_table(readme, heading)
        problems += [f"{rel}/README.md: {kind} {name} is missing from '## {heading}'"
                     for name in blocks[kind] if name not in rows]
        problems += [f"{rel}/README.md: '## {heading}' lists {name}, which the .tf files do not declare"
                     for name in rows if name not in blocks[kind]]
        if not exact:
            continue
        for name, attrs in blocks[kind].items():
            row = rows.get(name)
            if row is None:
                continue
            description = attrs.get("description", "")
            if attrs.get("heredoc"):
                # A multi-line description is quoted whole below the table (a table cell cannot hold its lines).
                if description not in readme:
                    problems.append(f"{rel}/README.md: {kind} {name}'s description is not quoted as written")
            # A cell escapes | (a column) and < (a tag, which Markdown would hide).
            elif re.sub(r"\\([|<])", r"\1", row.get("Description", "")) != description:
                problems.append(f"{rel}/README.md: {kind} {name}'s description differs from {attrs['file']}")
            if kind != "variable":
                continue
            default = f"`{attrs['default']}`" if "default" in attrs else "required"
            if row.get("Default") != default:
                problems.append(f"{rel}/README.md: variable {name}'s default is {row.get('Default')!r}, "
                                f"{attrs['file']} says {default!r}")
            tf_type = attrs.get("type", "")
            # A one-line type is the cell; a multi-line object type is abridged there and quoted whole below.
            if "type_block" in attrs:
                if not row.get("Type", "").startswith(f"`{tf_type}") or attrs["type_block"] not in readme:
                    problems.append(f"{rel}/README.md: variable {name}'s type is not quoted as {attrs['file']} "
                                    "writes it")
            elif row.get("Type") != f"`{tf_type}`":
                problems.append(f"{rel}/README.md: variable {name}'s type is {row.get('Type')!r}, "
                                f"{attrs['file']} says {tf_type!r}")
    return problems


@pytest.mark.parametrize("module", module_dirs(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_module_has_standard_layout_and_readme_matches_its_tf_files(module):
    assert readme_problems(module, exact=module.parent.name == "labs") == []


def test_every_lab_kind_is_checked():
    # scripts/lab.sh accepts these LAB values; each is a root module whose README the test above reads.
    labs = {d.name for d in module_dirs() if d.parent.name == "labs"}
    lab_sh = (ROOT / "scripts/lab.sh").read_text()
    allowed = set(re.search(r'case "\$LAB" in ([a-z|]+)\)', lab_sh).group(1).split("|"))
    assert labs == allowed


def test_drift_is_reported(tmp_path):
    # A variable added to the code but not the README, a default changed in the code only, an output the README
    # still lists after its removal, and a variable outside variables.tf: each is one problem.
    (tmp_path / "variables.tf").write_text(
        'variable "kept" {\n  description = "Kept."\n  type        = number\n  default     = 3\n}\n\n'
        'variable "added" {\n  description = "Added."\n  type        = string\n}\n')
    (tmp_path / "main.tf").write_text('variable "stray" {\n  type = bool\n}\n')
    (tmp_path / "outputs.tf").write_text("")
    (tmp_path / "README.md").write_text(
        "# m\n\n## Inputs\n\n| Name | Type | Default | Description |\n|---|---|---|---|\n"
        "| `kept` | `number` | `2` | Kept. |\n| `stray` | `bool` | required |  |\n\n"
        "## Outputs\n\n| Name | Description |\n|---|---|\n| `gone` | Removed. |\n")
    assert readme_problems(tmp_path, exact=True) == [
        f"{tmp_path}: no versions.tf",
        f"{tmp_path}: variable stray is declared in main.tf, not variables.tf",
        f"{tmp_path}/README.md: variable added is missing from '## Inputs'",
        f"{tmp_path}/README.md: variable kept's default is '`2`', variables.tf says '`3`'",
        f"{tmp_path}/README.md: '## Outputs' lists gone, which the .tf files do not declare",
    ]


def convention_problems(module: Path) -> list[str]:
    """What a terraform-aws-modules reader expects and the module lacks: a type and a description on every
    variable, a description on every output, required_version in versions.tf, and each provider its resources
    use (any but the built-in terraform_data) in required_providers with a version constraint."""
    rel = module.relative_to(ROOT) if module.is_relative_to(ROOT) else module
    blocks = declared(module)
    problems = [f"{rel}: variable {name} has no {key}" for name, attrs in blocks["variable"].items()
                for key in ("type", "description") if key not in attrs]
    problems += [f"{rel}: output {name} has no description" for name, attrs in blocks["output"].items()
                 if "description" not in attrs]
    versions = (module / "versions.tf").read_text() if (module / "versions.tf").is_file() else ""
    if not re.search(r"^  required_version\s*=\s*\"[^\"]+\"", versions, re.M):
        problems.append(f"{rel}: versions.tf has no required_version")
    used = {m for tf in module.glob("*.tf") for m in re.findall(r'^resource "([a-z0-9]+)_', tf.read_text(), re.M)}
    for provider in sorted(used - {"terraform"}):
        entry = re.search(rf"^    {provider} = \{{\n(.*?)^    \}}", versions, re.M | re.S)
        if not entry or not re.search(r'^\s*version\s*=\s*"[^"]+"', entry.group(1), re.M):
            problems.append(f"{rel}: provider {provider} has no version constraint in required_providers")
    return problems


@pytest.mark.parametrize("module", module_dirs(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_module_declares_types_descriptions_and_versions(module):
    assert convention_problems(module) == []


def test_a_missing_type_description_or_version_is_reported(tmp_path):
    (tmp_path / "variables.tf").write_text('variable "a" {\n  type = number\n}\n\nvariable "b" {\n'
                                           '  description = "B."\n}\n')
    (tmp_path / "outputs.tf").write_text('output "c" {\n  value = 1\n}\n')
    (tmp_path / "main.tf").write_text('resource "maas_instance" "m" {\n}\n\nresource "terraform_data" "d" {\n}\n')
    (tmp_path / "versions.tf").write_text('terraform {\n  required_providers {\n    maas = {\n'
                                          '      source = "canonical/maas"\n    }\n  }\n}\n')
    assert convention_problems(tmp_path) == [
        f"{tmp_path}: variable a has no description", f"{tmp_path}: variable b has no type",
        f"{tmp_path}: output c has no description", f"{tmp_path}: versions.tf has no required_version",
        f"{tmp_path}: provider maas has no version constraint in required_providers"]
