"""The training thread's stack, sampled from the probe's own thread: phases of the step, the
hottest lines of the user's code, and how long the stack has not changed.

The publisher thread (`publish`) calls `StackSampler.sample` about `DEFAULT_HZ` times a second,
at jittered intervals (a fixed period beside a periodic step would read the same part of every
step). Each sample reads ``sys._current_frames()[training thread]`` under the GIL, walks its
frames (each code object's module, phase and whether it is the user's is worked out once and
kept), and adds one to the phase it is in and to its innermost user line. An innermost frame
that calls into C is asked what it calls (`calls`): a ``jax.jit`` function runs with no Python
frame, so only the call names the phase. Counts are
cumulative, like the data wait's seconds, so a monitor takes any window's shares from two
publications. A sample costs some 10-40 us of the GIL (`benchmarks/bench_probe.py`).

Standard library only. Only the probe's thread touches this object (the hooks only name the
training thread), so it needs no lock.
"""

from __future__ import annotations

import os
import sys
import zlib
from types import CodeType, FrameType
from typing import Any

from .calls import CallSite, call_phase, call_site
from .phases import PHASES, frame_phase, stack_phase

DEFAULT_HZ = 20.0
ENV_HZ = "GPUSAT_PROBE_STACK_HZ"
#: Frames walked per sample (a deeper stack is read from its innermost frames).
MAX_DEPTH = 128
#: Frames of the current stack published (its innermost ones).
PUBLISHED_FRAMES = 32
#: User lines published (the most sampled), and kept before the least sampled are dropped.
PUBLISHED_LINES = 24
KEPT_LINES = 256
#: Code objects whose facts are kept (a job that generates code without end is cleared).
KEPT_CODES = 8192

_UNSEEN: Any = object()
_STDLIB = os.path.dirname(os.__file__) + os.sep
_PROBE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def sample_hz() -> float | None:
    """The sampling rate from ``GPUSAT_PROBE_STACK_HZ`` (0 or "off": no sampling)."""
    raw = os.environ.get(ENV_HZ, "").strip().lower()
    if raw in ("0", "off", "no", "false"):
        return None
    try:
        hz = float(raw) if raw else DEFAULT_HZ
    except ValueError:
        hz = DEFAULT_HZ
    if not hz > 0:
        return None
    return min(200.0, max(1.0, hz))


def is_user_file(filename: str) -> bool:
    """Code of the user's own (not the standard library, an installed package or the probe)."""
    if not filename or filename.startswith("<"):
        return False
    if filename.startswith((_STDLIB, _PROBE)):
        return False
    return not ("site-packages" in filename or "dist-packages" in filename)


class _Code:
    """What a code object says, worked out once."""

    __slots__ = ("module", "name", "phase", "user")

    def __init__(self, code: CodeType, module: str) -> None:
        self.module = module
        self.name: str = getattr(code, "co_qualname", code.co_name)
        self.phase = frame_phase(module, code.co_name)
        self.user = is_user_file(code.co_filename)


class StackSampler:
    """Cumulative counts of the training thread's samples, and its current stack."""

    __slots__ = ("call", "codes", "frames", "lines", "phase", "phase_at", "phases", "samples",
                 "sig", "since", "sites", "t", "thread")

    def __init__(self) -> None:
        #: Ident of the thread that pulls batches (None: the main thread).
        self.thread: int | None = None
        self.samples = 0
        self.phases: dict[str, int] = dict.fromkeys(PHASES, 0)
        #: (code, line) of an innermost user frame -> samples there.
        self.lines: dict[tuple[CodeType, int], int] = {}
        self.codes: dict[CodeType, _Code] = {}
        #: (code, offset) of an innermost frame -> what the call there loads (None: nothing
        #: that is looked up).
        self.sites: dict[tuple[CodeType, int], CallSite | None] = {}
        #: What the newest sample's innermost frame calls, where that decided its phase.
        self.call: str | None = None
        #: The newest sample's (code, line) frames, innermost first, and its phase with the
        #: index of the frame that decided it.
        self.frames: tuple[tuple[CodeType, int], ...] = ()
        self.phase: str | None = None
        self.phase_at = -1
        #: The newest sample's stack as compared (`frames`), when it was first seen, and the
        #: newest sample's time (the caller's clock).
        self.sig: tuple[tuple[CodeType, int], ...] | None = None
        self.since = 0.0
        self.t = 0.0

    def _code(self, code: CodeType, frame: FrameType) -> _Code:
        found = self.codes.get(code)
        if found is None:
            if len(self.codes) >= KEPT_CODES:
                self.codes.clear()
            module = frame.f_globals.get("__name__")
            found = self.codes[code] = _Code(code, module if isinstance(module, str) else "")
        return found

    def _called(self, frame: FrameType) -> tuple[str, str] | None:
        """The phase and callee of the call ``frame`` (the innermost) is in, if it names one."""
        key = (frame.f_code, frame.f_lasti)
        try:
            site = self.sites.get(key, _UNSEEN)
            if site is _UNSEEN:
                if len(self.sites) >= KEPT_CODES:
                    self.sites.clear()
                site = self.sites[key] = call_site(*key)
            return None if site is None else call_phase(frame, site)
        except Exception:  # bytecode or an object that refuses a static look: no phase
            return None

    def sample(self, now: float, in_data: bool, main_ident: int | None) -> bool:
        """One sample of the training thread at ``now``; ``in_data``: a timed iterator is
        running (the sample is data whatever the frames say). False if the thread is gone."""
        ident = self.thread if self.thread is not None else main_ident
        frame = sys._current_frames().get(ident) if ident is not None else None
        if frame is None:
            # The thread ended: no current stack (a stack kept from before would read as
            # one that stands still for good).
            self.frames, self.phase, self.phase_at, self.sig = (), None, -1, None
            self.call = None
            return False
        walked: list[tuple[CodeType, int]] = []
        phases: list[str | None] = []
        user: tuple[CodeType, int] | None = None
        f: FrameType | None = frame
        while f is not None and len(walked) < MAX_DEPTH:
            code = f.f_code
            facts = self._code(code, f)
            line = f.f_lineno or 0
            walked.append((code, line))
            phases.append(facts.phase)
            if user is None and facts.user:
                user = (code, line)
            f = f.f_back
        self.call = None
        if not in_data and walked:
            called = self._called(frame)
            if called is not None:
                phases[0], self.call = called
        del frame, f
        phase, at = stack_phase(phases)
        if in_data:
            phase, at = "data", -1
        if at != 0:
            self.call = None
        frames = tuple(walked)
        if frames != self.sig:
            self.sig, self.since = frames, now
        self.frames, self.phase, self.phase_at, self.t = frames, phase, at, now
        self.samples += 1
        self.phases[phase] = self.phases.get(phase, 0) + 1
        if user is not None:
            self.lines[user] = self.lines.get(user, 0) + 1
            if len(self.lines) > KEPT_LINES:
                kept = sorted(self.lines.items(), key=lambda kv: kv[1])[-KEPT_LINES // 2:]
                self.lines = dict(kept)
        return True

    # --- what is published ------------------------------------------------------------------

    def top_lines(self) -> list[list[object]]:
        """``[file, line, function, samples]`` of the most sampled user lines (cumulative)."""
        ranked = sorted(self.lines.items(), key=lambda kv: -kv[1])[:PUBLISHED_LINES]
        return [[code.co_filename[-200:], line, self._name(code), count]
                for (code, line), count in ranked]

    def _name(self, code: CodeType) -> str:
        facts = self.codes.get(code)
        return (facts.name if facts is not None else code.co_name)[:80]

    def where(self) -> str | None:
        """The framework function the newest sample's phase was decided by, as
        ``torch.distributed.all_reduce`` (module cut to its first two parts), or the compiled
        function its innermost frame calls, as ``jax.jit(train_step)``."""
        if not self.frames or not 0 <= self.phase_at < len(self.frames):
            return None
        if self.call is not None:
            return self.call[:120]
        code = self.frames[self.phase_at][0]
        facts = self.codes.get(code)
        if facts is None:
            return None
        module = ".".join(facts.module.split(".")[:2])
        return f"{module}.{facts.name}"[:120] if module else facts.name[:120]

    def user_line(self) -> list[object] | None:
        """``[file, line, function]`` of the newest sample's innermost user frame."""
        for code, line in self.frames:
            facts = self.codes.get(code)
            if facts is not None and facts.user:
                return [code.co_filename[-200:], line, facts.name[:80]]
        return None

    def stack(self) -> list[list[object]]:
        """The newest sample's innermost frames, outermost first:
        ``[module, function, file, line]``."""
        out: list[list[object]] = []
        for code, line in reversed(self.frames[:PUBLISHED_FRAMES]):
            facts = self.codes.get(code)
            module = facts.module if facts is not None else ""
            out.append([module[:80], self._name(code), os.path.basename(code.co_filename)[:80],
                        line])
        return out

    def signature(self) -> str | None:
        """8 hex digits of the newest stack (module, function and line of every frame): the
        same on every rank that waits at the same place."""
        if not self.frames:
            return None
        text = "|".join(f"{self.codes[c].module if c in self.codes else ''}:{c.co_name}:{n}"
                        for c, n in self.frames)
        return f"{zlib.crc32(text.encode()):08x}"
