"""``gpusat-tui status``: the job's verdict as one short line for a status bar.

tmux runs it every few seconds (``set -g status-right '#(gpusat-tui status)'``), so the
common path is a few small file reads: the status files the caller's running dashboard or
exporter leaves (`status_file`, trusted as `status_trust` says), one job chosen (`choose`).
Without one it asks an exporter's ``/metrics`` (on this machine only one of the caller's), and
only then polls the tools itself (with none, the probe files alone), under a hard time limit,
caching the answer for `CACHE_FRESH_S` so that the next calls do not start the tools again.
Never imports Textual; the rendering (`render`) is pure.

Formats, each escaping what its consumer interprets in the text: ``tmux`` (colours in tmux's
``#[fg=...]``; ``#`` doubled), ``plain`` (escape sequences and controls removed, as
everywhere), ``polybar`` (``%{F#rrggbb}``; a zero-width space inside any ``%{`` of the text,
so no tag, a click action included, comes from a file: polybar has no escape for it) and
``waybar`` (one JSON object: text, tooltip, class, percentage; text and tooltip are Pango
markup, so ``&``, ``<`` and ``>`` are escaped). Every figure is bounded first
(`status_file.bounded`). The exit status is 0 whenever a line was printed, including "no
accelerator" (a status bar shows stdout and ignores the status).
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from gpusat_tui.commands.status_options import StatusOptions
from gpusat_tui.notify.status_file import (
    CACHE_NAME,
    MAX_SINCE_S,
    JobStatus,
    StatusFileWriter,
    bounded,
    read_all,
)
from gpusat_tui.text import clean

__all__ = ["CACHE_FRESH_S", "FORMATS", "choose", "render", "run_status", "status_from_metrics"]

FORMATS = ("tmux", "plain", "polybar", "waybar")
DEFAULT_EXPORTER = "http://127.0.0.1:9478/metrics"
#: How long a quick poll's answer is reused: tmux's default status-interval is 15 s.
CACHE_FRESH_S = 15.0

#: Badge word per kind (imbalanced is told by its cause).
WORDS = {
    "saturated": "SATURATED", "starving": "STARVING", "stalled": "STALLED",
    "fragmenting": "FRAGMENTING", "imbalanced": "IMBALANCED", "idle": "IDLE",
    "unknown": "UNKNOWN",
}
CAUSE_WORDS = {"straggler": "STRAGGLER", "throttled": "THROTTLED"}
#: Colour per kind: tmux's names, and the same as hex for bars that take hex.
TMUX_COLOURS = {
    "saturated": "green", "starving": "yellow", "stalled": "red", "fragmenting": "magenta",
    "imbalanced": "colour208", "idle": "colour244", "unknown": "colour244", "none": "colour244",
}
HEX_COLOURS = {
    "saturated": "#5faf5f", "starving": "#d7af00", "stalled": "#d75f5f",
    "fragmenting": "#af5fd7", "imbalanced": "#ff8700", "idle": "#808080",
    "unknown": "#808080", "none": "#808080",
}
BAR_CELLS = 4


def bar(util_pct: float | None) -> str:
    """``▮▮▮▯``: the mean utilisation in `BAR_CELLS` cells (empty when unknown)."""
    if util_pct is None:
        return ""
    filled = max(0, min(BAR_CELLS, round(util_pct / 100.0 * BAR_CELLS)))
    return "▮" * filled + "▯" * (BAR_CELLS - filled)


def _duration(seconds: float) -> str:
    seconds = min(max(0.0, seconds), MAX_SINCE_S)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def _cards(cards: tuple[str, ...]) -> str:
    if not cards:
        return ""
    more = f"+{len(cards) - 1}" if len(cards) > 1 else ""
    return clean(cards[0], 24) + more


def words(status: JobStatus | None, now: float, jobs: int = 1) -> tuple[str, str]:
    """(colour key, plain text) of the line: ``GPU ▮▮▯▯ STARVING 41% wait``; with ``jobs``
    live, whose it is: ``... · train.py 1/2``."""
    if status is None:
        return "none", "GPU –"
    kind = status.kind if status.kind in WORDS else "unknown"
    word = WORDS[kind]
    detail = ""
    if kind == "imbalanced":
        word = CAUSE_WORDS.get(status.cause or "", word)
        detail = _cards(status.lagging)
    elif kind == "starving":
        if status.data_wait_pct is not None:
            detail = f"{status.data_wait_pct:.0f}% wait"
        elif status.cause and status.cause != "unknown":
            detail = clean(status.cause, 24)
    elif kind == "stalled" and status.since is not None:
        detail = _duration(now - status.since)
    elif kind == "fragmenting":
        detail = _cards(status.lagging)
    parts = ["GPU", bar(status.util_pct), word, detail]
    if jobs > 1:
        whose = status.job_name or status.job or f"PID {status.pid}"
        parts.append(f"· {clean(whose, 24)} 1/{jobs}")
    return kind, " ".join(p for p in parts if p)


def polybar_escape(text: str) -> str:
    """Polybar parses every ``%{`` as a tag and has no escape for it (``%%`` is two percent
    signs, then the tag: its parser's source), so a zero-width space goes between the two."""
    return text.replace("%{", "%\u200b{")


def markup_escape(text: str) -> str:
    """Pango markup (waybar): the three characters it interprets."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(status: JobStatus | None, fmt: str, now: float | None = None, jobs: int = 1) -> str:
    """The status line in one of `FORMATS` (pure); ``jobs``: how many are live (`choose`)."""
    now = time.time() if now is None else now
    status = bounded(status, now) if status is not None else None
    kind, text = words(status, now, jobs)
    if fmt == "tmux":
        return f"#[fg={TMUX_COLOURS[kind]}]{text.replace('#', '##')}#[default]"
    if fmt == "polybar":
        return f"%{{F{HEX_COLOURS[kind]}}}{polybar_escape(text)}%{{F-}}"
    if fmt == "waybar":
        tooltip = clean(status.headline, 300) if status and status.headline else text
        doc: dict[str, object] = {"text": markup_escape(text),
                                  "tooltip": markup_escape(tooltip), "class": kind}
        if status is not None and status.util_pct is not None:
            doc["percentage"] = round(status.util_pct)
        return json.dumps(doc, ensure_ascii=False)
    return text


#: Which job the badge shows when it cannot tell whose is the caller's: the worst first.
SEVERITY = ("stalled", "starving", "imbalanced", "fragmenting", "unknown", "idle", "saturated")


def choose(statuses: list[JobStatus], job: str | None = None,
           tmux: str | None = None) -> tuple[JobStatus | None, int]:
    """The status the badge shows, and how many jobs are live (pure).

    ``job`` (``--job``) keeps that job only (its key, its name or its monitor's PID). Else the
    monitors started in the caller's tmux server win where there are any: ``$TMUX`` is
    ``socket,server pid,session``, and a status-bar command gets session -1 (tmux 3.3), so
    only the server can be told. One status per job (the newest: ``statuses`` come
    newest first); monitors that see no job count only where none sees one. Of several jobs
    the one in the worst state is shown (ties by key: the same one on every call)."""
    if job is not None:
        statuses = [s for s in statuses if job in (s.job, s.job_name, str(s.pid))]
    elif tmux:
        server = tmux.rpartition(",")[0]
        statuses = [s for s in statuses if s.tmux and s.tmux.rpartition(",")[0] == server] \
            or statuses
    per_job: dict[str | None, JobStatus] = {}
    for status in statuses:
        per_job.setdefault(status.job, status)
    if len(per_job) > 1:
        per_job.pop(None, None)
    if not per_job:
        return None, 0
    rank = {kind: i for i, kind in enumerate(SEVERITY)}
    shown = min(per_job.values(), key=lambda s: (rank.get(s.kind, len(SEVERITY)), s.job or ""))
    return shown, len(per_job)


# --- from an exporter's /metrics ------------------------------------------------------------


def status_from_metrics(text: str) -> JobStatus | None:
    """The job's status from an exporter's exposition (its own verdicts), or None."""
    from prometheus_client.parser import text_string_to_metric_families

    kind = cause = None
    utils: list[float] = []
    waits: list[float] = []
    lagging: list[str] = []
    card_kinds: dict[str, str] = {}
    t = None
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "gpusat_job_verdict" and s.value == 1:
                kind, cause = s.labels.get("kind"), s.labels.get("cause") or None
            elif s.name == "gpusat_card_verdict" and s.value == 1:
                card_kinds[s.labels.get("card", "")] = s.labels.get("kind", "")
            elif s.name == "gpusat_card_utilization_ratio":
                utils.append(s.value * 100.0)
            elif s.name == "gpusat_probe_data_wait_ratio":
                waits.append(s.value * 100.0)
            elif s.name == "gpusat_exporter_last_poll_timestamp_seconds":
                t = s.value
    if kind is None:
        return None
    if kind in ("imbalanced", "fragmenting", "stalled"):
        lagging = [card for card, k in card_kinds.items() if k == kind]
    return JobStatus(
        kind=kind, cause=cause, util_pct=sum(utils) / len(utils) if utils else None,
        data_wait_pct=max(waits) if waits else None, cards=len(card_kinds),
        lagging=tuple(lagging), t=t, writer="export",
    )


def from_exporter(url: str, timeout_s: float) -> JobStatus | None:
    """The status an exporter serves; None without one, or when it listens on this machine
    under another user's uid (`status_trust.local_listener_is_mine`)."""
    import urllib.error
    import urllib.parse
    import urllib.request

    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if parts.hostname in ("localhost", "::1") or (parts.hostname or "").startswith("127."):
        from gpusat_tui.notify.status_trust import local_listener_is_mine

        if local_listener_is_mine(port) is False:
            return None

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            text = answer.read(4 << 20).decode("utf-8", "replace")
    except (OSError, urllib.error.URLError, ValueError):
        return None
    try:
        return status_from_metrics(text)
    except Exception:  # not an exposition: no answer from there
        return None


# --- a quick poll of its own ----------------------------------------------------------------


def quick_poll(options: StatusOptions) -> JobStatus | None:
    """Poll the tools for ``poll_s`` seconds under the hard limit ``timeout_s``; with no tool,
    the host and the probe files of trainers started under ``run`` alone (what ``check`` does
    then). None when there is neither or the limit passed. The answer is cached
    (`CACHE_NAME`)."""
    import asyncio
    import threading

    from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
    from gpusat_tui.errors import ToolMissing
    from gpusat_tui.notify.status_file import summarise
    from gpusat_tui.sources.polling.live import LiveSource
    from gpusat_tui.sources.polling.procs import kill_running_tools

    # The hard limit, whatever hangs (discovery included): kill the tools, print, exit.
    def give_up() -> None:
        kill_running_tools()
        with contextlib.suppress(OSError):
            os.write(1, (render(None, options.format) + "\n").encode())
        os._exit(0)

    watchdog = threading.Timer(options.timeout_s, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        interval = min(0.5, options.poll_s)
        source = LiveSource(interval=interval, overrides=dict(options.tools),
                            pids=list(options.pids))
        try:
            source.discover()
        except ToolMissing:
            # No tool: the probed trainers' own files still judge the job, as `check` does.
            if not source.use_probes_only():
                return None
        tracker = VerdictTracker(window_s=max(options.poll_s, 1.0))

        async def collect() -> JobStatus | None:
            status = None
            deadline = time.monotonic() + options.poll_s
            try:
                async for frame in source.frames():
                    status = summarise(frame, tracker.push(frame, focus=()))
                    if time.monotonic() >= deadline:
                        break
            finally:
                await source.aclose()
            return status

        status = asyncio.run(collect())
    finally:
        watchdog.cancel()
    if status is not None:
        StatusFileWriter("status", interval, name=CACHE_NAME, fresh_s=CACHE_FRESH_S).write(status)
    return status


def run_status(options: StatusOptions) -> int:
    """Entry point of ``gpusat-tui status``."""
    from gpusat_tui.output import emit

    status, jobs = choose(read_all(max_age_s=options.max_age_s), options.job,
                          os.environ.get("TMUX") or None)
    if status is None and options.exporter is not None:
        status, jobs = choose(
            [s for s in [from_exporter(options.exporter, timeout_s=min(0.5, options.timeout_s))]
             if s is not None], options.job)
    if status is None and options.poll_s > 0:
        polled = quick_poll(options)
        status, jobs = choose([polled] if polled is not None else [], options.job)
    emit(render(status, options.format, jobs=jobs))
    return 0
