"""The trexlab.lab Ansible collection without a lab: it builds, its tarball needs no trexlab Python package, and
the netconf module's EXAMPLES use only documented options. That DOCUMENTATION describes exactly the argument spec
is ansible-test's validate-modules' job (make lint runs every sanity test: scripts/collection.sh sanity)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
COLLECTION = REPO / "ansible_collections" / "trexlab" / "lab"

_spec = importlib.util.spec_from_file_location("netconf_module", COLLECTION / "plugins" / "modules" / "netconf.py")
netconf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(netconf)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build")
    built = subprocess.run([str(REPO / "scripts" / "collection.sh"), "build", str(out)], capture_output=True,
                           text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    return Path(built.stdout.split()[-1])


def test_the_collection_builds_with_its_roles_module_and_filters(tarball):
    assert tarball.name == f"trexlab-lab-{yaml.safe_load((COLLECTION / 'galaxy.yml').read_text())['version']}.tar.gz"
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    roles = {p.name for p in (COLLECTION / "roles").iterdir()}
    assert {"dut_routing", "netem", "siit_jool", "tester_software", "trex"} <= roles
    assert {f"roles/{r}/tasks/main.yml" for r in roles} <= names
    assert {"MANIFEST.json", "meta/runtime.yml", "plugins/modules/netconf.py", "plugins/filter/trexlab.py"} <= names


def test_the_tarball_needs_no_trexlab_package(tarball):
    """Its Python files import nothing from the trexlab package, and plugin_utils holds real files (the
    repository's links to the package's modules are resolved by the build)."""
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.name.endswith(".py")]
        assert all(m.isfile() for m in members), [m.name for m in members if not m.isfile()]
        sources = {m.name: tar.extractfile(m).read().decode() for m in members}
    assert {"plugins/plugin_utils/addressing.py", "plugins/plugin_utils/impairment.py",
            "plugins/plugin_utils/params.py"} <= set(sources)
    imports = {name: re.findall(r"^\s*(?:from|import) trexlab\b.*$", text, re.MULTILINE)
               for name, text in sources.items()}
    assert not any(imports.values()), imports


def test_examples_use_the_module_by_its_fqcn_with_documented_options_only():
    options = yaml.safe_load(netconf.DOCUMENTATION)["options"]
    examples = yaml.safe_load(netconf.EXAMPLES)
    assert examples and all(set(task) == {"name", "trexlab.lab.netconf"} for task in examples)
    for task in examples:
        args = task["trexlab.lab.netconf"]
        assert set(args) <= set(options) and "state_file" in args, task["name"]
        for key in ("addresses", "routes", "neighbours"):
            for item in args.get(key, []):
                assert set(item) == set(options[key]["suboptions"]), (task["name"], item)


def test_return_documents_the_changes_list():
    returned = yaml.safe_load(netconf.RETURN)
    assert returned["changes"]["type"] == "list" and returned["changes"]["returned"] == "always"


def test_ansible_doc_reads_the_module_from_the_collection():
    done = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-doc"), "--json", "trexlab.lab.netconf"],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    assert done.returncode == 0, done.stderr
    assert '"changes"' in done.stdout and '"state_file"' in done.stdout


def test_requirements_pin_every_collection_the_roles_use_at_the_installed_version():
    """requirements.yml names each collection the roles and playbooks use (besides ansible.builtin and trexlab.lab)
    at the version the ansible package of make setup installed, inside galaxy.yml's dependency range."""
    pinned = {c["name"]: c["version"] for c in yaml.safe_load((REPO / "requirements.yml").read_text())["collections"]}
    used = set()
    for path in [*(COLLECTION / "roles").rglob("*.yml"), *(REPO / "playbooks").glob("*.yml")]:
        used |= set(re.findall(r"^\s*-?\s*([a-z_]+\.[a-z_]+)\.[a-z_]+:", path.read_text(), re.MULTILINE))
    assert used - {"ansible.builtin", "trexlab.lab"} == set(pinned), used
    listed = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-galaxy"), "collection", "list", "--format", "json",
                             *pinned], capture_output=True, text=True, timeout=120, cwd=REPO)
    installed = {name: info["version"] for where in json.loads(listed.stdout).values() for name, info in where.items()}
    assert installed == pinned
    dependencies = yaml.safe_load((COLLECTION / "galaxy.yml").read_text())["dependencies"]
    assert set(dependencies) == set(pinned)
    for name, version in pinned.items():
        low, high = re.fullmatch(r">=([\d.]+),<([\d.]+)", dependencies[name]).groups()
        as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
        assert as_tuple(low) <= as_tuple(version) < as_tuple(high), (name, version, dependencies[name])


def test_missing_packages_are_those_dpkg_query_does_not_show_installed():
    """What the roles hand to apt after dpkg-query: only the packages not installed ("ii "), so that a role
    applied again does not open apt's package cache (4 CPU-s a call); a name with a version or architecture,
    which dpkg-query's ${Package} never prints, stays apt's."""
    from ansible_collections.trexlab.lab.plugins.filter.trexlab import missing_packages

    lines = ["ii gcc", "rc make", "iU nftables", "ii tayga"]  # make removed (config left), nftables unpacked only
    assert missing_packages(["gcc", "make", "nftables", "libc6-dev"], lines) == ["make", "nftables", "libc6-dev"]
    assert missing_packages(["tayga"], lines) == []
    assert missing_packages(["tayga=0.9", "tayga:arm64"], lines) == ["tayga=0.9", "tayga:arm64"]
    assert missing_packages(["gcc"], []) == ["gcc"]  # dpkg-query failed or said nothing: apt decides


def test_absent_removes_the_state_directories_it_leaves_empty_and_no_other(tmp_path):
    """The roles' last absent step (a static or MAAS lab has no lab-down): the node's state directory, then the
    lab's and the root, each only while empty; one that holds anything (another role's state, another node's)
    stops it, and a state directory outside the root is never touched."""
    from ansible_collections.trexlab.lab.plugins.filter.trexlab import empty_state_dirs

    root = tmp_path / "trexlab"
    node, other = root / "lab" / "dut1", root / "lab" / "dut2"
    node.mkdir(parents=True)
    other.mkdir()
    (other / "dut_routing.json").write_text("{}")

    def remove(state_dir) -> list[str]:
        script = empty_state_dirs(str(state_dir), root=str(root))
        return subprocess.run(["sh", "-ec", script], capture_output=True, text=True, check=True).stdout.split()

    assert remove(node) == [str(node)] and not node.exists() and other.exists()  # dut2's state stops it
    (other / "dut_routing.json").unlink()
    assert remove(other) == [str(other), str(root / "lab"), str(root)] and not root.exists()
    assert remove(other) == []  # already gone: nothing to do, no error
    mine = tmp_path / "mine"
    mine.mkdir()
    assert remove(mine) == [] and mine.exists()  # not below the root: someone's own directory


def test_netem_refuses_to_replace_a_root_qdisc_of_the_nodes_own():
    """roles/netem's check before any change: a port's root of handle 0: is the kernel's default (absent's delete
    gives it back), one of the role's record with the kind and handle recorded is its own; any other root (a tbf
    the user set, a tbf or a netem of another handle on a port of the record) is refused, naming port and qdisc."""
    from ansible_collections.trexlab.lab.plugins.filter.trexlab import root_qdisc_error

    probe = ["#table inet filter", "#root eth0 mq 0:", "#root eth1 tbf 8003:", "#root eth2 netem 8001:"]
    nothing = {"devices": [], "roots": {}}
    assert root_qdisc_error(["eth0", "eth2"], probe, {"devices": ["eth2"], "roots": {"eth2": "netem 8001:"}}) == ""
    assert root_qdisc_error([], probe, nothing) == ""  # nothing replaced (nftables loss, absent)
    tbf_over_netem = {"devices": ["eth1"], "roots": {"eth1": "netem 1:"}}
    for devices, record in ((["eth0", "eth1"], nothing), (["eth1"], tbf_over_netem)):
        error = root_qdisc_error(devices, probe, record)
        assert error.startswith("test port eth1 has a root qdisc of its own (tbf 8003:)") and "\n" not in error
    assert root_qdisc_error(["eth2"], probe, nothing).startswith("test port eth2 "), "netem of someone else's"
    replaced = {"devices": ["eth2"], "roots": {"eth2": "netem 8005:"}}
    assert root_qdisc_error(["eth2"], probe, replaced).startswith("test port eth2 has a root qdisc of its own (netem "
                                                                   "8001:)"), "a netem put over the role's since"


def test_netem_deletes_only_the_recorded_roots_that_are_still_its_own():
    """Absent and a new plan delete the root qdisc of each recorded port where it is still the one the role put
    there, of the kind and handle it read back after applying: a recorded port whose root someone replaced since
    keeps it, whatever its kind (a netem or htb of another handle too), as does one with the kernel's default; the
    run names each it leaves, with the root there now and the role's. A record from before handles were recorded
    is judged by kind."""
    from ansible_collections.trexlab.lab.plugins.filter.trexlab import own_roots, roots_left_note

    probe = ["#root eth0 mq 0:", "#root eth1 tbf 8003:", "#root eth2 netem 8001:", "#root eth3 htb 1:",
             "#root eth5 netem 8009:", "#root eth6 htb 2:"]
    devices = ["eth0", "eth1", "eth2", "eth3", "eth4", "eth5", "eth6"]
    record = {"devices": devices, "roots": {"eth0": "netem 8000:", "eth1": "netem 8002:", "eth2": "netem 8001:",
                                            "eth3": "htb 1:", "eth4": "netem 8004:", "eth5": "netem 8006:",
                                            "eth6": "htb 1:"}}
    assert own_roots(record, probe) == ["eth2", "eth3"]
    note = roots_left_note(record, probe)
    assert note.startswith("netem: left the root qdisc of eth0 (now mq 0:; netem's was netem 8000:), eth1 (now tbf "
                           "8003:; netem's was netem 8002:), eth4 (now none; netem's was netem 8004:), eth5 (now "
                           "netem 8009:; netem's was netem 8006:), eth6 (now htb 2:; netem's was htb 1:): not the "
                           "one netem put there"), note
    assert roots_left_note({"devices": ["eth2", "eth3"], "roots": record["roots"]}, probe) == ""
    assert own_roots({"devices": devices, "nft": "", "tc": []}, probe) == ["eth2", "eth3", "eth5", "eth6"]


#: A literal default's Python type per argument-spec type (bool is an int to Python, so int excludes it below).
SPEC_TYPES = {"str": str, "path": str, "int": int, "float": (int, float), "bool": bool, "list": list, "dict": dict}


def argument_spec_problems(role: Path) -> list[str]:
    """What in a role's meta/argument_specs.yml disagrees with its defaults/main.yml or leaves an option undescribed.

    ansible-doc -t role and the role's argument validation read the spec, the role runs with defaults/main.yml (a
    spec default is never applied): each variable of defaults/main.yml is an option; a literal default (not a
    template, not null) is the spec's default, of the spec's type and among its choices; a default computed from
    a template has none in the spec (ansible-doc would show a constant the role does not use) and its description
    says what it is; a spec default belongs to a variable of defaults/main.yml; every option has a type and a
    description, a list the type of its elements."""
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    wrong = [f"{role.name}: {name} undocumented" for name in defaults if name not in options]
    for name, option in options.items():
        wrong += [f"{role.name}: {name} has no {key}" for key in ("type", "description") if key not in option]
        if option.get("type") == "list" and "elements" not in option:
            wrong.append(f"{role.name}: {name} is a list of no declared type")
        if name not in defaults:
            if "default" in option:
                wrong.append(f"{role.name}: {name} has a spec default but none in defaults/main.yml")
            continue
        value = defaults[name]
        if option.get("required"):
            wrong.append(f"{role.name}: {name} required but given a default")
        if value is not None and "{{" in str(value):
            if "default" in option:
                wrong.append(f"{role.name}: {name} default {option['default']!r} in the spec, {value!r} in "
                             "defaults/main.yml")
            if "default" not in " ".join(option.get("description", [])
                                         if isinstance(option.get("description"), list)
                                         else [option.get("description", "")]).lower():
                wrong.append(f"{role.name}: {name}'s description does not say its default ({value})")
            continue
        if value is not None and option.get("default", "<none>") != value:
            wrong.append(f"{role.name}: {name} default {option.get('default', '<none>')!r} != {value!r}")
        kind = SPEC_TYPES.get(option.get("type"))
        if value is not None and kind and (not isinstance(value, kind) or
                                           (option["type"] in ("int", "float") and isinstance(value, bool))):
            wrong.append(f"{role.name}: {name} default {value!r} is not of type {option['type']}")
        chosen = value if option.get("type") == "list" else [value]
        if "choices" in option and value is not None and not set(chosen) <= set(option["choices"]):
            wrong.append(f"{role.name}: {name} default {value!r} is not among its choices {option['choices']}")
    return wrong


def test_every_role_default_is_documented_in_its_argument_specs_with_the_same_value():
    """Before: dut_routing_networks showed default 1 in ansible-doc while the role took trexlab_networks (make
    configure's NETWORKS); four more options computed from the inventory did not say so at all."""
    roles = sorted(p for p in (COLLECTION / "roles").iterdir() if p.is_dir())
    assert [problem for role in roles for problem in argument_spec_problems(role)] == []


def test_argument_spec_drift_is_found(tmp_path):
    (tmp_path / "meta").mkdir()
    (tmp_path / "defaults").mkdir()
    (tmp_path / "meta/argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": {"main": {"options": {
        "x_rate": {"type": "int", "default": 10, "description": "Rate."},
        "x_cpus": {"type": "list", "default": 1, "description": "CPUs."},
        "x_mode": {"type": "str", "choices": ["a", "b"], "default": "c", "description": "Mode."},
        "x_gone": {"type": "bool", "default": True, "description": "Gone."},
        "x_port": {"type": "int", "description": "Port."}}}}}))
    (tmp_path / "defaults/main.yml").write_text(yaml.safe_dump({
        "x_rate": 20, "x_cpus": "{{ trexlab_cpus }}", "x_mode": "c", "x_port": "80", "x_new": 1}))
    role = tmp_path.name
    assert argument_spec_problems(tmp_path) == [  # safe_dump sorts the options
        f"{role}: x_new undocumented",
        f"{role}: x_cpus is a list of no declared type",
        f"{role}: x_cpus default 1 in the spec, '{{{{ trexlab_cpus }}}}' in defaults/main.yml",
        f"{role}: x_cpus's description does not say its default ({{{{ trexlab_cpus }}}})",
        f"{role}: x_gone has a spec default but none in defaults/main.yml",
        f"{role}: x_mode default 'c' is not among its choices ['a', 'b']",
        f"{role}: x_port default '<none>' != '80'",
        f"{role}: x_port default '80' is not of type int",
        f"{role}: x_rate default 10 != 20",
    ]



#: Values a role writes unquoted into a shell line, each safe for the reason given: planned by trexlab's own code,
#: which checks every name it puts in (rolevalues.check_interface) and quotes what it takes from the user.
PLANNED_SHELL_TEXT = {
    ("netem", "netem_plan.nft"): "impairment.plan's ruleset, fed to nft -c through a quoted here-document",
    ("netem", "command"): "impairment.plan's tc command lines (netem_plan.tc), port names checked",
    ("siit_jool", "'true' if ansible_check_mode else siit_jool_plan.script ~ ((siit_jool_state_dir | "
                  "trexlab.lab.empty_state_dirs) if siit_jool_plan.record is none else '')"):
        "jool_plan's script (siit_jool.py quotes every value it writes) and empty_state_dirs's",
}
#: Forms a shell reads as one word each, or as nothing it could interpret.
SHELL_SAFE = [re.compile(p) for p in (
    r".+ \| quote",  # the value as one word
    r".+ \| map\('quote'\) \| join\(' '\)",  # a list, each element one word
    r".+ \| map\('int'\) \| join\(' '\)",  # numbers
    r"'[\w -]*' if ansible_check_mode else '[\w -]*'",  # one literal or another
    r".+ \| trexlab\.lab\.empty_state_dirs",  # a script of quoted paths (tested above)
)]


def shell_texts(role: Path):
    """(where, text) of everything a role hands to a shell (shell, raw, script: its arguments) or splits into a
    command line (command given as a string), and its shell script templates (templates/*.sh.j2)."""
    def tasks(items):
        for task in items or []:
            for key in ("block", "rescue", "always"):
                yield from tasks(task.get(key))
            yield task

    for path in sorted([*role.glob("tasks/*.yml"), *role.glob("handlers/*.yml")]):
        for task in tasks(yaml.safe_load(path.read_text())):
            for module in ("shell", "raw", "script", "command"):
                args = task.get(f"ansible.builtin.{module}")
                text = args.get("cmd") if isinstance(args, dict) else args
                if isinstance(text, str):
                    yield f"{path.relative_to(role)}: {task.get('name')}", text
    for path in sorted(role.glob("templates/*.sh.j2")):
        # Its comments ({{ ansible_managed }}) are no command.
        yield str(path.relative_to(role)), "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))


def unquoted_shell_values(role: Path) -> list[str]:
    """Each {{ value }} of the role's shell texts that a shell could split into more words or read as syntax: a
    path with a blank or a ';' given as a role variable would run as a second command, as root."""
    found = []
    for where, text in shell_texts(role):
        for expression in re.findall(r"\{\{(.*?)\}\}", text, re.S):
            expression = " ".join(expression.split())
            if (role.name, expression) in PLANNED_SHELL_TEXT or any(p.fullmatch(expression) for p in SHELL_SAFE):
                continue
            found.append(f"{role.name}/{where}: {{{{ {expression} }}}}")
    return found


def test_every_value_a_role_puts_on_a_shell_line_is_quoted():
    """tcp_endpoints handed its state directory and PID files to script (a shell line) unquoted, trex its PID file,
    supervisor and extra arguments (trex_extra_args) to command lines and its supervisor script."""
    roles = sorted(p for p in (COLLECTION / "roles").iterdir() if p.is_dir())
    assert [v for role in roles for v in unquoted_shell_values(role)] == []
    texts = {(role.name, " ".join(e.split())) for role in roles for _, text in shell_texts(role)
             for e in re.findall(r"\{\{(.*?)\}\}", text, re.S)}
    assert set(PLANNED_SHELL_TEXT) <= texts, "an exception for a value no role writes any more"


def test_an_unquoted_value_on_a_shell_line_is_found(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "templates").mkdir()
    (tmp_path / "tasks/main.yml").write_text(yaml.safe_dump([
        {"name": "A", "ansible.builtin.script": "stop.sh {{ x_dir }} {{ x_dir | quote }}"},
        {"name": "B", "block": [{"name": "C", "ansible.builtin.command": {"cmd": "rm {{ x_files | join(' ') }}"}}]},
        {"name": "D", "ansible.builtin.command": {"argv": ["rm", "{{ x_dir }}"]}},  # no shell, no splitting
    ]))
    (tmp_path / "templates/run.sh.j2").write_text("cd {{ x_dir }}\nn={{ x_ports | map('int') | join(' ') }}\n")
    assert unquoted_shell_values(tmp_path) == [
        f"{tmp_path.name}/tasks/main.yml: A: {{{{ x_dir }}}}",
        f"{tmp_path.name}/tasks/main.yml: C: {{{{ x_files | join(' ') }}}}",
        f"{tmp_path.name}/templates/run.sh.j2: {{{{ x_dir }}}}"]


def test_a_role_that_installs_packages_says_that_absent_leaves_them():
    """absent reverses what present applied, but for the Debian packages present installs where missing: removing
    gcc, nftables or a DKMS module the node may use besides would do more than undo the role. Each role that
    installs with apt says so in its README ("left installed by `absent`"); siit_jool, siit_tayga and
    tester_software did not."""
    installing = sorted(role.name for role in (COLLECTION / "roles").iterdir()
                        if any("ansible.builtin.apt:" in tasks.read_text() for tasks in role.glob("tasks/*.yml")))
    assert {"trex", "tester_software", "siit_tayga", "siit_jool"} <= set(installing)
    silent = [name for name in installing if "left installed by `absent`" not in
              " ".join((COLLECTION / "roles" / name / "README.md").read_text().split())]
    assert silent == []
