"""The results store: one directory per run, trials appended the moment they end.

Layout (docs/architecture.md):

    <run>/provenance.json   what produced the run
    <run>/trials.jsonl      one JSON object per trial, flushed and fsynced as it ends
    <run>/trials.earlier.jsonl  a resumed run's earlier log, whole, while its replay writes it back
    <run>/trials.parquet    the same trials, columnar, written when the run finishes (before result.json)
    <run>/result.json       the procedure's result, written last (atomically): absent = unfinished

A crash therefore loses at most the trial that was running, and a run
directory without result.json is recognisably unfinished.

The JSON-lines log is what survives a crash; reading a million of its lines
back costs a minute and gigabytes (every line parsed into Python objects), so
a finished run also keeps its trials as Parquet: one column per flattened
field ("directions.forward.frames_lost"), read by pyarrow without Python
objects per value. ``load_trials`` reads the Parquet copy of finished runs and
the log of unfinished ones (and of runs written before the copy existed).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from trexlab.trial import TrialResult

# numpy, pandas and pyarrow are imported where a table is made or read, not here: every trexlab command imports
# this module (its JSON helpers), and they took half a second of each command's start (trexlab --help, a one-line
# refusal, each trial's CLI call in a campaign).
if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

PROVENANCE = "provenance.json"
TRIALS = "trials.jsonl"
#: A resumed run's earlier log, moved aside (atomically) while its replay writes the records back into TRIALS.
EARLIER_TRIALS = "trials.earlier.jsonl"
TRIALS_COLUMNAR = "trials.parquet"
RESULT = "result.json"
#: Parquet schema metadata: the columns stored as JSON text (values Parquet cannot type as one column: a
#: number in some trials and a string in others, such as a delay "> 10 ms (lost tags)"; lists of objects).
JSON_COLUMNS_KEY = b"trexlab.json_columns"


#: What an infinite number is written as. JSON has no Infinity or NaN (RFC 8259): a file with those tokens is
#: refused by strict parsers (jq, browsers, most languages). NaN ("no value") is written as null; an infinity
#: carries meaning (a latency percentile among lost tags, a transfer that moved nothing), so it is written as
#: this marker string and read back as a float by ``loads``.
INFINITY = "inf"
NEGATIVE_INFINITY = "-inf"


def strict(value):
    """``value`` with NaN as None and infinities as their marker strings, so strict JSON can hold it."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return INFINITY if value > 0 else NEGATIVE_INFINITY
        return value
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value


def restore(value):
    """The inverse of ``strict`` for infinities: marker strings back to floats (null stays None)."""
    if isinstance(value, str):
        return math.inf if value == INFINITY else -math.inf if value == NEGATIVE_INFINITY else value
    if isinstance(value, dict):
        return {k: restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore(v) for v in value]
    return value


def _json_default(value):
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars (a float32 NaN is no float: made strict here)
        return strict(value.item())
    if isinstance(value, set):
        return strict(list(value))
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(data, **kwargs) -> str:
    """Strict JSON text (no NaN or Infinity tokens: allow_nan=False refuses any that slipped through)."""
    return json.dumps(strict(data), allow_nan=False, default=_json_default, **kwargs)


def loads(text: str):
    """JSON written by ``dumps`` (or by older trexlab, with Infinity/NaN tokens), infinities as floats."""
    return restore(json.loads(text))


def first_difference(before, now, prefix: str = "") -> tuple[str, object, object] | None:
    """The first key (dotted, after prefix) at which two JSON values differ, and both values there; None when equal."""
    if isinstance(before, dict) and isinstance(now, dict):
        for key in [*before, *(k for k in now if k not in before)]:
            if (found := first_difference(before.get(key), now.get(key), f"{prefix}{key}.")) is not None:
                return found
        return None
    return None if before == now else (prefix.rstrip(".") or "value", before, now)


def read_json(path: str | os.PathLike):
    return loads(Path(path).read_text())


def fsync_directory(path: Path) -> None:
    """Make a directory's entries durable: a file created or renamed into it is only named there for good once the
    directory itself is fsynced (the file's own fsync keeps its data, not its name: ext4, XFS). Without it a power
    cut could keep a campaign's "done" record and lose the result.json of a repetition it counts."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def first_link(directory: str | os.PathLike) -> Path | None:
    """The first symbolic link in a directory's tree (the directory itself included), or None.

    trexlab appends to and overwrites files in a campaign directory (points.jsonl, campaign.log, trials.jsonl, the
    exports, report.html): one received from someone else could hold links that make those writes land in any file
    of the user's (report.html -> ~/.bashrc). Such a directory is refused before anything is written in it."""
    directory = Path(directory)
    if directory.is_symlink():
        return directory
    if not directory.is_dir():
        return None
    for parent, names, files in os.walk(directory):
        for name in sorted(names + files):
            if os.path.islink(os.path.join(parent, name)):
                return Path(parent) / name
    return None


def make_directories(path: Path) -> None:
    """mkdir -p, each directory it makes durable in its parent (fsync_directory)."""
    missing = []
    existing = Path(path)
    while not existing.exists() and existing != existing.parent:
        missing.append(existing)
        existing = existing.parent
    Path(path).mkdir(parents=True, exist_ok=True)
    for made in reversed(missing):
        fsync_directory(made.parent)


def open_no_link(path: str | os.PathLike, flags: int) -> int:
    """os.open of a file that is not a symbolic link (OSError, ELOOP, where it is one), as a new file 0o666 less the
    umask, as open() makes them. A results root received from someone else may hold a link where trexlab writes
    beside its files (tester-ceilings.json.tmp -> ~/.bashrc): writing through it wrote that file."""
    return os.open(path, flags | os.O_NOFOLLOW, 0o666)


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with os.fdopen(open_no_link(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as f:
        f.write(dumps(data, indent=2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


class RunDir:
    """A run directory being written."""

    def __init__(self, path: str | os.PathLike, provenance: dict):
        self.path = Path(path)
        make_directories(self.path)
        # A rerun of an unfinished run keeps what its log held (trexlab.plan.resume replays it into the search, which
        # writes each replayed record back as it was) and starts the file afresh, a line cut short included. The
        # old log is moved aside, not emptied, until the run no longer needs it (the first trial measured now, or
        # the end): a crash during the replay would otherwise lose every record not yet written back, and the
        # next resume would measure them again. An aside left by such a crash is the whole log: it is kept.
        self.logged = read_trials(self.path)
        self._earlier = self.path / EARLIER_TRIALS
        if not self._earlier.is_file() and self.logged:
            os.replace(self.path / TRIALS, self._earlier)
        if self.logged and (self.path / PROVENANCE).is_file():
            # Those trials were measured by the earlier process, perhaps another trexlab commit or host: the
            # provenance says so, rather than claiming them for this one.
            earlier = read_json(self.path / PROVENANCE)
            provenance = {**provenance, "resumed": [*earlier.get("resumed", []), {
                "started": earlier.get("started"), "git_commit": earlier.get("git_commit"),
                "trexlab_version": earlier.get("trexlab_version"),
                "hostname": (earlier.get("host") or {}).get("hostname"), "trials_logged": len(self.logged)}]}
        write_json_atomic(self.path / PROVENANCE, provenance)
        self._trials = open(self.path / TRIALS, "w")
        (self.path / TRIALS_COLUMNAR).unlink(missing_ok=True)  # a columnar copy of the old log would mislead
        fsync_directory(self.path)  # the log's name (and the old one's), before the first trial is fsynced into it
        self.seq = 0

    def _drop_earlier(self) -> None:
        """The earlier log is no longer needed: its replayed records are in the log (each fsynced), the rest
        dropped (a trial measured now means the replay is over, trexlab.plan.resume)."""
        if self._earlier.is_file():
            self._earlier.unlink()
            fsync_directory(self.path)

    def append_trial(self, result: TrialResult, context: dict | None = None, logged: dict | None = None) -> None:
        """Log a trial the moment it ends; `logged`: the record of a trial replayed from the earlier log, kept as it
        was (its time included)."""
        self.seq += 1
        if logged is None:
            self._drop_earlier()
        record = logged if logged is not None else {"seq": self.seq, "time": time.time(), "context": context or {},
                                                     **result.to_dict()}
        self._trials.write(dumps(record) + "\n")
        self._trials.flush()
        os.fsync(self._trials.fileno())

    def finish(self, result: dict) -> None:
        self._trials.close()
        self._drop_earlier()
        # Before result.json: a finished run always has its columnar copy (a crash in between leaves an
        # unfinished run, whose log is read and which a rerun writes afresh).
        write_columnar(self.path)
        write_json_atomic(self.path / RESULT, result)

    def close(self) -> None:
        if not self._trials.closed:
            self._trials.close()


def is_finished(path: str | os.PathLike) -> bool:
    return (Path(path) / RESULT).is_file()


def run_dirs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Every run directory (one holding provenance.json) at or below the given paths, sorted."""
    found = set()
    for path in paths:
        path = Path(path)
        if (path / PROVENANCE).is_file():
            found.add(path)
        found.update(p.parent for p in path.rglob(PROVENANCE))
    return sorted(found)


def _flatten(prefix: str, data, out: dict) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), value, out)
    else:
        out[prefix] = data


def run_rows(paths: Iterable[str | os.PathLike] | str | os.PathLike) -> list[dict]:
    """One dict per run: run dir, finished flag, flattened provenance and result (lists kept whole)."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    rows = []
    for run in run_dirs(paths):
        row = {"run": str(run), "finished": is_finished(run)}
        _flatten("provenance", read_json(run / PROVENANCE), row)
        if row["finished"]:
            _flatten("result", read_json(run / RESULT), row)
        rows.append(row)
    return rows


def load_runs(paths: Iterable[str | os.PathLike] | str | os.PathLike) -> pd.DataFrame:
    """run_rows as a table, one row per run."""
    import pandas as pd
    return pd.DataFrame(run_rows(paths))


def read_trials(run: str | os.PathLike) -> list[dict]:
    """The trials of one run; a last line cut short by a crash is ignored. While a resumed run replays its earlier
    log, that log is the whole of what was measured (the run's own holds the records written back so far)."""
    records: list[dict] = []
    path = Path(run) / EARLIER_TRIALS
    if not path.is_file():
        path = Path(run) / TRIALS
    if not path.is_file():
        return records
    for line in path.read_text().splitlines():
        try:
            records.append(loads(line))
        except json.JSONDecodeError:
            break
    return records


def flat_trials(records: Iterable[dict]) -> list[dict]:
    """Trial records flattened to one level: {"directions": {"forward": {"frames_lost": 3}}} becomes
    {"directions.forward.frames_lost": 3}; lists stay whole."""
    rows = []
    for record in records:
        row: dict = {}
        _flatten("", record, row)
        rows.append(row)
    return rows


def _needs_json(value) -> bool:
    """A value that Parquet would store as something else than it is (a dict inside a list gains the keys
    of its neighbours as nulls)."""
    return isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value))


def trials_table(records: Sequence[dict]) -> pa.Table:
    """Trial records as an Arrow table: one column per flattened field, in first-seen order. A column whose
    values have no one Arrow type is stored as JSON text and named in the schema metadata, so that
    reading it back gives the values the log holds."""
    import pyarrow as pa
    rows = flat_trials(records)
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    arrays, as_json = [], []
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            if any(_needs_json(v) for v in values):
                raise pa.ArrowInvalid(name)
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else dumps(v) for v in values],
                                   pa.string()))
            as_json.append(name)
    table = pa.table(arrays, names=list(names))
    return table.replace_schema_metadata({JSON_COLUMNS_KEY: json.dumps(as_json)})


def write_columnar(run: str | os.PathLike) -> Path:
    """Write <run>/trials.parquet from the run's trial log (atomically: a reader never sees half a file)."""
    import pyarrow.parquet as pq
    path = Path(run) / TRIALS_COLUMNAR
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(trials_table(read_trials(run)), tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)
    return path


def _json_columns(schema: pa.Schema) -> list[str]:
    return json.loads((schema.metadata or {}).get(JSON_COLUMNS_KEY, b"[]"))


def _combine(tables: list[pa.Table], runs: list[str], columns: list[str] | None = None) -> pa.Table:
    """Several runs' trial tables as one, with a dictionary-encoded "run" column first.

    Runs of different procedures have different columns (latency, TCP records): the union is taken, a
    column missing from a run is null there. A column stored as JSON text in one run is JSON text in all
    (one column, one type). Raises pa.ArrowInvalid when a column has types that cannot be one (a number in
    one run, text in another)."""
    import numpy as np
    import pyarrow as pa
    as_json = sorted({name for t in tables for name in _json_columns(t.schema)})
    for i, table in enumerate(tables):
        for name in as_json:  # encode this run's native column as the JSON text the others hold
            if name in table.column_names and not pa.types.is_string(table.schema.field(name).type):
                text = pa.array([None if v is None else dumps(v) for v in table.column(name).to_pylist()],
                                pa.string())
                table = table.set_column(table.schema.get_field_index(name), name, text)
        tables[i] = table
    schema = pa.unify_schemas([t.schema.remove_metadata() for t in tables], promote_options="permissive")
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns if c in schema.names])
    conformed = []
    for table in tables:
        table = table.replace_schema_metadata(None)
        if table.schema.equals(schema):  # the common case (runs of one procedure): nothing to do
            conformed.append(table)
            continue
        present = set(table.column_names)
        columns = []
        for f in schema:
            if f.name not in present:
                columns.append(pa.nulls(table.num_rows, f.type))
            else:
                column = table.column(f.name)
                columns.append(column if column.type == f.type else column.cast(f.type))
        conformed.append(pa.table(columns, schema=schema))
    table = pa.concat_tables(conformed)
    counts = [t.num_rows for t in conformed]
    run = pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(len(runs), dtype=np.int32), counts)),
                                         pa.array(runs, pa.string()))
    table = table.add_column(0, "run", run)
    return table.replace_schema_metadata({JSON_COLUMNS_KEY: json.dumps(as_json)})


def _read_file(path: Path, columns: list[str] | None = None, threads: bool = False) -> pa.Table:
    """One Parquet file (ParquetFile.read: a third of read_table's cost per file, which dominates for
    runs of a few thousand trials). threads, for one large file: its columns decoded in parallel, and its
    text columns (a few labels repeated: phase, directions, generator) kept dictionary-encoded, categorical
    in pandas: a million rows read in a sixth of the time it takes to make a million strings per column."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    schema = pq.read_schema(path)
    labels = None
    if threads:
        as_json = set(_json_columns(schema))
        labels = [f.name for f in schema if pa.types.is_string(f.type) and f.name not in as_json] or None
    parquet = pq.ParquetFile(path, read_dictionary=labels)
    if columns is not None:
        columns = [c for c in columns if c in parquet.schema_arrow.names]
    return parquet.read(columns=columns, use_threads=threads).replace_schema_metadata(parquet.schema_arrow.metadata)


def _list_dtype(arrow_type: pa.DataType):
    import pandas as pd
    import pyarrow as pa
    return pd.ArrowDtype(arrow_type) if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) else None


def _frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow trial table as the DataFrame load_trials returns, JSON text columns decoded."""
    as_json = _json_columns(table.schema)
    # Lists (frame_size per port, notes) stay Arrow lists in the frame, each read as a Python list when used:
    # a million trials' lists as numpy arrays would cost seconds and be other objects than the log's.
    # split_blocks + self_destruct: each column is handed over and its Arrow buffer freed as it goes, rather
    # than the whole table and a consolidated copy in memory at once (a third less peak memory at 1 M rows).
    frame = table.to_pandas(split_blocks=True, self_destruct=True, types_mapper=_list_dtype)
    del table
    for name in as_json:
        if name in frame:
            frame[name] = frame[name].map(lambda v: v if v is None or v != v else loads(v)).astype(object)
    return frame


def _read_runs(files: list[Path], columns: list[str] | None) -> pd.DataFrame:
    """Runs' Parquet trials as one DataFrame (the union of their columns), with a categorical "run" column."""
    import pandas as pd
    import pyarrow as pa
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        tables = list(pool.map(lambda f: _read_file(f, columns), files))
    try:
        return _frame(_combine(tables, [str(f.parent) for f in files], columns))
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column of two types: pandas joins them as objects
        frames = [_frame(_combine([t], [str(f.parent)], columns)) for t, f in zip(tables, files, strict=True)]
        return pd.concat(frames, ignore_index=True)


# -- a tree of runs in one file ----------------------------------------------------------------

#: Parquet schema metadata of a tree's trials.parquet: {run dir relative to the tree: result.json's
#: mtime_ns}; a run counts as held only while its result.json is the one the file was made from.
RUNS_KEY = b"trexlab.runs"


def _stamp(run: Path) -> int:
    return (run / RESULT).stat().st_mtime_ns


def write_columnar_tree(directory: str | os.PathLike) -> Path | None:
    """Write <directory>/trials.parquet: the trials of every finished run below it in one file, the run
    column relative to the directory (e.g. "<point>/rep-001"). A campaign's export, and what
    load_trials reads for those runs: a thousand runs' own files cost about 10 ms of CPU each, one file
    of a million rows about a second in all (benchmarks/results_loading.py). None when no finished run is there."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    directory = Path(directory)
    runs = [run for run in run_dirs([directory]) if is_finished(run) and run != directory]
    if not runs:
        return None
    path = directory / TRIALS_COLUMNAR
    labels = [run.relative_to(directory).as_posix() for run in runs]
    stamps = {label: _stamp(run) for label, run in zip(labels, runs, strict=True)}
    if path.is_file() and json.loads((pq.read_schema(path).metadata or {}).get(RUNS_KEY, b"{}")) == stamps:
        return path  # it holds these runs as they are (a resumed campaign that had nothing left to run)
    tables = [_read_file(run / TRIALS_COLUMNAR) if (run / TRIALS_COLUMNAR).is_file()
              else trials_table(read_trials(run)) for run in runs]
    try:
        table = _combine(tables, labels)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # a column of two types across runs: load_trials reads the runs one by one
    table = table.replace_schema_metadata({**table.schema.metadata, RUNS_KEY: json.dumps(stamps)})
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)
    return path


def _trees(paths: Iterable[Path]) -> list[Path]:
    """Directories at or below the paths holding a tree's trials.parquet (not a run's own)."""
    found = set()
    for path in paths:
        for file in [path / TRIALS_COLUMNAR, *path.rglob(f"*/{TRIALS_COLUMNAR}")]:
            if file.is_file() and not (file.parent / PROVENANCE).is_file():
                found.add(file.parent)
    return sorted(found)


def _read_tree(directory: Path, runs: set[Path], columns: list[str] | None) -> tuple[pd.DataFrame, set[Path]]:
    """The trials of those of the runs a tree's file holds as they are now; and which runs those are."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    path = directory / TRIALS_COLUMNAR
    metadata = pq.read_schema(path).metadata or {}
    stamps = json.loads(metadata.get(RUNS_KEY, b"{}"))
    held = set()
    for label, stamp in stamps.items():
        run = directory / label
        if run in runs and is_finished(run) and _stamp(run) == stamp:
            held.add(run)
    if not held:
        return pd.DataFrame(), held
    table = _read_file(path, None if columns is None else ["run", *columns], threads=True)
    if len(held) < len(stamps):
        keep = pa.array([label for label in stamps if directory / label in held])
        table = table.filter(pc.is_in(table.column("run").cast(pa.string()), value_set=keep))
    # The run column holds paths relative to the tree (the file stays valid when the tree is moved): made
    # absolute on the dictionary, a few thousand strings, not on every row.
    prefix = pa.scalar(directory.as_posix() + "/")
    labels = table.column("run").cast(pa.dictionary(pa.int32(), pa.string()))
    labels = pa.chunked_array([pa.DictionaryArray.from_arrays(chunk.indices, pc.binary_join_element_wise(
        prefix, chunk.dictionary, "")) for chunk in labels.chunks], type=labels.type)
    return _frame(table.set_column(0, "run", labels)), held


def load_trials(paths: Iterable[str | os.PathLike] | str | os.PathLike,
                columns: Sequence[str] | None = None, columnar: bool = True) -> pd.DataFrame:
    """One row per trial of every run found: run dir plus the flattened trial record.

    Finished runs are read from Parquet (a campaign's trials.parquet for the runs it holds, else the
    run's own), the others (unfinished, or written before trexlab kept Parquet) from their log;
    ``columnar=False`` reads every log. ``columns`` (flattened names) reads only those: far less to read
    from Parquet. Rows come grouped by where they were read from."""
    import pandas as pd
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    roots = [Path(p) for p in paths]
    columns = list(columns) if columns is not None else None
    runs = set(run_dirs(roots))
    frames = []
    if columnar:
        for tree in _trees(roots):
            frame, held = _read_tree(tree, runs, columns)
            runs -= held
            frames.append(frame)
    parquet, logged = [], []
    for run in sorted(runs):
        if columnar and is_finished(run) and (run / TRIALS_COLUMNAR).is_file():
            parquet.append(run / TRIALS_COLUMNAR)
        else:
            logged.append(run)
    if parquet:
        frames.append(_read_runs(parquet, columns))
    rows = [{"run": str(run), **row} for run in logged for row in flat_trials(read_trials(run))]
    if rows:
        logged_frame = pd.DataFrame(rows)
        if columns is not None:
            logged_frame = logged_frame[["run", *[c for c in columns if c in logged_frame]]]
        frames.append(logged_frame)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    if len(frames) == 1:
        return frames[0]
    for frame in frames:  # one run column across the sources
        frame["run"] = frame["run"].astype(str)
    return pd.concat(frames, ignore_index=True)



# -- campaigns: one line per sweep-point attempt ------------------------------------------------

POINTS = "points.jsonl"


def append_point_record(campaign: str | os.PathLike, record: dict) -> None:
    """Append one point attempt (done / failed + error) to a campaign's log, durably."""
    path = Path(campaign) / POINTS
    new = not path.exists()
    with open(path, "a+b") as f:
        # A line cut short by a crash is ended first: appended to it, this record would be part of a line that is
        # no JSON and be skipped too (a point's "done" lost).
        cut = f.tell() > 0 and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n"
        f.write((("\n" if cut else "") + dumps(record) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    if new:
        fsync_directory(path.parent)


class DamagedRecord(ValueError):
    """A campaign's record that is not what trexlab writes (a received or edited directory): one line naming it."""


def read_point_log(campaign: str | os.PathLike) -> dict[str, dict]:
    """The last recorded attempt of each point of a campaign (a line cut short by a crash is skipped: it is not JSON);
    DamagedRecord for a line that is JSON but no point's record, which no crash makes."""
    latest: dict[str, dict] = {}
    path = Path(campaign) / POINTS
    if path.is_file():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            try:
                record = loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(record, dict) or not isinstance(record.get("point"), str):
                raise DamagedRecord(f"{path}: line {number}: not a point's record (a mapping with the point's name)")
            latest[record["point"]] = record
    return latest
