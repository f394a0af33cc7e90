"""One long-lived tool child per `Stream`: read record by record, restarted, always reaped.

The child runs in its own session (like every call, see `sources.procs`), its stdout is read by
the event loop without threads, and only the newest record is kept (parsing is the caller's,
once per poll, on the newest record only). What can happen to a child, and what follows:

* it prints a record: `ToolStream.latest` is replaced (with the monotonic time it arrived);
  a record that ends only by a pause in the output (the rows of one sample) is complete
  `SETTLE_S` after its last row: at the first look at `latest` from then on, or by a timer
  while someone waits for a record (so no wake-up of its own for every sample);
* it exits, crashes or cannot be started: the exit is described in `ToolStream.exit_message`
  and a new child is started after 1, 2, 4 ... `MAX_BACKOFF_S` seconds (back to 1 s once a
  child has lived `RESET_AFTER_S`), so a tool that dies at once is not forked in a loop;
* it goes quiet: the caller sees the newest record's age; after ``silent_restart_s`` without
  a line the child is killed (group and all) and restarted like one that exited;
* it prints a line longer than ``cap`` bytes: it is killed and restarted (garbage by
  definition: a 16-card record is a few KiB);
* `ToolStream.stop` (the monitor closes): its whole process group is killed and reaped, and
  no restart follows. `sources.procs.kill_running_tools` reaches stream children too.

If the monitor itself is SIGKILLed, the child's next write fails on the closed pipe (SIGPIPE,
or EIO on a pty), so a tool printing every second dies within a period.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpusat_tui.collectors.records import Framer
from gpusat_tui.sources.polling import procs

__all__ = ["MAX_BACKOFF_S", "RESET_AFTER_S", "Record", "ToolStream", "stop_all_streams"]

#: Longest wait before restarting a child that keeps exiting.
MAX_BACKOFF_S = 30.0
#: A child that lived this long resets the back-off (it was working, then died once).
RESET_AFTER_S = 30.0
#: How long the stream must pause after a row before a row-group record is complete.
SETTLE_S = 0.05
#: Stderr kept for the exit message.
STDERR_KEEP = 4096
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

#: Every stream not yet stopped, for `stop_all_streams` (interpreter exit, a dying front end).
_STREAMS: set[ToolStream] = set()


@dataclass(frozen=True)
class Record:
    """One record as the tool printed it."""

    text: str
    #: Counts records over the whole life of the stream (restarts included).
    seq: int
    #: `time.monotonic()` when its last line arrived.
    at: float


def stop_all_streams() -> int:
    """Stop every running stream (kill and reap its child); returns how many there were."""
    streams = list(_STREAMS)
    for stream in streams:
        stream.stop()
    return len(streams)


atexit.register(stop_all_streams)
procs.KILL_HOOKS.append(stop_all_streams)


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


class ToolStream:
    """Runs ``argv`` for as long as the monitor runs and keeps its newest record.

    Must be started from inside a running event loop (its reads are loop callbacks). Never
    raises from a callback: everything a child does ends up in ``latest``/``exit_message``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        framer: Callable[[], Framer],
        *,
        use_pty: bool = False,
        config: str | None = None,
        cap: int = procs.MAX_OUTPUT_BYTES,
        silent_restart_s: float | None = 30.0,
        first_backoff_s: float = 1.0,
        max_backoff_s: float = MAX_BACKOFF_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.argv = list(argv)
        self._framer_factory = framer
        self._use_pty = use_pty
        self._config_text = config
        self._config_dir: str | None = None
        self.cap = cap
        self.silent_restart_s = silent_restart_s
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self.clock = clock
        #: The newest record, kept across restarts (it still stands in, with its age): see
        #: `latest`.
        self._latest: Record | None = None
        #: How the last child ended ("exited with status 1: no such device"), None while the
        #: first child runs.
        self.exit_message: str | None = None
        #: What kind of failure that was, as a `ToolError.kind`: "exit" (it exited or
        #: crashed), "timeout" (killed for silence), "parse" (a line past the cap),
        #: "missing" (it cannot be started any more).
        self.exit_kind = "exit"
        #: Children started, and how many ended.
        self.starts = 0
        self.exits = 0
        #: Records the current child printed (0: none yet, e.g. it refused its arguments).
        self.child_records = 0
        #: `clock()` time of the next restart while waiting for one, else None.
        self.restart_at: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._out_fd: int | None = None
        self._err_fd: int | None = None
        self._buf = bytearray()
        self._err = bytearray()
        self._framer: Framer | None = None
        self._seq = 0
        self._started_at = 0.0
        self._last_line_at = 0.0
        self._failures = 0
        self._settle: asyncio.TimerHandle | None = None
        #: `clock()` time at which the pending rows become a record (None: none pending), and
        #: how many `wait_record` calls are waiting (only they need a timer for it).
        self._settle_due: float | None = None
        self._waiting = 0
        self._restart: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = False
        self._new_record = asyncio.Event()
        #: (child pid, its /proc schedstat and stat descriptors) for `cpu_s`.
        self._cpu_fds: tuple[int, int, int] | None = None

    # --- life cycle --------------------------------------------------------------------------

    @property
    def latest(self) -> Record | None:
        """The newest record, kept across restarts; pending rows whose output paused
        `SETTLE_S` ago are made a record first (stamped with that moment, as a timer would
        have). Settling here rather than by a timer saves the event loop one wake-up per
        sample, the largest part of a quiet loop's CPU at 1 Hz (~0.2 ms a wake-up measured
        on the 2-core reference machine)."""
        self._settle_if_due()
        return self._latest

    @property
    def running(self) -> bool:
        return self._proc is not None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the first child. OSError when it cannot be started at all (missing, denied)."""
        self._loop = asyncio.get_running_loop()
        _STREAMS.add(self)
        try:
            self._spawn()
        except OSError:
            self.stop()
            raise

    def stop(self) -> None:
        """Kill and reap the child (its whole group); no restart follows. Safe to call twice."""
        self._stopped = True
        _STREAMS.discard(self)
        for handle in (self._settle, self._restart):
            if handle is not None:
                handle.cancel()
        self._settle = self._restart = None
        self._settle_due = None
        self.restart_at = None
        self._end_child(kill=True)
        if self._config_dir is not None:
            shutil.rmtree(self._config_dir, ignore_errors=True)
            self._config_dir = None

    async def wait_record(self, timeout: float) -> Record | None:
        """Wait up to ``timeout`` for a record newer than the current one (or a child's exit)."""
        seen = self.latest.seq if self.latest is not None else -1
        exits = self.exits
        deadline = self.clock() + timeout
        self._waiting += 1
        try:
            while not self._stopped:
                if (self.latest is not None and self.latest.seq != seen) or self.exits != exits:
                    break
                left = deadline - self.clock()
                if left <= 0:
                    break
                self._new_record.clear()
                self._arm_settle_timer()  # rows already pending settle while we wait
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._new_record.wait(), left)
        finally:
            self._waiting -= 1
        return self.latest

    def check_silence(self) -> bool:
        """Kill a child that printed nothing for ``silent_restart_s``; True when it did."""
        if self._proc is None or self.silent_restart_s is None:
            return False
        quiet = self.clock() - self._last_line_at
        if quiet < self.silent_restart_s:
            return False
        self._end_child(kill=True)
        self._child_ended(f"printed nothing for {quiet:.0f} s; killed", "timeout")
        return True

    def cpu_s(self) -> float:
        """CPU seconds the running child has used, with the children it reaped (Linux /proc:
        the leader's scheduler time in ns, its reaped children's in clock ticks); 0 when no
        child runs or /proc cannot say."""
        pid = self.pid
        if pid is None:
            return 0.0
        try:
            fds = self._cpu_fds
            if fds is None or fds[0] != pid:
                # Kept open for the child's life (read every poll: a pread each instead of
                # two opens and closes); bound to that process, so never another's figures.
                self._close_cpu_fds()
                sched = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY)
                try:
                    stat = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
                except OSError:
                    os.close(sched)
                    raise
                fds = self._cpu_fds = (pid, sched, stat)
            own = int(os.pread(fds[1], 256, 0).split()[0]) / 1e9
            fields = os.pread(fds[2], 4096, 0).rsplit(b")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            return 0.0
        # After the ")" ending the command name: field 3 is fields[0]; cutime/cstime are 16/17.
        return own + (int(fields[13]) + int(fields[14])) / _CLK_TCK

    def _close_cpu_fds(self) -> None:
        fds, self._cpu_fds = self._cpu_fds, None
        if fds is not None:
            for fd in fds[1:]:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def silent_for(self) -> float:
        """Seconds since the current child printed its last line (or started)."""
        return max(0.0, self.clock() - self._last_line_at)

    # --- children ----------------------------------------------------------------------------

    def _argv(self) -> list[str]:
        if self._config_text is None:
            return self.argv
        if self._config_dir is None:
            self._config_dir = tempfile.mkdtemp(prefix="gpusat-stream-")
        path = os.path.join(self._config_dir, "config.json")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self._config_text)
        return [arg.replace("{config}", path) for arg in self.argv]

    def _spawn(self) -> None:
        assert self._loop is not None
        argv = self._argv()
        master = slave = None
        if self._use_pty:
            master, slave = os.openpty()
            import tty

            tty.setraw(slave)  # no CR/LF translation, no echo: bytes as the tool wrote them
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=slave if slave is not None else subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            for fd in (master, slave):
                if fd is not None:
                    os.close(fd)
            raise
        if slave is not None:
            os.close(slave)
        procs.RUNNING.add(proc)
        self._proc = proc
        assert proc.stderr is not None
        if master is not None:
            self._out_fd = master
        else:
            assert proc.stdout is not None  # a pipe when there is no pty
            self._out_fd = proc.stdout.fileno()
        self._err_fd = proc.stderr.fileno()
        self._buf = bytearray()
        self._err = bytearray()
        self._framer = self._framer_factory()
        self.starts += 1
        self.child_records = 0
        self._started_at = self._last_line_at = self.clock()
        for fd in (self._out_fd, self._err_fd):
            os.set_blocking(fd, False)
        self._loop.add_reader(self._out_fd, self._on_stdout)
        self._loop.add_reader(self._err_fd, self._on_stderr)

    def _on_stdout(self) -> None:
        fd = self._out_fd
        if fd is None:
            return
        self._settle_if_due()  # rows that paused before this chunk are a record already
        chunk = procs.read_ready(fd)
        if chunk is None:
            return
        if not chunk:
            self._on_eof()
            return
        self._last_line_at = self.clock()
        self._buf += chunk
        if b"\n" in chunk:
            *lines, rest = bytes(self._buf).split(b"\n")
            self._buf = bytearray(rest)
            for raw in lines:
                self._line(raw.decode("utf-8", errors="replace").rstrip("\r"))
        if len(self._buf) > self.cap:
            self._end_child(kill=True)
            self._child_ended(f"printed a line longer than {self.cap} bytes; killed", "parse")
            return
        self._arm_settle()

    def _line(self, line: str) -> None:
        assert self._framer is not None
        for text in self._framer.feed(line):
            self._record(text)

    def _record(self, text: str, at: float | None = None) -> None:
        self._seq += 1
        self.child_records += 1
        self._latest = Record(text=text, seq=self._seq, at=self.clock() if at is None else at)
        self._new_record.set()

    def _arm_settle(self) -> None:
        """New output: pending rows settle `SETTLE_S` from now (by a timer only for a
        waiter: see `latest`)."""
        if self._settle is not None:
            self._settle.cancel()
            self._settle = None
        if self._framer is not None and self._framer.pending and self._loop is not None:
            self._settle_due = self.clock() + SETTLE_S
            self._arm_settle_timer()
        else:
            self._settle_due = None

    def _arm_settle_timer(self) -> None:
        if (self._waiting and self._settle is None and self._settle_due is not None
                and self._loop is not None):
            self._settle = self._loop.call_later(
                max(0.0, self._settle_due - self.clock()), self._on_settle
            )

    def _settle_if_due(self) -> None:
        due = self._settle_due
        if due is not None and self.clock() >= due:
            self._on_settle(at=due)

    def _on_settle(self, at: float | None = None) -> None:
        """The pending rows are a record (``at``: when they settled; None: now)."""
        if self._settle is not None:
            self._settle.cancel()
            self._settle = None
        if at is None and self._settle_due is not None and self.clock() >= self._settle_due:
            at = self._settle_due  # the timer's moment, not its lateness
        self._settle_due = None
        if self._framer is not None:
            for text in self._framer.flush():
                self._record(text, at)

    def _on_stderr(self) -> None:
        fd = self._err_fd
        if fd is None:
            return
        chunk = procs.read_ready(fd)
        if chunk is None:
            return
        if not chunk:
            assert self._loop is not None
            self._loop.remove_reader(fd)
            return
        self._err = (self._err + chunk)[-STDERR_KEEP:]

    def _on_eof(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if self._buf.strip():
            self._line(self._buf.decode("utf-8", errors="replace").rstrip("\r"))
        self._buf = bytearray()
        self._on_settle()
        # The output closed: the exit status follows within microseconds, normally; a child
        # that closed its output and lingers is ended with its group.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
        returncode = proc.poll()
        self._on_stderr_drain()
        self._end_child(kill=True)
        message = _describe_exit(returncode) if returncode is not None else "closed its output"
        detail = self._first_err_line()
        self._child_ended(f"{message}: {detail}" if detail else message)

    def _on_stderr_drain(self) -> None:
        fd = self._err_fd
        if fd is None:
            return
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, 65536):
                self._err = (self._err + chunk)[-STDERR_KEEP:]

    def _first_err_line(self) -> str:
        for line in self._err.decode("utf-8", errors="replace").splitlines():
            if line.strip():
                return line.strip()[:160]
        return ""

    def _end_child(self, kill: bool) -> None:
        self._settle_if_due()
        proc = self._proc
        self._close_cpu_fds()
        if proc is None:
            return
        self._proc = None
        for fd in (self._out_fd, self._err_fd):
            if fd is not None and self._loop is not None:
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(fd)
        if kill:
            procs._kill_and_reap(proc)
        procs.RUNNING.discard(proc)
        if self._use_pty and self._out_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._out_fd)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        self._out_fd = self._err_fd = None
        if self._settle is not None:
            self._settle.cancel()
            self._settle = None
        self._settle_due = None

    def _child_ended(self, message: str, kind: str = "exit") -> None:
        """Say how the child ended and schedule the next one."""
        self.exits += 1
        self.exit_message = message
        self.exit_kind = kind
        self._new_record.set()
        if self._stopped or self._loop is None:
            return
        if self.clock() - self._started_at >= RESET_AFTER_S:
            self._failures = 0
        delay = min(self.first_backoff_s * 2 ** self._failures, self.max_backoff_s)
        self._failures += 1
        self.restart_at = self.clock() + delay
        self._restart = self._loop.call_later(delay, self._on_restart)

    def _on_restart(self) -> None:
        self._restart = None
        self.restart_at = None
        if self._stopped:
            return
        try:
            self._spawn()
        except OSError as exc:
            self._child_ended(f"cannot be started: {exc.strerror or exc}", "missing")
