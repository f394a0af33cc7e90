"""The monitor's side of the probe: find probe files, read them safely, tie each to its card.

A probe file (`gpusat_tui.probe.layout`) is written by a process the monitor does not control,
so everything in it is data to check, never trust: a file that is truncated, random bytes, of a
newer layout, of a dead PID, owned by another user, a symlink, a FIFO or huge gives one note
(said once per file and reason) and is skipped; nothing blocks (files are opened non-blocking,
never followed, and read up to `MAX_BYTES`), nothing raises. The file of a process that is gone
is removed. Nothing read here is executed; strings are cut short and sanitised before they reach
a note.

Reading one file costs one ``open``/``fstat``/``read``/``close`` and a small ``json.loads``
(`benchmarks/bench_probe.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpusat_tui.model import CardProcess, CardReading, ProbeAlloc, ProbeSample
from gpusat_tui.probe.layout import (
    ALLOC_KEYS,
    FILE_PREFIX,
    FILE_SUFFIX,
    LAYOUT_VERSION,
    MAX_BYTES,
    default_dirs,
    tmp_name,
)

__all__ = ["ProbeFileError", "ProbePoller", "ProbeReader", "parse_probe", "tie_card"]

#: A file not rewritten for this long, whose PID is gone, is a leftover: removed.
STALE_S = 5.0

#: Device type (and ROCm build) as the trainer's framework names it -> vendors it can be.
DEVICE_VENDORS: dict[tuple[str, bool], tuple[str, ...]] = {
    ("cuda", False): ("nvidia",),
    ("cuda", True): ("amd", "hygon"),
    ("npu", False): ("ascend",),
    ("mlu", False): ("cambricon",),
    ("musa", False): ("mthreads",),
    ("xpu", False): ("kunlunxin", "intel"),
}

#: Per vendor: the visibility variables that renumber devices, closest to the process first
#: (ROCm: HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES as its alias, picks among the devices
#: ROCR_VISIBLE_DEVICES left).
VISIBLE_CHAIN: dict[str, tuple[tuple[str, ...], ...]] = {
    "nvidia": (("CUDA_VISIBLE_DEVICES",),),
    "amd": (("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"), ("ROCR_VISIBLE_DEVICES",)),
    "hygon": (("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"), ("ROCR_VISIBLE_DEVICES",)),
    "ascend": (("ASCEND_RT_VISIBLE_DEVICES",),),
    "cambricon": (("MLU_VISIBLE_DEVICES",),),
    "mthreads": (("MUSA_VISIBLE_DEVICES",),),
    "kunlunxin": (("XPU_VISIBLE_DEVICES",),),
}


class ProbeFileError(ValueError):
    """A probe file that cannot be used; the message says why in plain words."""


def _clean(text: object, limit: int = 64) -> str:
    """Printable, short: names from a file never carry escape codes into a terminal."""
    s = "".join(ch if ch.isprintable() else "?" for ch in str(text)[:limit])
    return s


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def parse_probe(data: bytes) -> dict[str, Any]:
    """Bytes of one probe file -> its document; raises `ProbeFileError` saying why not."""
    if len(data) > MAX_BYTES:
        raise ProbeFileError(f"larger than {MAX_BYTES // 1024} KiB")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProbeFileError("not a probe file (truncated or corrupt)") from None
    if not isinstance(doc, dict):
        raise ProbeFileError("not a probe file (not a JSON object)")
    layout = _int(doc.get("layout"))
    if layout is None:
        raise ProbeFileError("not a probe file (no layout version)")
    if layout > LAYOUT_VERSION:
        raise ProbeFileError(
            f"written by a newer probe (layout {layout}, this monitor reads {LAYOUT_VERSION}): "
            "update gpusat-tui"
        )
    if layout < 1:
        raise ProbeFileError(f"unknown layout {layout}")
    pid = _int(doc.get("pid"))
    if pid is None or pid <= 0:
        raise ProbeFileError("not a probe file (no PID)")
    return doc


def _alloc(raw: Any) -> ProbeAlloc | None:
    if not isinstance(raw, dict):
        return None
    figures = {k: _int(raw.get(k)) for k in ALLOC_KEYS}
    if all(v is None for v in figures.values()):
        return None
    return ProbeAlloc(**figures)


def _visible_entries(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _physical_index(
    index: int, vendor: str, env: Mapping[str, object], cards: Sequence[CardReading]
) -> tuple[int | None, bool]:
    """The tool's index of the card the trainer calls ``index``; (None, _) if out of range.

    The bool is True when the mapping is exact, False when it is a guess (an entry that is
    neither an index nor a UUID the tool printed, such as a MIG instance).
    """
    exact = True
    for names in VISIBLE_CHAIN.get(vendor, ()):
        value = next((v for n in names if isinstance(v := env.get(n), str)), None)
        if value is None:
            continue
        entries = _visible_entries(value)
        if index >= len(entries):
            return None, exact
        entry = entries[index]
        if entry.lstrip("-").isdigit():
            index = int(entry)
            continue
        by_uuid = [c for c in cards if c.uuid and c.uuid.lower().startswith(entry.lower())]
        if len(by_uuid) == 1:
            index = by_uuid[0].index
            continue
        exact = False  # MIG-..., a bus id, a partial UUID we cannot resolve: keep the index
    return index, exact


def tie_card(
    doc: Mapping[str, Any],
    cards: Sequence[CardReading],
    card_processes: Sequence[CardProcess],
) -> tuple[str | None, str | None]:
    """(card_id, tie) for one probe: by device index, else the tool's process table, else a
    guess by local rank (or the only card); (None, None) when nothing fits."""
    device_type = doc.get("device_type")
    index = _int(doc.get("device_index"))
    raw_env = doc.get("env")
    env: Mapping[str, object] = raw_env if isinstance(raw_env, dict) else {}
    if isinstance(device_type, str) and index is not None and index >= 0:
        vendors = DEVICE_VENDORS.get((device_type, bool(doc.get("hip"))), ())
        for vendor in vendors:
            mine = [c for c in cards if c.vendor == vendor]
            if not mine:
                continue
            physical, exact = _physical_index(index, vendor, env, mine)
            card = next((c for c in mine if c.index == physical), None)
            if card is None:
                break
            if vendor == "nvidia" and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
                # CUDA numbers fastest first; nvidia-smi by bus. Same models: same order.
                exact = exact and len({c.name for c in mine}) <= 1
            return card.id, ("device" if exact else "guess")
    pid = doc.get("pid")
    listed = next((p.card_id for p in card_processes if p.pid == pid and p.card_id), None)
    if listed is not None:
        return listed, "tool"
    if not cards:
        return None, None
    local = _int(doc.get("local_rank"))
    ordered = sorted(cards, key=lambda c: (c.vendor, c.index))
    if len(ordered) == 1:
        return ordered[0].id, "guess"
    if local is not None and 0 <= local < len(ordered) and len({c.vendor for c in ordered}) == 1:
        return ordered[local].id, "guess"
    return None, None


def sample_of(
    doc: Mapping[str, Any], now: float, card_id: str | None, tie: str | None
) -> ProbeSample:
    """A checked document -> the Frame's `ProbeSample` (a figure of the wrong type is None)."""
    t = _num(doc.get("t"))
    index = _int(doc.get("device_index"))
    device_type = doc.get("device_type")
    return ProbeSample(
        pid=doc["pid"],
        rank=_int(doc.get("rank")),
        local_rank=_int(doc.get("local_rank")),
        world_size=_int(doc.get("world_size")),
        device_index=index,
        card_id=card_id,
        tie=tie,
        data_wait_pct=_num(doc.get("data_wait_pct")),
        step_ms=_num(doc.get("step_ms")),
        batches_per_s=_num(doc.get("batches_per_s")),
        samples_per_s=_num(doc.get("samples_per_s")),
        batches=max(0, _int(doc.get("batches")) or 0),
        steps=max(0, _int(doc.get("steps")) or 0),
        data_wait_s=_num(doc.get("data_wait_s")),
        elapsed_s=_num(doc.get("elapsed_s")),
        alloc=_alloc(doc.get("alloc")),
        age_s=max(0.0, now - t) if t is not None else None,
        device_type=_clean(device_type, 16) if isinstance(device_type, str) else None,
    )


def _pid_state(pid: int, start_ticks: int | None) -> str:
    """"alive", "gone" (no such process, or its PID now belongs to another) or "unknown"."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # exists, another user's
    except OSError:
        return "unknown"
    if start_ticks is None:
        return "alive"
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
        now_ticks = int(text[text.rindex(")") + 2:].split()[19])
    except FileNotFoundError:
        return "gone"
    except (OSError, ValueError, IndexError):
        return "unknown"
    return "alive" if now_ticks == start_ticks else "gone"


class ProbeReader:
    """One `sample()` per poll: every live probe as a `ProbeSample`, and notes for the rest."""

    def __init__(
        self,
        dirs: Sequence[str] | None = None,
        clock: Callable[[], float] = time.time,
        pid_state: Callable[[int, int | None], str] = _pid_state,
    ) -> None:
        self._dirs = list(dirs) if dirs is not None else None
        self._clock = clock
        self._pid_state = pid_state
        self._uid = os.getuid() if hasattr(os, "getuid") else None
        self._said: set[str] = set()

    def dirs(self) -> list[str]:
        return list(self._dirs) if self._dirs is not None else default_dirs()

    def sample(
        self, cards: Sequence[CardReading] = (), card_processes: Sequence[CardProcess] = ()
    ) -> tuple[list[ProbeSample], list[str]]:
        notes: list[str] = []
        samples: list[ProbeSample] = []
        now = self._clock()
        for folder in self.dirs():
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue  # no probe ever ran from here: nothing to say
            for entry in sorted(entries, key=lambda e: e.name):
                name = entry.name
                if not (name.startswith(FILE_PREFIX) and name.endswith(FILE_SUFFIX)):
                    continue
                try:
                    doc = self._read(entry.path)
                    if f"{FILE_PREFIX}{doc['pid']}{FILE_SUFFIX}" != name:
                        raise ProbeFileError(f"says PID {doc['pid']}")
                except ProbeFileError as exc:
                    self._note(notes, f"probe file {_clean(entry.path, 200)} ignored: {exc}")
                    continue
                except Exception as exc:  # a reader bug must never take the poll down
                    self._note(notes, f"probe file {_clean(entry.path, 200)} unreadable: "
                                      f"{type(exc).__name__}")
                    continue
                pid = doc["pid"]
                ticks = _int(doc.get("start_ticks"))
                state = self._pid_state(pid, ticks)
                t = _num(doc.get("t"))
                age = now - t if t is not None else None
                if state == "gone" and (age is None or age > STALE_S):
                    self._remove(entry.path, pid, notes)
                    continue
                if state == "gone":
                    # Fresh, but no such PID here: a trainer in another PID namespace sharing
                    # this folder (a container), or one killed a moment ago (its figures then
                    # age out of the verdict, and the file is removed once stale).
                    self._note(notes, f"probe of PID {pid}: no such process here (another PID "
                                      "namespace?); its figures are used while they are fresh")
                card_id, tie = tie_card(doc, cards, card_processes)
                samples.append(sample_of(doc, now, card_id, tie))
        samples.sort(key=lambda s: (s.rank if s.rank is not None else 1 << 30, s.pid))
        return samples, notes

    def _read(self, path: str) -> dict[str, Any]:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        flags |= getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise ProbeFileError("gone while reading") from None
        except OSError as exc:
            if os.path.islink(path):
                raise ProbeFileError("a symlink (never followed)") from None
            raise ProbeFileError(f"cannot open ({exc.strerror or exc})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ProbeFileError("not a regular file")
            if self._uid is not None and info.st_uid != self._uid:
                raise ProbeFileError(f"owned by another user (uid {info.st_uid})")
            if info.st_size > MAX_BYTES:
                raise ProbeFileError(f"larger than {MAX_BYTES // 1024} KiB")
            data = os.read(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
        return parse_probe(data)

    def _remove(self, path: str, pid: int, notes: list[str]) -> None:
        # A trainer killed mid-publication also left its temporary file (hidden, never read).
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(os.path.dirname(path), tmp_name(pid)))
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            self._note(notes, f"probe file of exited PID {pid} left in place: "
                              f"{exc.strerror or exc}")
            return
        notes.append(f"PID {pid} exited: its probe file was removed")

    def _note(self, notes: list[str], text: str) -> None:
        """Each bad file is said once, not on every poll."""
        if text not in self._said:
            self._said.add(text)
            notes.append(text)


class ProbePoller:
    """What the live source calls once per poll; never raises.

    Returns the samples and, for each probe tied to a card, a `CardProcess` for the process
    monitor, so a probed trainer and its workers are watched without ``--pid``.
    """

    def __init__(self, reader: ProbeReader | None = None) -> None:
        self.reader = reader or ProbeReader()

    def poll(
        self,
        cards: Sequence[CardReading],
        card_processes: Sequence[CardProcess],
        notes: list[str],
    ) -> tuple[list[ProbeSample], list[CardProcess]]:
        try:
            samples, said = self.reader.sample(cards, card_processes)
        except Exception as exc:  # a probe file must never take a poll down
            samples, said = [], [f"probe files not read: {type(exc).__name__}: {exc}"]
        notes.extend(n for n in said if n not in notes)
        listed = {(p.pid, p.card_id) for p in card_processes}
        extra = [
            CardProcess(pid=s.pid, card_id=s.card_id)
            for s in samples
            if s.card_id is not None and (s.pid, s.card_id) not in listed
        ]
        return samples, extra
