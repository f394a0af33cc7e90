"""Fake *streaming* tools: ``#!/bin/sh`` scripts that print a record every period, like
``tegrastats`` or ``nvidia-smi -lms``, and then exit, hang, or keep going, as a scenario says.

A scenario is one `Run` per start of the tool (the live source restarts a stream that exits);
past the last run, the last one repeats. A run prints its records one per period, then does its
``then``: ``repeat`` (its last record, every period, forever), ``exit`` (status ``rc``, a line on
stderr), ``hang`` (stays alive, silent) or ``garbage`` (random bytes, then repeat the garbage).
Sleeps go through a ``sleep`` link inside the fake's folder, so `tests.conftest.
leftover_processes` finds any child left behind. Each start appends its argv to ``argv.log``;
an argument naming an existing file is copied to ``arg-file.<start>`` (neuron-monitor's config).
"""

from __future__ import annotations

import random
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FakeStream", "Run", "write_fake_stream"]


@dataclass(frozen=True)
class Run:
    """What one start of the tool prints and then does."""

    records: Sequence[str] = ()
    then: str = "repeat"  # repeat | exit | hang | garbage
    rc: int = 1
    stderr: str = "fake: device went away"
    #: Seconds between records (the tool's own period).
    period: float = 0.1
    #: Seconds before the first record.
    delay: float = 0.0


@dataclass
class FakeStream:
    path: Path
    data_dir: Path

    def starts(self) -> int:
        """How many times the tool was started."""
        counter = self.data_dir / "starts"
        return int(counter.read_text().strip() or 0) if counter.exists() else 0

    def argv(self) -> list[str]:
        """The argument lists it was started with, one line per start."""
        log = self.data_dir / "argv.log"
        return log.read_text().splitlines() if log.exists() else []

    def arg_file(self, start: int = 1) -> str | None:
        copied = self.data_dir / f"arg-file.{start}"
        return copied.read_text() if copied.exists() else None


def write_fake_stream(path: Path, runs: Sequence[Run], seed: int = 0) -> FakeStream:
    """Write the fake streaming tool ``path`` playing ``runs`` (one per start)."""
    if not runs:
        raise ValueError("a fake stream needs at least one run")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = path.parent / f".{path.name}.stream.d"
    data.mkdir(exist_ok=True)
    sleeper = data / "sleep"
    if not sleeper.exists():
        sleeper.symlink_to("/bin/sleep" if Path("/bin/sleep").exists() else "/usr/bin/sleep")
    rng = random.Random(seed)
    for n, run in enumerate(runs, start=1):
        _write_run(data / f"run.{n}", run, rng)
    _write_run(data / "run.last", runs[-1], rng)
    script = f"""#!/bin/sh
d={shlex.quote(str(data))}
n=0
[ -f "$d/starts" ] && read n < "$d/starts"
n=$((n + 1))
echo "$n" > "$d/starts"
echo "$*" >> "$d/argv.log"
for a in "$@"; do [ -f "$a" ] && cat "$a" > "$d/arg-file.$n"; done
r="$d/run.$n"
[ -d "$r" ] || r="$d/run.last"
read period < "$r/period"
read delay < "$r/delay"
read then < "$r/then"
[ "$delay" = 0 ] || "$d/sleep" "$delay"
i=1
last=""
while [ -f "$r/$i.rec" ]; do
  cat "$r/$i.rec"
  last="$r/$i.rec"
  i=$((i + 1))
  [ -f "$r/$i.rec" ] && "$d/sleep" "$period"
done
case "$then" in
  exit) cat "$r/err" >&2; read rc < "$r/rc"; exit "$rc" ;;
  hang) exec "$d/sleep" 600 ;;
  garbage) last="$r/garbage" ;;
esac
[ -n "$last" ] || exec "$d/sleep" 600
while :; do "$d/sleep" "$period"; cat "$last"; done
"""
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return FakeStream(path=path, data_dir=data)


def _write_run(folder: Path, run: Run, rng: random.Random) -> None:
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.rec"):
        old.unlink()
    for i, record in enumerate(run.records, start=1):
        text = record if record.endswith("\n") else record + "\n"
        (folder / f"{i}.rec").write_text(text)
    (folder / "then").write_text(run.then + "\n")
    (folder / "rc").write_text(f"{run.rc}\n")
    (folder / "err").write_text(run.stderr + "\n")
    (folder / "period").write_text(f"{run.period:g}\n")
    (folder / "delay").write_text(f"{run.delay:g}\n")
    # Garbage without newlines except one at the end, so that it reads as one bad record.
    junk = bytes(b for b in (rng.randrange(256) for _ in range(400)) if b != 10)
    (folder / "garbage").write_bytes(junk + b"\n")


def write_dispatch(path: Path, marker: str, stream: Path, calls: Path) -> None:
    """``path`` runs the fake stream ``stream`` when its argv contains ``marker`` (``-lms``),
    else the call-per-poll fake ``calls``: one executable with both modes, like nvidia-smi."""
    path.write_text(f"""#!/bin/sh
case " $* " in
  *" {marker} "*) exec {shlex.quote(str(stream))} "$@" ;;
  *) exec {shlex.quote(str(calls))} "$@" ;;
esac
""")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
