"""A node's state directory (<STATE_ROOT>/<lab>/<node>) is spelled once: trexlab.rolevalues.node_state_dir, which the
roles reach through the filter trexlab.lab.node_state_dir. Nine role defaults and campaign.dut_config_left each wrote
'/var/lib/trexlab/<lab>/<node>' of their own: netem's and dut_reference's GRO records moved to the one source
(eb79a6e) while the other copies stayed, so a changed root or layout would have left roles keeping state where the
campaign's check for leftover DUT configuration, the roles' absent clean-up and lab-down no longer look.

The same for what lies below it: roles/trex's install root (trex/ in a namespace node's state directory, else
/opt/trex) is rolevalues.trex_root, which the role takes through the filter trexlab.lab.trex_root and the trex
generator calls; both had written it themselves. And lab-down of a local lab (terraform/labs/local/scripts/nslab.py)
removes the nodes' state directories from rolevalues' root, not a copy of its own held equal by a test."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import jinja2
import yaml

from ansible_collections.trexlab.lab.plugins.filter import trexlab as filters
from ansible_collections.trexlab.lab.plugins.filter.trexlab import (
    dut_state_name,
    node_state_dir,
    trex_current,
    trex_root,
)
from trexlab import rolevalues, siit
from trexlab.generators.trex import installed_trex_paths
from trexlab.plan import campaign
from trexlab.testbed.inventory import Lab, Node

REPO = Path(__file__).resolve().parent.parent
COLLECTION = REPO / "ansible_collections" / "trexlab" / "lab"
ROLES = COLLECTION / "roles"
#: A sample inventory: a lab name and a node name with the characters each may have.
LAB, NODE = "lab-1.x", "dut_1"
#: Each role default that lies in the node's state directory: the path below it ("" for the directory itself), as
#: the roles have kept their state since before this test (hosts hold state there from earlier versions).
DEFAULTS_BELOW_STATE_DIR = {
    ("dut_reference", "dut_reference_state_dir"): "", ("dut_routing", "dut_routing_state_dir"): "",
    ("dut_tuning", "dut_tuning_state_dir"): "", ("netem", "netem_state_dir"): "",
    ("siit_jool", "siit_jool_state_dir"): "", ("siit_tayga", "siit_tayga_dir"): "/tayga",
    ("tcp_endpoints", "tcp_endpoints_state_dir"): "", ("tester_ports", "tester_ports_state_dir"): "",
    ("trex", "trex_root"): "/trex"}
#: Strings that are documentation, shown to people as written: docstrings and an Ansible module's doc blocks.
_DOC_BLOCKS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}


def role_defaults(namespace_node: bool) -> dict[tuple[str, str], str]:
    """Every string default of every role, rendered as Ansible would for node NODE of lab LAB (a namespace node,
    trexlab_netns set, or not), with the collection's own filter."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["trexlab.lab.node_state_dir"] = node_state_dir
    env.filters["trexlab.lab.trex_root"] = trex_root
    env.filters["trexlab.lab.trex_current"] = trex_current
    env.filters["trexlab.lab.dut_state_name"] = dut_state_name
    rendered = {}
    for path in sorted(ROLES.glob("*/defaults/main.yml")):
        variables = yaml.safe_load(path.read_text()) or {}
        context = {"trexlab_lab": {"name": LAB}, "inventory_hostname": NODE, "role_path": str(path.parent.parent),
                   **variables}
        if namespace_node:
            context["trexlab_netns"] = "trexlab-ns"
        for name, value in variables.items():
            try:
                rendered[(path.parent.parent.name, name)] = env.from_string(str(value)).render(context)
            except jinja2.TemplateError:  # Ansible's own filters or the play's facts (test_ports): no path of ours
                assert "node_state_dir" not in str(value) and "trex_root(" not in str(value) \
                    and rolevalues.STATE_ROOT not in str(value), (name, value)
    return rendered


def test_the_node_state_directory_is_where_the_roles_have_kept_their_state():
    """Its one source names the directory every earlier version used (and lab-down removes: nslab.py takes the root
    from rolevalues, which the system python3 that runs it imports from the checkout)."""
    assert rolevalues.node_state_dir(LAB, NODE) == f"/var/lib/trexlab/{LAB}/{NODE}"
    lab_down = subprocess.run(["/usr/bin/python3", "-c", "import nslab; print(nslab.ROLE_STATE_ROOT)"],
                              cwd=REPO / "terraform" / "labs" / "local" / "scripts", env={"PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, timeout=60)
    assert lab_down.returncode == 0 and lab_down.stdout == f"{rolevalues.STATE_ROOT}\n", lab_down.stderr[-2000:]


def test_the_trex_root_of_the_role_and_of_the_generator_is_one(monkeypatch):
    """roles/trex's trex_root and the place the trex generator looks for that TRex both follow rolevalues'
    constants: moved there, both move (a copy of the subdirectory or of /opt/trex in either would stay)."""
    tester = Node(name=NODE, role="tester", ansible_host="192.0.2.1", netns="trexlab-ns")
    lab = Lab(name=LAB, kind="local", topology="loopback", nodes={NODE: tester}, inventory=Path("hosts.yml"))
    monkeypatch.delenv("TREXLAB_TREX_PATH", raising=False)
    # The filter's rolevalues is the package's file under the collection's name: another module object.
    for module in {rolevalues, filters.rolevalues}:
        monkeypatch.setattr(module, "TREX_SUBDIR", "trex-elsewhere")
        monkeypatch.setattr(module, "TREX_SYSTEM_ROOT", "/srv/trex-elsewhere")
    roots = [role_defaults(namespace_node=True)[("trex", "trex_root")],
             role_defaults(namespace_node=False)[("trex", "trex_root")]]
    assert roots == [f"{rolevalues.node_state_dir(LAB, NODE)}/trex-elsewhere", "/srv/trex-elsewhere"]
    assert installed_trex_paths(lab) == [rolevalues.trex_current(root) for root in roots]


def test_the_trex_current_link_is_named_only_in_its_one_source(monkeypatch):
    """roles/trex's link to the release it runs ('current' below trex_root) was spelled by the role's tasks (the
    server command, the link itself), its two service templates and the trex generator (TREX_CURRENT): renamed in
    one, the generator would load no client, or the service run none. Renamed in rolevalues, the role's
    trex_current_dir and the generator's paths follow, and no role file or module of the package names it again."""
    tester = Node(name=NODE, role="tester", ansible_host="192.0.2.1", netns="trexlab-ns")
    lab = Lab(name=LAB, kind="local", topology="loopback", nodes={NODE: tester}, inventory=Path("hosts.yml"))
    monkeypatch.delenv("TREXLAB_TREX_PATH", raising=False)
    for module in {rolevalues, filters.rolevalues}:
        monkeypatch.setattr(module, "TREX_CURRENT", "release-now")
    role_vars = yaml.safe_load((ROLES / "trex/vars/main.yml").read_text())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["trexlab.lab.trex_current"] = trex_current
    links = [env.from_string(role_vars["trex_current_dir"]).render(trex_root=role_defaults(namespace)[("trex",
                                                                                                      "trex_root")])
             for namespace in (True, False)]
    assert links == [f"{rolevalues.node_state_dir(LAB, NODE)}/trex/release-now", "/opt/trex/release-now"]
    assert installed_trex_paths(lab) == links

    monkeypatch.undo()
    spelled = re.compile(rf"""/{rolevalues.TREX_CURRENT}\b|['"]{rolevalues.TREX_CURRENT}['"]""")
    copies = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
              for path in sorted([*(ROLES / "trex").rglob("*"), *(REPO / "trexlab").rglob("*.py")])
              if path.is_file() and path.suffix in (".yml", ".j2", ".py") and path.parent.name != "meta"
              and path != REPO / "trexlab/rolevalues.py"
              for n, line in enumerate(path.read_text().splitlines(), 1)
              if spelled.search(line) and not line.lstrip().startswith(("#", "{#"))]
    assert not copies, "the trex role's current link named outside rolevalues.TREX_CURRENT:\n" + "\n".join(copies)


def test_each_role_default_in_the_state_directory_resolves_to_the_same_directory():
    own = rolevalues.node_state_dir(LAB, NODE)
    namespace, other = role_defaults(namespace_node=True), role_defaults(namespace_node=False)
    found = {key for key, value in namespace.items() if value == own or value.startswith(own + "/")}
    assert found == set(DEFAULTS_BELOW_STATE_DIR), "role defaults in the node's state directory changed"
    assert {key: namespace[key] for key in found} == {key: own + below
                                                      for key, below in DEFAULTS_BELOW_STATE_DIR.items()}
    # roles/trex installs below the state directory only on a namespace node (which shares the host's disk).
    assert other[("trex", "trex_root")] == "/opt/trex"
    assert all(other[key] == own + below for key, below in DEFAULTS_BELOW_STATE_DIR.items() if key[0] != "trex")


def _python_copies(path: Path) -> list[str]:
    """Where a module (not its documentation) writes the state root itself, or builds <STATE_ROOT>/<lab>/... from
    it as an f-string or a join instead of calling rolevalues.node_state_dir."""
    tree = ast.parse(path.read_text(), str(path))
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docs.add(id(body[0].value))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") in _DOC_BLOCKS for t in node.targets):
            docs.update(id(n) for n in ast.walk(node.value))

    def is_root(expr: ast.AST) -> bool:  # STATE_ROOT, a root passed on (state_root), or a copy (ROLE_STATE_ROOT)
        return str(getattr(expr, "id", getattr(expr, "attr", ""))).lower().endswith("state_root")

    copies = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and rolevalues.STATE_ROOT in node.value:
            copies.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.JoinedStr):
            parts = node.values
            copies += [f"{node.lineno}: an f-string of {ast.unparse(a.value)}/..."
                       for a, b in zip(parts, parts[1:], strict=False) if isinstance(a, ast.FormattedValue)
                       and is_root(a.value) and isinstance(b, ast.Constant) and str(b.value).startswith("/")]
        elif isinstance(node, ast.Call) and len(node.args) > 1 and is_root(node.args[0]):
            copies.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and is_root(node.left):  # a Path
            copies.append(f"{node.lineno}: {ast.unparse(node)}")
    return copies


def _yaml_strings(value, key: str = ""):
    """Each string of a YAML document, but an argument spec's descriptions (documentation)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "description":
                yield from _yaml_strings(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _yaml_strings(v, key)
    elif isinstance(value, str):
        yield value


def test_the_state_root_is_written_only_in_its_one_source():
    """Code and role YAML (not comments, docstrings, argument spec descriptions, READMEs or the CHANGELOG, which
    tell people where things are) of the collection, the playbooks, the package and the labs' own scripts (lab-down
    removes the nodes' state): the state root appears only as rolevalues.STATE_ROOT, and a node's directory is only
    ever made by rolevalues.node_state_dir."""
    source = REPO / "trexlab" / "rolevalues.py"
    copies = []
    for path in sorted([*COLLECTION.rglob("*"), *(REPO / "trexlab").rglob("*"), *(REPO / "playbooks").rglob("*"),
                        *(REPO / "terraform" / "labs").glob("*/scripts/*")]):
        if not path.is_file() or path.is_symlink() or "__pycache__" in path.parts:  # plugin_utils: the package's
            continue
        where = path.relative_to(REPO)
        if path.suffix == ".py":
            found = _python_copies(path)
            if path == source:  # the definition itself, and node_state_dir joining it
                found = [f for f in found if not re.match(r"\d+: ('/var/lib/trexlab'|posixpath\.join\(STATE_ROOT)", f)]
            copies += [f"{where}:{f}" for f in found]
        elif path.suffix in (".yml", ".yaml"):
            for document in yaml.safe_load_all(path.read_text()):
                copies += [f"{where}: {s!r}" for s in _yaml_strings(document) if rolevalues.STATE_ROOT in s]
        elif path.suffix in (".j2", ".sh", ".txt", ".cfg", ".json"):
            copies += [f"{where}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
                       if rolevalues.STATE_ROOT in line and not line.lstrip().startswith(("#", "{#"))]
    assert not copies, ("the state root or a node's state directory spelled outside rolevalues (roles: the filter "
                        "trexlab.lab.node_state_dir; Python: rolevalues.node_state_dir):\n" + "\n".join(copies))


def _rendered(value: str, context: dict) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters.update({"trexlab.lab.node_state_dir": node_state_dir, "trexlab.lab.dut_state_name": dut_state_name})
    for _ in range(4):  # a variable's template may name another's
        value = env.from_string(value).render(context)
    return value


def test_what_the_dut_configuration_roles_keep_is_named_only_in_rolevalues(monkeypatch):
    """The campaign refuses points on a DUT that carries a configuration block from before by the files the block's
    role keeps in its state directory (campaign.dut_config_left): campaign.DUT_CONFIG_MARKERS named them (netem.json,
    dut_reference.json, siit_jool.json, the tayga directory, its tayga.conf and device record) beside the roles that
    write them, each spelled again: a role's file renamed, the check would find nothing and the block stay in every
    figure, unseen. Renamed in rolevalues, every role's path follows, and nothing else names them."""
    renamed = {"reference": "ref-x.json", "impairment": "imp-x.json", "siit": "tayga-x", "siit_jool": "jool-x.json"}
    for module in {rolevalues, filters.rolevalues}:
        for block, name in renamed.items():
            monkeypatch.setitem(module.DUT_CONFIG_MARKERS, block, name)
        monkeypatch.setattr(module, "TAYGA_CONFIG", "cfg-x")
        monkeypatch.setattr(module, "TAYGA_DEVICE_RECORD", "dev-x")
    own = rolevalues.node_state_dir(LAB, NODE)
    context = {"trexlab_lab": {"name": LAB}, "inventory_hostname": NODE}
    for role in ("dut_reference", "netem", "siit_jool", "siit_tayga"):
        for part in ("defaults", "vars"):
            if (ROLES / role / part / "main.yml").exists():
                context.update(yaml.safe_load((ROLES / role / part / "main.yml").read_text()))
    tayga_facts = next(t["ansible.builtin.set_fact"] for t in yaml.safe_load((ROLES / "siit_tayga/tasks/main.yml")
                                                                              .read_text())
                       if "siit_tayga_conf" in t.get("ansible.builtin.set_fact", {}))
    paths = {key: _rendered(context[key], context) for key in ("dut_reference_record_file", "netem_record_file",
                                                                "siit_jool_record_file", "siit_tayga_dir")}
    paths.update({key: _rendered(tayga_facts[key], context) for key in ("siit_tayga_conf", "siit_tayga_record")})
    assert paths == {"dut_reference_record_file": f"{own}/ref-x.json", "netem_record_file": f"{own}/imp-x.json",
                     "siit_jool_record_file": f"{own}/jool-x.json", "siit_tayga_dir": f"{own}/tayga-x",
                     "siit_tayga_conf": f"{own}/tayga-x/cfg-x", "siit_tayga_record": f"{own}/tayga-x/dev-x"}
    assert campaign.DUT_CONFIG_MARKERS is rolevalues.DUT_CONFIG_MARKERS
    monkeypatch.undo()

    # The names themselves, anywhere but rolevalues: a role's files (not its documentation) and the package's code;
    # a file name anywhere, the tayga directory and the device record as a path's last part (tayga is the program too).
    names = [re.escape(n) for n in (*rolevalues.DUT_CONFIG_MARKERS.values(), rolevalues.TAYGA_CONFIG) if "." in n]
    spelled = re.compile(rf"(?<![\w.-])(?:{'|'.join(names)})(?![\w.-])|/(?:{re.escape(rolevalues.TAYGA_DEVICE_RECORD)}"
                         rf"|{re.escape(rolevalues.DUT_CONFIG_MARKERS['siit'])})(?![\w.-])")
    files = [p for role in ("dut_reference", "netem", "siit_jool", "siit_tayga") for p in (ROLES / role).rglob("*")
             if p.is_file() and p.suffix != ".md" and p.parent.name != "meta"]
    files += [p for p in (REPO / "trexlab").rglob("*.py") if p != REPO / "trexlab/rolevalues.py"]
    copies = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in sorted(files)
              for n, line in enumerate(path.read_text().splitlines(), 1)
              if spelled.search(line) and not line.lstrip().startswith(("#", "{#"))]
    assert siit.RECORD == rolevalues.DUT_CONFIG_MARKERS["siit_jool"]
    assert not copies, "a DUT configuration role's state file named outside rolevalues:\n" + "\n".join(copies)
