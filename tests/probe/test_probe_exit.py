"""The probe leaves nothing in its folder when the trainer exits, even mid-publication.

Found in CI: a job whose exit fell while the publisher thread was writing left
``.probe-<pid>.json.tmp`` behind (and the rename could bring the file back after its removal).
Here the publication is held inside its write while the exit runs, in this process, with the
probe's real functions.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gpusat_tui.probe import publish, state
from gpusat_tui.probe.layout import file_name, tmp_name
from gpusat_tui.probe.state import STATE


@pytest.fixture
def publishing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """STATE set up as `publish.start_publisher` leaves it, publishing into ``tmp_path``."""
    monkeypatch.setattr(STATE, "dir", str(tmp_path))
    monkeypatch.setattr(STATE, "path", str(tmp_path / file_name(os.getpid())))
    monkeypatch.setattr(STATE, "pid", os.getpid())
    monkeypatch.setattr(STATE, "on", True)
    monkeypatch.setattr(STATE, "stop", threading.Event())
    monkeypatch.setattr(STATE, "thread", None)
    monkeypatch.setattr(STATE, "said", True)  # no stderr line from a test
    monkeypatch.setattr(STATE, "t0", state.clock())
    monkeypatch.setattr(STATE, "prev", None)
    return tmp_path


def test_a_publication_then_exit_leaves_an_empty_folder(publishing: Path) -> None:
    publish.publish_now()
    assert [p.name for p in publishing.iterdir()] == [file_name(os.getpid())]
    publish.at_exit()
    assert list(publishing.iterdir()) == []


def test_exit_during_a_publication_waits_for_it_and_leaves_nothing(
    publishing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_write, release = threading.Event(), threading.Event()
    real_write = os.write

    def held_write(fd: int, data: bytes) -> int:
        if threading.current_thread().name == "publisher":
            in_write.set()
            release.wait(5)
        return real_write(fd, data)

    monkeypatch.setattr(publish.os, "write", held_write)
    thread = threading.Thread(target=publish.publish_now, name="publisher")
    monkeypatch.setattr(STATE, "thread", thread)
    thread.start()
    assert in_write.wait(5)
    assert (publishing / tmp_name(os.getpid())).exists()  # the publication is in flight
    # The exit waits for it: release the write shortly after the exit began.
    threading.Timer(0.2, release.set).start()
    publish.at_exit()
    thread.join(5)
    assert list(publishing.iterdir()) == []


def test_a_publication_that_ends_after_the_removal_leaves_nothing(
    publishing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exit gave up waiting (a hung disk): the publication that finishes later removes
    its own temporary file instead of renaming it over a file already removed."""
    real_write = os.write

    def write_then_removed(fd: int, data: bytes) -> int:
        written = real_write(fd, data)
        state.remove_file()  # what an exit that stopped waiting does meanwhile
        return written

    monkeypatch.setattr(publish.os, "write", write_then_removed)
    publish.publish_now()
    assert list(publishing.iterdir()) == []


def test_removal_takes_a_temporary_file_left_by_a_failed_write(publishing: Path) -> None:
    (publishing / file_name(os.getpid())).write_text("{}")
    (publishing / tmp_name(os.getpid())).write_text("{")
    state.remove_file()
    assert list(publishing.iterdir()) == []
