"""The one place trexlab reads YAML that a user gives it: experiment specs, --config files, lab inventories.

A spec is something people share, so reading one must not be able to hurt the tool: the file is read only
up to MAX_BYTES, must be UTF-8, may not repeat a key (PyYAML keeps the last one silently, so a spec could
read one loss tolerance and run at another), may hold no integer beyond 64 bits, may use only a few aliases,
and may not expand beyond MAX_NODES values (aliases share objects, so a small file can stand for an
exponential tree that every later walk of it, schema validation included, would expand). It holds JSON's
types only (NOT_JSON: everything after it, provenance and a point's id, is JSON), and its keys are printable
text (an error names an unknown key as it is: a line break or a terminal's escape sequence in one reached the
terminal). Every refusal is one line naming the file, and the line and key where there is one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

#: Largest file read, bytes: the shipped specs and inventories are a few KB.
MAX_BYTES = 1 << 20
#: Alias references allowed in one file: enough to share a block or two, far from a bomb.
MAX_ALIASES = 32
#: Values (scalars, lists, mappings) the loaded document may expand to, aliases counted at each use.
MAX_NODES = 100_000
#: Integers beyond 64 bits mean nothing in a spec, and Python refuses to print (or read in decimal) one of more
#: than 4300 digits: an error message about it would be a traceback instead.
MAX_INT_BITS = 64
#: The YAML types a safe load makes that JSON has not, by tag: a spec's dates or binary values mean nothing to
#: trexlab, and a sweep value of one was a traceback (a point's id is a JSON digest of its values).
NOT_JSON = {"tag:yaml.org,2002:timestamp": "date or time (quote it to give text)",
            "tag:yaml.org,2002:binary": "!!binary value", "tag:yaml.org,2002:set": "!!set",
            "tag:yaml.org,2002:omap": "!!omap", "tag:yaml.org,2002:pairs": "!!pairs"}


class YamlInputError(ValueError):
    """A YAML input refused; str() is one line naming the file (and line and key where known)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that counts aliases and refuses duplicate keys (pure Python: the hooks need it)."""

    def __init__(self, stream, source: str):
        super().__init__(stream)
        self.source = source
        self.aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                line = self.peek_event().start_mark.line + 1
                raise YamlInputError(f"{self.source}: line {line}: more than {MAX_ALIASES} aliases (*name); "
                                     "write the values out")
        return super().compose_node(parent, index)

    def construct_yaml_int(self, node):
        try:
            value = super().construct_yaml_int(node)
        except ValueError:  # more decimal digits than Python converts
            value = None
        if value is None or abs(value).bit_length() > MAX_INT_BITS:
            raise YamlInputError(f"{self.source}: line {node.start_mark.line + 1}: an integer of more than "
                                 f"{MAX_INT_BITS} bits")
        return value

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str) or not key.isprintable():
                    raise YamlInputError(f"{self.source}: line {key_node.start_mark.line + 1}: key {key!r}: allowed "
                                         "printable text")
                if key in seen:
                    raise YamlInputError(f"{self.source}: line {key_node.start_mark.line + 1}: duplicate key "
                                         f"{key!r} (first on line {seen[key]})")
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _not_json(loader: _Loader, node) -> None:
    raise YamlInputError(f"{loader.source}: line {node.start_mark.line + 1}: a YAML {NOT_JSON[node.tag]}; allowed "
                         "JSON's types: text, numbers, true/false, null, lists and mappings")


for _tag in NOT_JSON:
    _Loader.add_constructor(_tag, _not_json)


def _count(value, budget: list[int], source: str) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise YamlInputError(f"{source}: expands to more than {MAX_NODES} values (aliases inside aliases?)")
    if isinstance(value, dict):
        for key, item in value.items():
            _count(key, budget, source)
            _count(item, budget, source)
    elif isinstance(value, list):
        for item in value:
            _count(item, budget, source)


def read_text(path: str | os.PathLike, label: str | None = None) -> str:
    """A regular file's text, at most MAX_BYTES, UTF-8; YamlInputError otherwise. label names it in errors."""
    source = label or str(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise YamlInputError(f"{source}: {(exc.strerror or str(exc)).lower()}") from None
    if not stat.S_ISREG(info.st_mode):
        raise YamlInputError(f"{source}: not a regular file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)  # the size stat gave may be stale: read no more than the limit
    except OSError as exc:
        raise YamlInputError(f"{source}: {(exc.strerror or str(exc)).lower()}") from None
    if len(data) > MAX_BYTES:
        raise YamlInputError(f"{source}: larger than {MAX_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlInputError(f"{source}: not UTF-8 text (byte {exc.start})") from None


def loads(text: str, source: str = "<yaml>"):
    """Parse YAML text with the limits above."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlInputError(f"{source}: larger than {MAX_BYTES // 1024} KiB")
    loader = _Loader(text, source)
    try:
        data = loader.get_single_data()
    except YamlInputError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise YamlInputError(f"{source}:{line} not valid YAML ({problem})") from None
    except RecursionError:
        raise YamlInputError(f"{source}: nested too deeply") from None
    finally:
        loader.dispose()
    try:
        _count(data, [MAX_NODES], source)
    except RecursionError:
        raise YamlInputError(f"{source}: nested too deeply (or refers to itself)") from None
    return data


def load(path: str | os.PathLike, label: str | None = None):
    """Read and parse a YAML file with the limits above; label names it in errors (default the path)."""
    source = label or str(Path(path))
    return loads(read_text(path, source), source)
