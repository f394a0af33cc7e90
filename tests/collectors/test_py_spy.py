"""``py-spy dump`` output read from real captures (`samples/pyspy`): the training thread's
frames with their modules, in both the JSON and the text format, and what its failures mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusat_tui.collectors.py_spy import (
    dump_failure,
    is_user_frame,
    module_of,
    parse_dump,
    stack_dump,
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "pyspy"
#: The PIDs of the captured jobs (their main threads' OS ids).
EVENT_PID, RECV_PID = 756, 757


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


@pytest.mark.parametrize("name", ["dump-event-wait-heartbeat.json",
                                  "dump-event-wait-heartbeat.txt"])
def test_the_main_thread_is_read_not_the_heartbeat(name: str) -> None:
    """The JSON lists the heartbeat thread first: the main thread is found by its OS id."""
    threads = parse_dump(sample(name))
    assert sorted(t.name or "" for t in threads) == ["MainThread", "heartbeat"]
    dump = stack_dump(sample(name), EVENT_PID, 5.0)
    assert dump.error is None and dump.thread == "MainThread" and dump.t == 5.0
    # outermost first, as a probe's stack
    assert [(f.function, f.line) for f in dump.frames] == [
        ("<module>", 15), ("main", 12), ("wait_for_peer", 8), ("Event.wait", 629),
        ("Condition.wait", 327),
    ]
    modules = [f.module for f in dump.frames]
    assert modules == ["", "", "", "threading", "threading"]
    assert all(is_user_frame(f) for f in dump.frames[:3])
    assert not any(is_user_frame(f) for f in dump.frames[3:])
    assert {f.file for f in dump.frames} == {"hung_job.py", "threading.py"}  # base names


def test_json_keeps_full_paths_and_idle_states() -> None:
    threads = parse_dump(sample("dump-socket-recv-heartbeat.json"))
    main = next(t for t in threads if t.os_tid == RECV_PID)
    assert main.idle is True and main.name == "MainThread"
    assert main.frames[0].file == "hung_recv.py" and main.frames[0].line == 8
    assert main.frames[0].function == "all_reduce"


def test_text_and_json_of_one_moment_give_the_same_frames() -> None:
    for base, pid in (("dump-event-wait-heartbeat", EVENT_PID),
                      ("dump-socket-recv-heartbeat", RECV_PID)):
        text = stack_dump(sample(base + ".txt"), pid, 0.0)
        data = stack_dump(sample(base + ".json"), pid, 0.0)
        assert [(f.module, f.function, f.line) for f in text.frames] == [
            (f.module, f.function, f.line) for f in data.frames]


@pytest.mark.parametrize(("path", "module"), [
    ("/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
     "torch.distributed.distributed_c10d"),
    ("/venv/lib/python3.11/site-packages/torch/__init__.py", "torch"),
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", "threading"),
    ("/usr/lib/python3.13t/concurrent/futures/_base.py", "concurrent.futures._base"),
    ("torch/nn/modules/module.py", "torch.nn.modules.module"),  # text format, short
    ("threading.py", "threading"),
    ("train.py", ""),
    ("/home/u/train.py", ""),
    ("<frozen importlib._bootstrap>", ""),
])
def test_module_of_a_path(path: str, module: str) -> None:
    assert module_of(path) == module


def test_garbage_is_a_failed_dump_not_an_exception() -> None:
    for text in ("", "[", "[{\"frames\": 3}]", "Thread x\n  nonsense", "\x1b[31m" * 100):
        dump = stack_dump(text, 1, 0.0)
        assert dump.error == "failed" and dump.frames == ()


def test_failures_are_told_apart() -> None:
    error, message = dump_failure(1, sample("stderr-ptrace-denied.txt"))
    assert error == "denied" and message.startswith("Permission Denied")
    error, message = dump_failure(1, sample("stderr-no-such-process.txt"))
    assert error == "failed" and "Check that the process is running" in message
    assert "backtrace" not in message.lower() and "\n" not in message
    error, message = dump_failure(1, sample("stderr-not-python.txt"))
    assert (error, message) == ("failed", "Failed to find python version from target process")
    error, _ = dump_failure(1, "Error: Operation not permitted (os error 1)")
    assert error == "denied"
    assert json.loads(json.dumps(dump_failure(1, "")))[1] == "exit status 1"
