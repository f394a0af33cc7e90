"""Stack dumps of trainers with no probe, read from outside with ``py-spy dump``, rate-limited.

A trainer not started under ``gpusat-tui run`` has no sampler inside it; when it looks stalled
(its CPU at or below the stall line for `QUIET_S`: half the stall time, so that the dump is
there when the verdict says stalled) or pegged (at or above the trainer's pegged line), one
``py-spy dump --pid`` says where its main thread stands (`collectors.py_spy` reads it). A quiet
trainer is dumped again every `STILL_EVERY_S` (the stall time): a dump that shows the same
main-thread stack as the one before, the main thread having used no CPU between
(`outside_stack.unchanged`: its CPU time is read beside each dump), carries since when it has
stood still (``still_since``), so that a hung trainer whose other threads keep writing (a
heartbeat, a logger) is still told stalled. A pegged one: at most one dump in `DUMP_EVERY_S`.
Each runs like every tool call (`procs.run_tool`: no shell, a timeout, its process group
killed) in the background: a poll never waits for one, and the dump goes on the first poll
after it ends. A stopped trainer (state T: Ctrl-Z, a debugger)
is not dumped: ptrace would wait on it, and the verdict says it is stopped.

What a dump costs (`benchmarks/bench_py_spy_dump.py`): py-spy pauses the target while it reads
its stacks (a dump takes 10-50 ms of wall time, an upper bound; a stalled trainer loses
nothing, a pegged one that once a minute) and ~8-9 ms of CPU for py-spy itself.
py-spy is looked for in ``GPUSAT_PY_SPY`` (a path; ``off``: never dump), then on PATH (the
tools' search path): a ``pip install 'gpusat-tui[pyspy]'`` puts it beside the interpreter,
which is on PATH in an activated environment. Where it is missing, a trainer that would have
been dumped gets a dump whose ``error`` is ``missing``: the stalled verdict then names the
extra. Reading another user's process needs ptrace rights (``denied``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Collection, Sequence

from gpusat_tui.analysis.outside_stacks.outside_stack import unchanged
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.collectors.py_spy import dump_failure, stack_dump
from gpusat_tui.host.monitor.procfs import main_thread_cpu_s
from gpusat_tui.model import ProcessSample, StackDump
from gpusat_tui.sources.polling.procs import CallTimedOut, OutputTooLarge, run_tool

__all__ = ["DUMP_EVERY_S", "DUMP_TIMEOUT_S", "ENV_PY_SPY", "QUIET_S", "STILL_EVERY_S",
           "OutsideStacks"]

ENV_PY_SPY = "GPUSAT_PY_SPY"
#: At most one dump per trainer in this many seconds.
DUMP_EVERY_S = 60.0
#: A trainer quiet (CPU at or below the stall line) this long is dumped.
QUIET_S = Thresholds().stall_min_s / 2
#: A quiet trainer is dumped again this often: two dumps a stall time apart tell a main thread
#: that stood still (py-spy's ~9 ms of CPU each; a stalled trainer loses nothing).
STILL_EVERY_S = Thresholds().stall_min_s
#: A dump that takes longer is killed (py-spy reads a 30-frame stack in milliseconds).
DUMP_TIMEOUT_S = 5.0
#: A dump is carried on a trainer's samples this long (a trainer still stalled or pegged has a
#: newer one by then).
_KEPT_S = 1.5 * DUMP_EVERY_S
#: A trainer not listed for this long is forgotten (gone, or probed now).
_FORGET_S = 30.0
#: psutil states in which a trainer is not dumped (ptrace would wait on a stopped one).
_NOT_DUMPED = frozenset({"stopped", "tracing-stop", "zombie", "dead"})
#: Output beyond this is not a stack dump (a 100-thread JSON dump is ~300 KiB).
_CAP_BYTES = 2 << 20


class OutsideStacks:
    """Decides which trainers to dump at each poll, dumps them, and keeps each one's newest
    dump to carry on its `ProcessSample` (``stack_dump``)."""

    def __init__(
        self,
        clock: Callable[[], float],
        path: str | None = None,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.clock = clock
        self.path = path
        self.th = thresholds or Thresholds()
        self._exe: str | None = None
        self._looked = False
        #: Whether ``--json`` works (None: not tried yet; py-spy before 0.3.x has no JSON).
        self._json: bool | None = None
        self._quiet_since: dict[int, float] = {}
        self._tried: dict[int, float] = {}
        self._dumps: dict[int, StackDump] = {}
        #: When each trainer was last listed.
        self._seen: dict[int, float] = {}
        #: Each trainer's newest dump that read a stack (`unchanged` compares the next one).
        self._read: dict[int, StackDump] = {}
        #: Dumps running now, by PID.
        self._running: dict[int, asyncio.Task[StackDump]] = {}

    def executable(self) -> str | None:
        """py-spy's path, looked for once; None when missing or turned off."""
        if not self._looked:
            self._looked = True
            env = os.environ.get(ENV_PY_SPY, "").strip()
            if env.lower() in ("off", "0", "no", "false"):
                self._exe = None
            elif env:
                self._exe = env if os.access(env, os.X_OK) else None
            else:
                self._exe = shutil.which("py-spy", path=self.path)
        return self._exe

    def wanted(self, samples: Sequence[ProcessSample], probed: Collection[int],
               now: float) -> list[int]:
        """The trainers to dump at ``now`` (counted as dumped then): no probe, quiet for
        `QUIET_S` or pegged, and not dumped in the last `DUMP_EVERY_S`."""
        out = []
        for s in samples:
            if s.role != "trainer" or s.pid in probed:
                continue
            self._seen[s.pid] = now
            if s.cpu_pct is None or s.state in _NOT_DUMPED:
                continue
            if s.cpu_pct <= self.th.stall_cpu_pct:
                self._quiet_since.setdefault(s.pid, now)
            else:
                self._quiet_since.pop(s.pid, None)
            quiet = now - self._quiet_since.get(s.pid, now) >= QUIET_S
            pegged = s.cpu_pct >= self.th.trainer_pegged_pct
            every = STILL_EVERY_S if quiet else DUMP_EVERY_S
            if (quiet or pegged) and now - self._tried.get(s.pid, -DUMP_EVERY_S) >= every:
                out.append(s.pid)
                self._tried[s.pid] = now
        # Gone (or probed now): forgotten once unseen for a while (a poll between two process
        # scans may list no process at all); its PID may come back as another process.
        for pid in [p for p, t in self._seen.items() if now - t > _FORGET_S]:
            del self._seen[pid]
            for table in (self._quiet_since, self._tried, self._dumps, self._read):
                table.pop(pid, None)
            task = self._running.pop(pid, None)
            if task is not None:
                task.cancel()
        return out

    def attach(self, samples: Sequence[ProcessSample], probed: Collection[int],
               now: float) -> list[ProcessSample]:
        """``samples`` with each trainer's newest finished dump; starts those `wanted` now
        (on the running event loop)."""
        for pid, task in list(self._running.items()):
            if task.done():
                del self._running[pid]
                if not task.cancelled() and task.exception() is None:
                    self._dumps[pid] = self._still(pid, task.result())
        for pid in self.wanted(samples, probed, now):
            if pid not in self._running:
                self._running[pid] = asyncio.ensure_future(self.dump(pid))
        for pid in [p for p, d in self._dumps.items() if now - d.t > _KEPT_S]:
            del self._dumps[pid]  # no longer stalled or pegged: not where it stands now
        if not self._dumps:
            return list(samples)
        return [s.model_copy(update={"stack_dump": self._dumps[s.pid]})
                if s.role == "trainer" and s.pid in self._dumps else s for s in samples]

    def _still(self, pid: int, dump: StackDump) -> StackDump:
        """``dump`` with since when the main thread has stood still, where the one before
        shows it unchanged (`unchanged`)."""
        if dump.error is not None:
            return dump
        before = self._read.get(pid)
        if before is not None and unchanged(before, dump, self.th.stall_cpu_pct):
            dump = dump.model_copy(update={"still_since": before.still_since or before.t})
        self._read[pid] = dump
        return dump

    async def wait(self) -> None:
        """Until the dumps running now have ended (tests; `attach` never waits)."""
        if self._running:
            await asyncio.wait(list(self._running.values()))

    def cancel(self) -> None:
        """Stop the dumps running now (their py-spy is killed and reaped: `run_tool`)."""
        for task in self._running.values():
            task.cancel()
        self._running.clear()

    async def dump(self, pid: int) -> StackDump:
        """One dump of ``pid``'s stacks; never raises (a failure is a dump with ``error``)."""
        t = self.clock()
        exe = self.executable()
        if exe is None:
            return StackDump(t=t, error="missing", message="py-spy not found on PATH")
        use_json = self._json is not False
        argv = [exe, "dump", "--pid", str(pid), *(["--json"] if use_json else [])]
        try:
            res = await run_tool(argv, DUMP_TIMEOUT_S, _CAP_BYTES)
        except CallTimedOut:
            return StackDump(t=t, error="failed",
                             message=f"py-spy did not answer within {DUMP_TIMEOUT_S:.0f} s")
        except OutputTooLarge:
            return StackDump(t=t, error="failed", message="py-spy printed too much")
        except OSError as exc:
            return StackDump(t=t, error="missing", message=f"cannot run {exe}: {exc}"[:300])
        if res.returncode != 0:
            if use_json and self._json is None and "--json" in res.stderr:
                self._json = False  # an older py-spy: read its text output
                return await self.dump(pid)
            error, message = dump_failure(res.returncode, res.stderr, res.stdout)
            return StackDump(t=t, error=error, message=message)
        if use_json:
            self._json = True
        dumped = stack_dump(res.stdout, pid, t)
        return dumped.model_copy(update={"main_cpu_s": main_thread_cpu_s(pid)})
