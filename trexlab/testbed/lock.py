"""One run per lab at a time (a campaign, or a single CLI run such as `trexlab throughput`), and nothing left
running by a run that crashed.

Two runs on one lab would reconfigure each other's DUTs and count each other's frames. A run holds an exclusive
flock on <inventory dir>/lab.lock for as long as it runs; the kernel releases it when the holder dies, however it
dies, so a lock is stale exactly when flock can take it. The file names the holder (what runs, its PID) for the
one-line refusal a second run gets.

A run killed with SIGKILL leaves its children running: the swtester of the trial in progress, an ansible-playbook
configuring a DUT. While it runs, a run records its descendants (PID, start time and command line, rewritten
whenever they change) in <inventory dir>/lab.procs.json. The run that takes a stale lock over stops those of them
that still run, each verified by its start time and /proc/<pid>/cmdline (a PID the kernel has since given to
another program is left alone), before it configures anything.

make run asks its campaign's refusals before its recipe (trexlab campaign --check), so that a refusal is one line,
not the campaign's and make's "*** [Makefile:NN: run] Error 2": the check and the recipe's run are two processes,
and a lab another run took between them was refused in the recipe, in those two lines. So that check, told the make
it runs for (HELD_FOR_ENV), takes the lock and keeps it in a process of its own (hold_for_next_run) until the run
that make's recipe starts takes it over: the open file the lock is held on, passed over a Unix socket (the kernel's
flock belongs to that open file), so that no run can take the lab in between; not asked for, the lock is let go
when that make ends (a refusal of another goal, Ctrl-C).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from trexlab.results.store import write_json_atomic
from trexlab.testbed.inventory import Lab, LabError

#: Seconds between two looks at the run's descendants: a child younger than this at a SIGKILL is missed.
SCAN_INTERVAL = 0.2
#: Seconds a leftover process gets to end on SIGTERM before SIGKILL.
TERM_GRACE = 3.0
#: Seconds to wait, after SIGKILL, for the kernel to end them.
KILL_WAIT = 5.0
#: The environment variable naming the make process (its PID) whose check holds the lab for its recipe's run: the
#: Makefile sets it for make run's check and recipe only.
HELD_FOR_ENV = "TREXLAB_LAB_HELD_FOR"
#: Seconds between two looks, by the process holding a lab for make's recipe, at whether that make still runs.
HELD_FOR_POLL = 0.2
#: Seconds the recipe's run waits for the holding process to pass it the lock.
HAND_OVER_WAIT = 10.0


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after "pid (comm) " (state first), or None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # comm may itself contain spaces and parentheses


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent PID, start time in clock ticks since boot) of a process, or None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else (int(fields[1]), int(fields[19]))


def _started(pid: int) -> int | None:
    """A process's start time (clock ticks since boot), which tells it from a later one given its PID; None: gone."""
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _is_make_above(pid: int) -> bool:
    """Whether process pid is a make this process runs under (its parent's parent, or further up)."""
    above = os.getppid()
    while above > 1:
        if above == pid:
            return Path((_cmdline(pid) or [""])[0]).name in ("make", "gmake")
        stat = _stat(above)
        above = stat[0] if stat else 0
    return False


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")[:-1]


def descendants(root: int) -> list[dict]:
    """Every living descendant of process root: [{pid, start, cmdline}]."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))):
            children.setdefault(stat[0], []).append(int(entry))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        stat, cmdline = _stat(pid), _cmdline(pid)
        if stat and cmdline:
            found.append({"pid": pid, "start": stat[1], "cmdline": cmdline})
        todo.extend(children.get(pid, []))
    return sorted(found, key=lambda p: p["pid"])


def _same_process(recorded: dict) -> bool:
    stat = _stat(recorded["pid"])
    return stat is not None and stat[1] == recorded["start"] and _cmdline(recorded["pid"]) == recorded["cmdline"]


def _ended(recorded: dict) -> bool:
    """The recorded process has ended: its PID gone, a zombie, or another process's. Not yet while it exits: its
    command line is empty as soon as it has let its memory go, which takes a while for a large process, and it still
    holds its sockets and files then (the kernel closes them after): _same_process says 'not the same' that early."""
    fields = _stat_fields(recorded["pid"])
    return fields is None or fields[0] in ("Z", "X") or int(fields[19]) != recorded["start"]


def stop_leftovers(recorded: list[dict], grace: float = TERM_GRACE) -> list[dict]:
    """SIGTERM, then after grace SIGKILL, each recorded process that is still the same process; returns them."""
    alive = [p for p in recorded if _same_process(p)]
    for p in alive:
        try:
            os.kill(p["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(_ended(p) for p in alive):
        time.sleep(0.05)
    for p in alive:
        if not _ended(p):  # still exiting, or it ignored SIGTERM: its PID is still its own (start time)
            try:
                os.kill(p["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
    # The next run starts once they have ended, not while the kernel still tears them down.
    deadline = time.monotonic() + KILL_WAIT
    while time.monotonic() < deadline and not all(_ended(p) for p in alive):
        time.sleep(0.05)
    return alive


class LabLock:
    """with LabLock(lab, "campaign experiment/campaign-id", progress): a run's hold on its lab; holder says what
    runs (a campaign, "trexlab throughput"), for the refusal a second run gets."""

    def __init__(self, lab: Lab, holder: str, progress: Callable[[str], None] = lambda line: None,
                 directory: Path | None = None):
        where = Path(directory) if directory else lab.inventory.parent
        self.lab_name, self.holder, self.progress = lab.name, holder, progress
        self.lock_path, self.procs_path = where / "lab.lock", where / "lab.procs.json"
        self._file: TextIO | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LabLock:
        handed = self._handed_over()
        if handed is not None:  # held for this run by make run's check, which passed on the line it found there
            file, previous = handed
        else:
            file, previous = self._take()
        self._file = file
        if previous:  # the holder died without letting go: a crash, a SIGKILL, a power cut
            stopped = self._take_over()
            self.progress(f"lab {self.lab_name}: took over the lock of {previous}, which is no longer running"
                          + (f"; stopped what it left running: {self._describe(stopped)}" if stopped else ""))
        self._write_holder(file)
        self._thread = threading.Thread(target=self._record, name="lablock", daemon=True)
        self._thread.start()
        return self

    def _take(self) -> tuple[TextIO, str]:
        """The lock file, opened and its flock taken, and the holder line found in it (a crashed run's; '' when
        none), or the refusal naming its holder."""
        try:
            file = open(self.lock_path, "a+")  # noqa: SIM115 -- held open for the run's lifetime
        except OSError as exc:
            raise LabError(f"lab {self.lab_name}: cannot open its lock {self.lock_path}: "
                           f"{exc.strerror}") from None
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip()
            file.close()
            raise self._in_use(holder) from None
        file.seek(0)
        return file, file.read().strip()

    def _address(self, owner: int, st: os.stat_result) -> bytes:
        """The abstract Unix socket the lock of this lock file, held for make process owner, is handed over on."""
        return f"\0trexlab-lab-lock/{owner}/{st.st_dev}/{st.st_ino}".encode()

    def hold_for_next_run(self) -> None:
        """Where HELD_FOR_ENV names a make process (make run's check): take the lock, refused as __enter__ is, and
        keep it in a child process of its own, its stdin, stdout and stderr closed (make's $(shell) reads until
        they are), until a run of that make's takes it over (__enter__) or that make ends. Else nothing."""
        owner = os.environ.get(HELD_FOR_ENV, "")
        started = _started(int(owner)) if owner.isdigit() and _is_make_above(int(owner)) else None
        if started is None:  # not a make this check runs under (a value left in a shell): no lab held for it
            return
        file, previous = self._take()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(self._address(int(owner), os.fstat(file.fileno())))
            server.listen(1)
        except OSError:  # that make holds this lab already (make run run): its run takes it over from that holder
            server.close()
            file.close()
            return
        if os.fork():
            server.close()
            file.close()
            return
        handed = False
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            self._write_holder(file)
            server.settimeout(HELD_FOR_POLL)
            while not handed and _started(int(owner)) == started:
                try:
                    connection, _ = server.accept()
                except TimeoutError:
                    continue
                with connection:
                    socket.send_fds(connection, [previous.encode() or b"\n"], [file.fileno()])
                handed = True
        finally:
            if not handed:  # its holder line goes with it: a lock file naming a holder means a crash
                file.seek(0)
                file.truncate()
            os._exit(0)

    def _handed_over(self) -> tuple[TextIO, str] | None:
        """The lock make run's check holds for this run (hold_for_next_run), taken over: the open file it is held
        on, verified as this lab's lock file and held, and the holder line the check found there. None where no
        lock is held for it (the run then takes it as any run does)."""
        owner = os.environ.pop(HELD_FOR_ENV, "")  # for this run only, not the processes it starts
        try:
            st = os.stat(self.lock_path)
        except OSError:
            return None
        if not owner.isdigit():
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            try:
                connection.settimeout(HAND_OVER_WAIT)
                connection.connect(self._address(int(owner), st))
                message, fds, _, _ = socket.recv_fds(connection, 4096, 1)
            except OSError:
                return None
        if not fds:
            return None
        file = open(fds[0], "a+")  # noqa: SIM115 -- held open for the run's lifetime
        try:
            passed = os.fstat(file.fileno())
            if (passed.st_dev, passed.st_ino) != (st.st_dev, st.st_ino):
                raise OSError("another file")
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held already on this open file: passes at once
        except OSError:
            file.close()
            return None
        return file, message.decode(errors="replace").strip()

    def _write_holder(self, file: TextIO) -> None:
        file.seek(0)
        file.truncate()
        file.write(f"{self.holder} (PID {os.getpid()})\n")
        file.flush()

    def _in_use(self, holder: str) -> LabError:
        return LabError(f"lab {self.lab_name} is in use by {holder or 'another run'}: one run per lab at a time")

    def check_free(self) -> None:
        """The refusal __enter__ gives while another run holds the lock, raised without taking it (make run asks it
        before its recipe, so that through make the refusal is one line): even a try of the lock (LOCK_NB) would
        refuse a run that starts at that moment. The kernel's table of held flocks (/proc/locks: major:minor in
        hex, then the inode) tells whether one is held on the file; where it cannot tell, the run's own __enter__
        still refuses."""
        try:
            st = os.stat(self.lock_path)
            locks = Path("/proc/locks").read_text()
        except OSError:
            return  # no lock file: no run has held this lab
        key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        if any("FLOCK" in line.split() and key in line.split() for line in locks.splitlines()):
            try:
                holder = self.lock_path.read_text().strip()
            except OSError:
                holder = ""
            raise self._in_use(holder)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.procs_path.unlink(missing_ok=True)
        # Emptied before it is let go: a lock file with a holder in it means that holder did not end cleanly.
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            self._file.close()
            self._file = None

    def _take_over(self) -> list[dict]:
        try:
            recorded = json.loads(self.procs_path.read_text()).get("processes", [])
        except (OSError, ValueError, AttributeError):
            return []
        return stop_leftovers(recorded)

    @staticmethod
    def _describe(processes: list[dict]) -> str:
        return ", ".join(f"{Path(p['cmdline'][0]).name} (PID {p['pid']})" for p in processes)

    def _record(self) -> None:
        last = None
        while True:
            now = descendants(os.getpid())
            if now != last:
                write_json_atomic(self.procs_path, {"holder": self.holder, "pid": os.getpid(), "processes": now})
                last = now
            if self._stop.wait(SCAN_INTERVAL):
                return
