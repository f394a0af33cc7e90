"""Fake vendor executables: tiny ``#!/bin/sh`` scripts replaying pre-rendered output.

A fake tool is rendered in advance, in Python, from a scenario (one `Step` per call): for each
argument list the live source will use (``args-key``) and each call number ``n`` there is an
``<key>.<n>.out`` / ``.err`` / ``.rc`` triple (plus ``.hang`` for a call that never returns).
The script picks the key from its arguments, bumps a per-key counter file, and prints the
files of that call; past the end of the scenario the last call repeats. A shell script costs
~2 ms per call where a Python shebang costs ~100 ms, so polls at 0.25 s stay honest.

Modes of one call: ``normal`` (render the step's cards), ``hang`` (sleep "forever": the test
checks it gets killed), ``fail`` (exit non-zero with a stderr line), ``garbage`` (random bytes),
``crash`` (dies of SIGSEGV), and any card list (lose a card = a step with fewer cards).
Argument lists listed in ``refuse`` always get a usage text and exit 1, like an old tool without
that flag.

A loop mode (``loop_flag="-lms"``: nvidia-smi's ``<query> -lms N``) makes one start of the tool
print the calls of that argument list one after another, one every N ms, in one process, as the
real tool does (a header-less csv query prints only rows, sample after sample); past the end of
the scenario the last call repeats. A ``hang`` step goes silent, a ``crash`` step dies, a
non-zero exit (``fail``, a refused argv) prints its output and ends the loop with that status.
Without a loop flag the loop argv is unknown: usage text, exit 2 (a driver without ``-lms``).
"""

from __future__ import annotations

import os
import random
import shlex
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from types import ModuleType

from gpusat_tui.collectors import COLLECTOR_MODULES
from gpusat_tui.collectors.base import Query, ToolSpec, card_args
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading
from tests.fakes import FakeCard, FakeProcess

#: Renders what the tool prints for ``args``: ``(args, cards, processes) -> text``.
Renderer = Callable[[Sequence[str], Sequence[FakeCard], Sequence[FakeProcess]], str]

#: PATH entries besides the fake bin dir: sh, cat, sleep live there; no vendor tool does.
SYSTEM_PATH = "/bin:/usr/bin"


@dataclass(frozen=True)
class Step:
    """What one call of the tool does."""

    cards: Sequence[FakeCard] = ()
    processes: Sequence[FakeProcess] = ()
    mode: str = "normal"  # normal | hang | fail | garbage | crash (killed by SIGSEGV)
    exit_code: int = 3
    stderr: str = "fake: device busy"
    #: Restrict this step's mode to argument lists containing this text (None: every call).
    only_args: str | None = None


def as_step(item: Step | Sequence[FakeCard]) -> Step:
    return item if isinstance(item, Step) else Step(cards=tuple(item))


def usage_text(tool: str) -> str:
    return f"Usage: {tool} [OPTIONS]\n{tool}: unrecognized option\n"


@dataclass
class FakeTool:
    """One fake executable in a bin dir."""

    path: Path
    data_dir: Path
    arg_lists: list[tuple[str, ...]]

    def calls(self, args: Sequence[str] | None = None) -> int:
        """How many times the tool was called (with ``args``, or in total); loops not counted."""
        return self._count("count", args)

    def loop_starts(self, args: Sequence[str] | None = None) -> int:
        """How many times its loop mode was started (with ``args``, or in total)."""
        return self._count("loops", args)

    def _count(self, prefix: str, args: Sequence[str] | None) -> int:
        keys = range(len(self.arg_lists)) if args is None else [
            self.arg_lists.index(tuple(args))
        ]
        total = 0
        for key in keys:
            counter = self.data_dir / f"{prefix}.k{key}"
            if counter.exists():
                total += int(counter.read_text().strip() or 0)
        return total


@dataclass
class FakeBin:
    """A bin dir of fake tools, and the environment that puts only it on PATH."""

    dir: Path
    tools: dict[str, FakeTool] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"{self.dir}{os.pathsep}{SYSTEM_PATH}"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for a subprocess: only the fakes on PATH, no override variables."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSAT_TOOL_")}
        env["PATH"] = self.path
        repo = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
        env.update(extra or {})
        return env

    def add(
        self,
        name: str,
        render: Renderer,
        steps: Sequence[Step | Sequence[FakeCard]],
        arg_lists: Sequence[Sequence[str]] = ((),),
        refuse: Sequence[Sequence[str]] = (),
        seed: int = 0,
        loop_flag: str | None = None,
    ) -> FakeTool:
        """Write fake ``name`` answering each of ``arg_lists`` along ``steps``."""
        return write_fake_tool(
            self.dir / name, render, [as_step(s) for s in steps], arg_lists, refuse, seed,
            loop_flag=loop_flag,
        )

    def add_for_spec(
        self,
        spec: ToolSpec,
        steps: Sequence[Step | Sequence[FakeCard]],
        refuse: Sequence[Sequence[str]] = (),
        name: str | None = None,
        render: Renderer | None = None,
        loop_flag: str | None = None,
    ) -> FakeTool:
        """Fake ``spec``'s tool (under its first executable name) with its vendor renderer;
        ``loop_flag`` (``"-lms"``): it also runs its loop mode (see the module docstring)."""
        steps = [as_step(s) for s in steps]
        render = render or renderer_for(spec)
        tool = self.add(
            name or spec.names[0],
            render,
            steps,
            arg_lists=spec_arg_lists(spec, parsed_cards(spec, render, steps)),
            refuse=refuse,
            loop_flag=loop_flag,
        )
        self.tools[spec.tool] = tool
        return tool


def spec_arg_lists(spec: ToolSpec, cards: Sequence[CardReading]) -> list[tuple[str, ...]]:
    """Every argument list the live source may run for ``spec`` (fallbacks, per-card too).

    ``cards`` are the cards the required query reports (parsed from the rendered output), whose
    index and extras fill per-card placeholders exactly as the live source does.
    """
    lists: list[tuple[str, ...]] = []
    for query in spec.queries:
        chain = [query]
        while chain[-1].fallback is not None:
            chain.append(chain[-1].fallback)  # type: ignore[arg-type]
        for q in chain:
            if q.per_card:
                for card in cards:
                    try:
                        lists.append(card_args(q.args, card))
                    except (KeyError, IndexError, ValueError):
                        continue
            else:
                lists.append(tuple(q.args))
    return list(dict.fromkeys(lists))


def parsed_cards(spec: ToolSpec, render: Renderer, steps: Sequence[Step]) -> list[CardReading]:
    """What the required query of ``spec`` says about every card of every normal step."""
    required = next(q for q in spec.queries if not q.optional)
    found: dict[int, CardReading] = {}
    for step in steps:
        if not step.cards or step.mode != "normal":
            continue
        reading = None
        query: Query | None = required
        while query is not None and reading is None:  # a refused view: its fallback answers
            try:
                reading = query.parse(render(query.args, step.cards, step.processes))
            except ParseError:
                query = query.fallback
        if reading is None:
            continue  # a look-alike tool (Intel's xpu-smi): no per-card queries to expect
        for card in reading.cards:
            found.setdefault(card.index, card)
    return [found[i] for i in sorted(found)]


def formats_module(spec: ToolSpec) -> ModuleType:
    """``tests/fakes/formats/<collector module>.py`` of the collector that defines ``spec``."""
    for name in COLLECTOR_MODULES:
        if spec in import_module(f"gpusat_tui.collectors.{name}").SPECS:
            return import_module(f"tests.fakes.formats.{name}")
    raise LookupError(f"no collector module defines {spec.tool}")


def renderer_for(spec: ToolSpec) -> Renderer:
    """The vendor renderer for ``spec``: ``render_for_args`` where it exists, else ``render``."""
    fmt = formats_module(spec)
    if hasattr(fmt, "render_for_args"):
        return fmt.render_for_args  # type: ignore[no-any-return]

    def render(args: Sequence[str], cards: Sequence[FakeCard], procs: Sequence[FakeProcess]) -> str:
        return fmt.render(cards, procs)  # type: ignore[no-any-return]

    return render


def write_fake_tool(
    path: Path,
    render: Renderer,
    steps: Sequence[Step],
    arg_lists: Sequence[Sequence[str]] = ((),),
    refuse: Sequence[Sequence[str]] = (),
    seed: int = 0,
    loop_flag: str | None = None,
) -> FakeTool:
    """Render every call in advance and write the ``#!/bin/sh`` script that replays them.

    ``loop_flag``: ``<args> <loop_flag> MS`` plays the calls of ``args`` as one stream."""
    if not steps:
        raise ValueError("a fake tool needs at least one step")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = path.parent / f".{path.name}.d"
    data.mkdir(exist_ok=True)
    # A sleep whose command line names the fake's folder, so a test can find leftovers.
    sleeper = data / "sleep"
    if not sleeper.exists():
        sleeper.symlink_to("/bin/sleep" if Path("/bin/sleep").exists() else "/usr/bin/sleep")
    rng = random.Random(seed)
    arg_lists = [tuple(a) for a in arg_lists]
    refused = {tuple(a) for a in refuse}
    cases: list[str] = []
    for key, args in enumerate(arg_lists):
        pattern = shlex.quote(" ".join(args))
        cases.append(f"  {pattern}) k=k{key} ;;")
        if loop_flag is not None:
            # Any interval after the flag: the glob is outside the quotes.
            looped = shlex.quote(" ".join((*args, loop_flag)) + " ")
            cases.append(f"  {looped}*) k=k{key}; loop=1 ;;")
        for n, step in enumerate(steps, start=1):
            _write_call(data, f"k{key}.{n}", path.name, args, step, args in refused, render, rng)
        for suffix in ("out", "err", "rc", "hang", "crash"):
            last = data / f"k{key}.{len(steps)}.{suffix}"
            target = data / f"k{key}.last.{suffix}"
            target.unlink(missing_ok=True)
            if last.exists():
                target.write_bytes(last.read_bytes())
    usage = data / "usage"
    usage.write_text(usage_text(path.name))
    script = f"""#!/bin/sh
d={shlex.quote(str(data))}
loop=
case "$*" in
{chr(10).join(cases)}
  *) cat "$d/usage" >&2; exit 2 ;;
esac
if [ -n "$loop" ]; then
  for a; do ms=$a; done
  case "$ms" in ''|*[!0-9]*) cat "$d/usage" >&2; exit 2 ;; esac
  s=$((ms / 1000)).$(printf %03d $((ms % 1000)))
  n=0
  [ -f "$d/loops.$k" ] && read n < "$d/loops.$k"
  echo "$((n + 1))" > "$d/loops.$k"
  n=1
  while :; do
    c="$k.$n"
    [ -f "$d/$c.rc" ] || c="$k.last"
    if [ -f "$d/$c.hang" ]; then exec "$d/sleep" 600; fi
    if [ -f "$d/$c.crash" ]; then kill -SEGV $$; fi
    cat "$d/$c.out"
    read rc < "$d/$c.rc"
    if [ "$rc" != 0 ]; then cat "$d/$c.err" >&2; exit "$rc"; fi
    n=$((n + 1))
    "$d/sleep" "$s"
  done
fi
n=0
[ -f "$d/count.$k" ] && read n < "$d/count.$k"
n=$((n + 1))
echo "$n" > "$d/count.$k"
c="$k.$n"
[ -f "$d/$c.rc" ] || c="$k.last"
if [ -f "$d/$c.hang" ]; then "$d/sleep" 600; fi
if [ -f "$d/$c.crash" ]; then kill -SEGV $$; fi
cat "$d/$c.out"
cat "$d/$c.err" >&2
read rc < "$d/$c.rc"
exit "$rc"
"""
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return FakeTool(path=path, data_dir=data, arg_lists=list(arg_lists))


def _write_call(
    data: Path,
    stem: str,
    name: str,
    args: tuple[str, ...],
    step: Step,
    refused: bool,
    render: Renderer,
    rng: random.Random,
) -> None:
    out, err, rc, hang, crash = b"", b"", 0, False, False
    applies = step.only_args is None or step.only_args in " ".join(args)
    mode = step.mode if applies else "normal"
    if refused:
        out, rc = usage_text(name).encode(), 1
    elif mode == "hang":
        hang = True
    elif mode == "crash":
        crash = True
    elif mode == "fail":
        err, rc = (step.stderr + "\n").encode(), step.exit_code
    elif mode == "garbage":
        out = bytes(rng.randrange(256) for _ in range(600))
    elif mode == "normal":
        out = render(args, step.cards, step.processes).encode()
    else:
        raise ValueError(f"unknown fake mode {mode!r}")
    (data / f"{stem}.out").write_bytes(out)
    (data / f"{stem}.err").write_bytes(err)
    (data / f"{stem}.rc").write_text(f"{rc}\n")
    for flag, wanted in (("hang", hang), ("crash", crash)):
        flag_file = data / f"{stem}.{flag}"
        if wanted:
            flag_file.write_text("")
        else:
            flag_file.unlink(missing_ok=True)
