"""``gpusat-tui status`` under hostile input: status folders and files that are not the caller's,
writers that are gone or whose PID was reused, PIDs and intervals no process can have, figures
that are NaN or 1e308, and text holding each bar's active syntax. Then whose badge it is when
several jobs are live. Other users' files are made with ``os.chown`` (the tests skip without
root)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusat_tui.commands.status import choose, render
from gpusat_tui.model import Assessment, CardReading, Frame, JobContext, Verdict
from gpusat_tui.notify.status_file import JobStatus, read_all, read_fresh, summarise
from tests.prom.hosts import REPO

OTHER_UID = 65534  # nobody
needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                                reason="making another user's files needs root (os.chown)")


def doc(**changes: object) -> dict[str, object]:
    """A fresh layout-1 status file of a live writer (this test process): a stalled job."""
    now = time.time()
    base: dict[str, object] = dict(
        layout=1, writer="dashboard", pid=os.getpid(), t=now, interval_s=1.0, fresh_s=5.0,
        kind="stalled", cause=None, since=now - 240, util_pct=0.0, data_wait_pct=None,
        cards=1, lagging=[], headline="nothing runs")
    base.update(changes)
    return base


def put(folder: Path, name: str, content: dict[str, object], mtime: float | None = None,
        uid: int | None = None) -> Path:
    path = folder / name
    path.write_text(json.dumps(content))
    path.chmod(0o600)
    if uid is not None:
        os.chown(path, uid, -1)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def status_line(env_changes: dict[str, str], *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSAT_PROBE_DIR", "TMUX")}
    env.update({"PYTHONPATH": str(REPO), **env_changes})
    done = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "status", "--format", "plain", "--exporter",
         "none", "--poll", "0", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout.rstrip("\n")


# --- the folder and the files are the caller's ----------------------------------------------


@needs_root
def test_the_default_folder_of_another_user_is_never_read(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    folder = runtime / "gpusat-tui"
    folder.mkdir(parents=True)
    put(folder, "status-1.json", doc(), uid=OTHER_UID)
    os.chown(folder, OTHER_UID, -1)
    folder.chmod(0o777)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {"XDG_RUNTIME_DIR": str(runtime), "TMPDIR": str(tmpdir)}
    assert status_line(env) == "GPU –"
    # The same folder made the caller's, and private: now it is read.
    os.chown(folder, os.getuid(), -1)
    folder.chmod(0o700)
    os.chown(folder / "status-1.json", os.getuid(), -1)
    assert status_line(env).startswith("GPU ▯▯▯▯ STALLED")


def test_a_folder_others_may_write_to_is_never_read(tmp_path: Path) -> None:
    folder = tmp_path / "probes"
    folder.mkdir()
    put(folder, "status-1.json", doc())
    for mode in (0o777, 0o770, 0o722, 0o1777):
        folder.chmod(mode)
        assert read_all(dirs=[str(folder)]) == [], oct(mode)
    folder.chmod(0o700)
    assert [s.kind for s in read_all(dirs=[str(folder)])] == ["stalled"]


@needs_root
def test_another_user_s_file_in_the_caller_s_folder_is_never_read(tmp_path: Path) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    put(folder, "status-1.json", doc(), uid=OTHER_UID)
    assert read_all(dirs=[str(folder)]) == []
    os.chown(folder / "status-1.json", os.getuid(), -1)
    assert len(read_all(dirs=[str(folder)])) == 1


def test_a_link_or_a_file_others_may_write_is_never_read(tmp_path: Path) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    target = put(tmp_path, "elsewhere.json", doc())
    (folder / "status-1.json").symlink_to(target)
    put(folder, "status-2.json", doc()).chmod(0o666)
    assert read_all(dirs=[str(folder)]) == []


# --- the writer still runs, and is the writer ------------------------------------------------


@pytest.fixture
def later_process() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_pid_reused_by_a_later_process_does_not_keep_a_file_alive(
    tmp_path: Path, later_process: subprocess.Popen[bytes],
) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    # Written a minute before that process started; it claims to stay fresh for an hour.
    before = time.time() - 60
    put(folder, "status-1.json", doc(pid=later_process.pid, fresh_s=3600.0, t=before),
        mtime=before)
    assert read_all(dirs=[str(folder)]) == []
    # The same process as a writer that wrote after it started is believed.
    now = time.time()
    put(folder, "status-1.json", doc(pid=later_process.pid, t=now), mtime=now)
    assert len(read_all(dirs=[str(folder)])) == 1


@pytest.mark.parametrize("pid", [0, -1, 1, 10**30, -(10**30), True, "4242", 4.0, None])
def test_pids_no_writer_can_have_are_refused_without_a_crash(tmp_path: Path,
                                                             pid: object) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    put(folder, "status-1.json", doc(pid=pid))
    assert read_all(dirs=[str(folder)]) == []


@pytest.mark.parametrize("claims", [
    {"interval_s": float("inf"), "fresh_s": None},
    {"interval_s": 1e308, "fresh_s": None},
    {"fresh_s": float("inf")},
    {"fresh_s": 1e308},
    {"fresh_s": float("nan"), "interval_s": float("nan")},
])
def test_a_day_old_file_is_stale_whatever_interval_it_claims(tmp_path: Path,
                                                            claims: dict) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    day_ago = time.time() - 86400
    put(folder, "status-1.json", doc(t=day_ago, **claims), mtime=day_ago)
    assert read_fresh(dirs=[str(folder)]) is None


def test_figures_in_a_fresh_file_are_taken_from_the_file_s_time_too(tmp_path: Path) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    put(folder, "status-1.json", doc(), mtime=time.time() - 3600)  # t says now; written long ago
    assert read_all(dirs=[str(folder)]) == []


# --- every figure bounded before it is formatted ---------------------------------------------

NOW = 1_767_225_600.0
NAN = float("nan")


@pytest.mark.parametrize("fmt", ["tmux", "plain", "polybar", "waybar"])
@pytest.mark.parametrize("status", [
    JobStatus("starving", "input-bound", util_pct=NAN, data_wait_pct=NAN),
    JobStatus("starving", util_pct=1e308, data_wait_pct=-1e308),
    JobStatus("stalled", since=-1e308, util_pct=-50.0),
    JobStatus("stalled", since=float("inf"), util_pct=float("-inf")),
    JobStatus("saturated", util_pct=1e308, cards=10**30),
    JobStatus("nonsense\x1b[2J", cause="\x00", util_pct=NAN),
])
def test_nan_and_huge_figures_print_a_sane_line(status: JobStatus, fmt: str) -> None:
    line = render(status, fmt, NOW)
    assert "nan" not in line.lower() and "inf" not in line.lower()
    assert "\x1b" not in line and "\x00" not in line
    text = render(status, "plain", NOW)
    assert len(text) < 60 and "2777777" not in text and not re.search(r"-\d", text)
    if fmt == "waybar":
        percentage = json.loads(line).get("percentage")
        assert percentage is None or 0 <= percentage <= 100


def test_nan_figures_from_a_file_reach_the_command_as_unknown(tmp_path: Path) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    (folder / "status-1.json").write_text(
        f'{{"layout": 1, "writer": "dashboard", "pid": {os.getpid()}, "t": {time.time()!r}, '
        '"fresh_s": 5.0, "kind": "starving", "cause": "input-bound", "since": -1e308, '
        '"util_pct": NaN, "data_wait_pct": ' + "9" * 400 + ', "cards": 1e400, '
        '"lagging": [], "headline": null}')
    (folder / "status-1.json").chmod(0o600)
    status = read_fresh(dirs=[str(folder)])
    assert status is not None
    assert (status.util_pct, status.data_wait_pct, status.since, status.cards) == (
        None, None, None, 0)
    assert render(status, "plain") == "GPU STARVING input-bound"


# --- each format escapes what its consumer interprets ---------------------------------------

HOSTILE = {
    "polybar": "%{A1:touch /tmp/x:}hi%{A}",
    "tmux": "#(touch /tmp/x)#[fg=red]",
    "waybar": "<span color='red'>&amp;</span>",
    "plain": "\x1b]0;title\x07\x9b2Jok",
}


def hostile(text: str) -> JobStatus:
    return JobStatus("starving", text, util_pct=50.0, headline=text)


def test_polybar_gets_no_tag_from_a_file() -> None:
    # Polybar's parser takes every "%{" as a tag (it has no escape: "%%{A1:...}" still runs
    # the action), so no "%{" of the text may reach it.
    for text in (HOSTILE["polybar"], "%%{A1:touch /tmp/x:}x%%{A}", "100%{F#fff}"):
        line = render(hostile(text), "polybar", NOW)
        assert line.count("%{") == 2 and line.startswith("%{F#") and line.endswith("%{F-}")
        assert "%\u200b{A1:touch" in line or "%\u200b{F#fff}" in line


def test_tmux_gets_no_format_or_command_from_a_file() -> None:
    line = render(hostile(HOSTILE["tmux"]), "tmux", NOW)
    assert "##(touch" in line and "##[fg=red]" in line
    assert line.replace("##", "").count("#") == 2  # the line's own #[fg=...] and #[default]


def test_waybar_gets_no_markup_from_a_file() -> None:
    doc_ = json.loads(render(hostile(HOSTILE["waybar"]), "waybar", NOW))
    for field in ("text", "tooltip"):
        assert "<" not in doc_[field] and ">" not in doc_[field]
        assert "&lt;span" in doc_[field]
        assert "&amp;amp;" in doc_[field]  # a literal & shown as one, never as an entity
    with_ampersand = json.loads(render(hostile("a & b"), "waybar", NOW))
    assert "a &amp; b" in with_ampersand["text"]


def test_plain_gets_no_escape_sequence_from_a_file() -> None:
    line = render(hostile(HOSTILE["plain"]), "plain", NOW)
    assert not any(ch in line for ch in "\x1b\x07\x9b") and "ok" in line


# --- whose badge it is -----------------------------------------------------------------------


def job(kind: str, key: str | None, name: str | None, tmux: str | None = None,
        t: float = NOW, pid: int = 100) -> JobStatus:
    return JobStatus(kind, t=t, job=key, job_name=name, tmux=tmux, pid=pid, util_pct=50.0)


def test_several_live_jobs_show_the_worst_named_the_same_on_every_call() -> None:
    mine = job("saturated", "plain:11", "mine.py", t=NOW)
    theirs = job("imbalanced", "plain:22", "theirs.py", t=NOW - 1)
    for order in ([mine, theirs], [theirs, mine]):
        shown, jobs = choose(order)
        assert shown is theirs and jobs == 2
        assert render(shown, "plain", NOW, jobs) == "GPU ▮▮▯▯ IMBALANCED · theirs.py 1/2"


def test_the_caller_s_tmux_server_and_job_win() -> None:
    mine = job("saturated", "plain:11", "mine.py", tmux="/tmp/tmux-0/default,7,1")
    theirs = job("stalled", "plain:22", "theirs.py", tmux="/tmp/tmux-0/other,9,0")
    # A status-bar command of tmux 3.3 gets the server's socket and PID, and session -1.
    assert choose([mine, theirs], tmux="/tmp/tmux-0/default,7,-1") == (mine, 1)
    assert choose([mine, theirs], tmux="/tmp/tmux-0/third,5,-1") == (theirs, 2)
    assert choose([mine, theirs], job="theirs.py") == (theirs, 1)
    assert choose([mine, theirs], job="plain:11") == (mine, 1)
    assert choose([mine, theirs], job="100") == (theirs, 2)  # a PID both monitors share
    assert choose([mine, theirs], job="nobody") == (None, 0)
    # Two monitors of one job are one job; one seeing no job does not count beside them.
    again = job("stalled", "plain:11", "mine.py", t=NOW - 5)
    host_only = job("idle", None, None)
    assert choose([mine, again, host_only]) == (mine, 1)


def test_the_writer_names_its_job() -> None:
    cards = [CardReading(vendor="nvidia", index=0, util_pct=90.0)]
    verdict = Verdict(kind="saturated")
    frame = Frame(t=NOW, cards=cards, jobs=[JobContext(
        scheduler="plain", job_id="4242", command="python -u /home/a/train.py --lr 3")])
    status = summarise(frame, Assessment(cards={"nvidia:0": verdict}, job=verdict))
    assert (status.job, status.job_name) == ("plain:4242", "train.py")


def test_the_command_shows_the_caller_s_job_and_says_whose_among_several(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    put(folder, "status-1.json", doc(kind="saturated", util_pct=100.0, job="plain:11",
                                     job_name="mine.py", tmux="/tmp/tmux-0/default,7,1"))
    put(folder, "status-2.json", doc(kind="stalled", job="plain:22", job_name="theirs.py",
                                     tmux=None))
    env = {"GPUSAT_PROBE_DIR": str(folder)}
    assert status_line(env).startswith("GPU ▯▯▯▯ STALLED 4m · theirs.py 1/2")
    assert status_line({**env, "TMUX": "/tmp/tmux-0/default,7,-1"}) == "GPU ▮▮▮▮ SATURATED"
    assert status_line(env, "--job", "mine.py") == "GPU ▮▮▮▮ SATURATED"
    assert status_line(env, "--job", "plain:22").startswith("GPU ▯▯▯▯ STALLED 4m")


# --- an exporter on this machine is asked only when it is the caller's ----------------------

EXPOSITION = (
    '# TYPE gpusat_job_verdict gauge\n'
    'gpusat_job_verdict{host="h",kind="stalled",cause=""} 1\n'
)
SERVE = """
import encodings.idna, http.server, os, sys
if len(sys.argv) > 1:
    os.setuid(int(sys.argv[1]))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(BODY.encode())
    def log_message(self, *a): pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
print(server.server_port, flush=True)
server.serve_forever()
""".replace("BODY", repr(EXPOSITION))


def exporter_as(*uid: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, *uid], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/metrics"


@needs_root
def test_another_user_s_exporter_on_this_machine_is_not_asked(tmp_path: Path) -> None:
    folder = tmp_path / "probes"
    folder.mkdir(mode=0o700)
    env = {"GPUSAT_PROBE_DIR": str(folder)}
    for uid, expected in ((str(OTHER_UID),), "GPU –"), ((), "GPU STALLED"):
        proc, url = exporter_as(*uid)
        try:
            assert status_line(env, "--exporter", url) == expected
        finally:
            proc.kill()
            proc.wait()
