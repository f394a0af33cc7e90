"""The monitor facing probe files: the layout as a contract, bad files, ties to cards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.host.probes.probe_card_tie import tie_card
from gpusat_tui.host.probes.probe_files import ProbePoller, ProbeReader, parse_probe
from gpusat_tui.model import CardProcess, CardReading
from gpusat_tui.probe import publish
from gpusat_tui.probe.layout import (
    LAYOUT_1_KEYS,
    LAYOUT_VERSION,
    MAX_BYTES,
    file_name,
    tmp_name,
)

#: A layout-1 file as another program (an older or newer probe) would write it, from the
#: documented keys alone.
HAND_WRITTEN: dict[str, Any] = {
    "layout": 1, "pid": 0, "start_ticks": None, "uid": os.getuid(), "t": 1000.0,
    "elapsed_s": 12.5, "interval_s": 1.0, "batches": 300, "steps": 290, "data_wait_s": 5.0,
    "data_wait_pct": 43.0, "step_ms": 182.0, "step_source": "optimizer",
    "batches_per_s": 5.5, "samples_per_s": 1240.0, "batch_size": 225, "rank": 1,
    "local_rank": 1, "world_size": 8, "device_type": "cuda", "device_index": 1, "hip": False,
    "env": {"CUDA_VISIBLE_DEVICES": "4,5,6,7", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    "alloc": {"allocated_bytes": 10 * 2**30, "reserved_bytes": 12 * 2**30,
              "inactive_split_bytes": 2**28, "alloc_retries": 0, "ooms": 0},
    "cmd": "train.py", "last_batch_s": 12.4, "last_step_s": 12.3,
    "num_workers": 4, "framework": "torch", "data_wait_note": None,
    "stack_hz": 20.0, "stack_samples": 250,
    "phase_samples": {"data": 100, "forward": 50, "backward": 60, "optimizer": 20, "other": 20},
    "user_lines": [["/home/u/train.py", 88, "main", 120], ["/home/u/train.py", 40, "collate", 30]],
    "stack_phase": "collective", "stack_where": "torch.distributed.all_reduce",
    "stack_line": ["/home/u/train.py", 88, "main"], "stack_still_s": 42.5,
    "stack_sig": "0badc0de",
    "stack": [["__main__", "main", "train.py", 88],
              ["torch.distributed.distributed_c10d", "all_reduce", "distributed_c10d.py", 2501]],
}


def nv(index: int, name: str = "H100", uuid: str | None = None) -> CardReading:
    return CardReading(vendor="nvidia", index=index, name=name, uuid=uuid)


def write(folder: Path, doc: dict[str, Any], pid: int | None = None) -> Path:
    pid = doc["pid"] if pid is None else pid
    path = folder / file_name(pid)
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def mine(**update: Any) -> dict[str, Any]:
    """A layout-1 document of this (live) test process, published just now."""
    import time

    return {**HAND_WRITTEN, "pid": os.getpid(), "t": time.time(), **update}


# --- the layout is an interface ----------------------------------------------------------------


def test_the_probe_writes_exactly_the_documented_layout_1_keys() -> None:
    assert LAYOUT_VERSION == 1
    assert tuple(publish.snapshot()) == LAYOUT_1_KEYS
    assert set(HAND_WRITTEN) == set(LAYOUT_1_KEYS)


def test_a_hand_written_layout_1_file_reads_as_documented(tmp_path: Path) -> None:
    write(tmp_path, mine())
    reader = ProbeReader(dirs=[str(tmp_path)])
    [sample], notes = reader.sample([nv(i) for i in range(8)])
    assert notes == []
    assert (sample.pid, sample.rank, sample.local_rank, sample.world_size) == (
        os.getpid(), 1, 1, 8)
    # Device 1 of CUDA_VISIBLE_DEVICES=4,5,6,7 is physical card 5.
    assert (sample.card_id, sample.tie, sample.device_index) == ("nvidia:5", "device", 1)
    assert (sample.data_wait_pct, sample.step_ms, sample.samples_per_s) == (43.0, 182.0, 1240.0)
    assert (sample.batches, sample.steps, sample.data_wait_s, sample.elapsed_s) == (
        300, 290, 5.0, 12.5)
    assert sample.alloc is not None and sample.alloc.reserved_bytes == 12 * 2**30
    assert sample.age_s is not None and 0 <= sample.age_s < 5
    assert sample.device_type == "cuda"
    assert (sample.stack_hz, sample.stack_samples, sample.stack_still_s) == (20.0, 250, 42.5)
    assert sample.phase_samples == HAND_WRITTEN["phase_samples"]
    assert [(u.file, u.line, u.function, u.samples) for u in sample.user_lines] == [
        ("/home/u/train.py", 88, "main", 120), ("/home/u/train.py", 40, "collate", 30)]
    assert (sample.stack_phase, sample.stack_where, sample.stack_sig) == (
        "collective", "torch.distributed.all_reduce", "0badc0de")
    assert sample.stack_line is not None and sample.stack_line.line == 88
    assert [(f.module, f.function, f.line) for f in sample.stack] == [
        ("__main__", "main", 88), ("torch.distributed.distributed_c10d", "all_reduce", 2501)]


def test_malformed_stack_fields_are_left_out_never_guessed(tmp_path: Path) -> None:
    """The sampler's fields of the wrong shape are empty or None; names reach no terminal raw."""
    write(tmp_path, mine(
        phase_samples={"data": -3, "forward": 2.5, "backward": 7, "lunch": 9},
        user_lines=[["a.py", 1, "f"], ["b.py", "x", "g", 3], ["\x1b[31mc.py", 5, "h", 4], 7],
        stack_phase="lunch", stack_where="\x1b]0;owned\x07torch.x", stack_line=[1, 2, 3],
        stack_sig="zz", stack={"not": "a list"}, stack_samples=True, stack_still_s=-1.0,
    ))
    [sample], notes = ProbeReader(dirs=[str(tmp_path)]).sample()
    assert sample.phase_samples == {"backward": 7}
    assert [(u.line, u.samples) for u in sample.user_lines] == [(5, 4)]
    assert "\x1b" not in sample.user_lines[0].file
    assert sample.stack_where is not None and "\x1b" not in sample.stack_where
    assert (sample.stack_phase, sample.stack_line, sample.stack_sig, sample.stack) == (
        None, None, None, ())
    assert (sample.stack_samples, sample.stack_still_s) == (0, None)
    assert any("stack_still_s=-1.0" in n for n in notes), notes


def test_unknown_extra_keys_are_ignored_and_wrong_types_are_none(tmp_path: Path) -> None:
    write(tmp_path, mine(future_key={"x": 1}, step_ms="fast", rank=True, batches=-4))
    [sample], notes = ProbeReader(dirs=[str(tmp_path)]).sample()
    # A wrong type is unknown, silently; an impossible number is dropped with a note.
    assert len(notes) == 1 and "impossible figures dropped (batches=-4)" in notes[0]
    assert (sample.step_ms, sample.rank, sample.batches) == (None, None, 0)


# --- bad files: a note, never a crash, never a hang --------------------------------------


def sample_in_thread(reader: ProbeReader) -> tuple[list[Any], list[str]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(reader.sample([nv(0)])), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "reading probe files hung"
    return out[0]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"layout": 1, "pid": ', "truncated or corrupt"),
        (bytes(range(256)) * 4, "truncated or corrupt"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'{"pid": 5}', "no layout version"),
        (json.dumps({**HAND_WRITTEN, "layout": 2}).encode(), "newer probe (layout 2"),
        (b" " * (MAX_BYTES + 10), "larger than 64 KiB"),
    ],
    ids=["truncated", "random-bytes", "not-an-object", "no-layout", "newer-layout", "huge"],
)
def test_a_bad_file_gives_one_note_and_no_sample(tmp_path: Path, content: bytes,
                                                 reason: str) -> None:
    path = tmp_path / file_name(os.getpid())
    path.write_bytes(content)
    reader = ProbeReader(dirs=[str(tmp_path)])
    samples, notes = sample_in_thread(reader)
    assert samples == []
    assert len(notes) == 1 and reason in notes[0] and path.name in notes[0]
    assert sample_in_thread(reader) == ([], [])  # said once, not on every poll
    assert path.exists()  # not ours to delete: it may be a live probe of a newer version


def test_a_symlink_a_fifo_and_a_misnamed_file_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(mine()))
    (tmp_path / file_name(1)).symlink_to(target)
    os.mkfifo(tmp_path / file_name(2))  # opening a FIFO for reading would block: must not
    write(tmp_path, mine(), pid=3)  # says another PID than its name
    samples, notes = sample_in_thread(ProbeReader(dirs=[str(tmp_path)]))
    assert samples == []
    text = "\n".join(notes)
    assert "symlink" in text and "not a regular file" in text and "says PID" in text


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a file to another user")
def test_a_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, mine())
    os.chown(path, 12345, 12345)
    samples, notes = sample_in_thread(ProbeReader(dirs=[str(tmp_path)]))
    assert samples == [] and "owned by another user (uid 12345)" in notes[0]


def test_the_file_of_a_dead_pid_is_removed_with_a_note(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    path = write(tmp_path, {**HAND_WRITTEN, "pid": pid, "t": 1.0})
    # Killed mid-publication, it also left its temporary file: removed with it.
    (tmp_path / tmp_name(pid)).write_text('{"layout": 1')
    samples, notes = ProbeReader(dirs=[str(tmp_path)]).sample()
    assert samples == [] and not path.exists()
    assert list(tmp_path.iterdir()) == []
    assert notes == [f"PID {pid} exited: its probe file was removed"]


def test_a_reused_pid_is_not_the_process_that_wrote_the_file(tmp_path: Path) -> None:
    # Our own PID, but another start time: the writer is gone and this is someone else.
    path = write(tmp_path, mine(start_ticks=1, t=1.0))
    samples, _ = ProbeReader(dirs=[str(tmp_path)]).sample()
    assert samples == [] and not path.exists()


def test_a_missing_folder_is_silence_and_the_poller_never_raises(tmp_path: Path) -> None:
    assert ProbeReader(dirs=[str(tmp_path / "none")]).sample() == ([], [])

    class Broken(ProbeReader):
        def sample(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("boom")

    notes: list[str] = []
    assert ProbePoller(Broken(dirs=[])).poll([], [], notes) == ([], [])
    assert notes == ["probe files not read: RuntimeError: boom"]


def test_the_poller_hands_tied_trainers_to_the_process_monitor(tmp_path: Path) -> None:
    write(tmp_path, mine(device_index=0, env={}))
    notes: list[str] = []
    samples, extra = ProbePoller(ProbeReader(dirs=[str(tmp_path)])).poll([nv(0)], [], notes)
    assert [s.card_id for s in samples] == ["nvidia:0"]
    assert extra == [CardProcess(pid=os.getpid(), card_id="nvidia:0")]


# --- ties to cards -----------------------------------------------------------------------


def doc(**kw: Any) -> dict[str, Any]:
    return {"pid": 77, "device_type": None, "device_index": None, "hip": False, "env": {}, **kw}


@pytest.mark.parametrize(
    ("probe", "cards", "expected"),
    [
        (doc(device_type="cuda", device_index=0), [nv(0), nv(1)], ("nvidia:0", "device")),
        (doc(device_type="cuda", device_index=1, env={"CUDA_VISIBLE_DEVICES": "3,1"}),
         [nv(i) for i in range(4)], ("nvidia:1", "device")),
        (doc(device_type="cuda", device_index=0, env={"CUDA_VISIBLE_DEVICES": "GPU-bbb"}),
         [nv(0, uuid="GPU-aaaa"), nv(1, uuid="GPU-bbbb")], ("nvidia:1", "device")),
        # Mixed models and no CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's order may not be the tool's.
        (doc(device_type="cuda", device_index=0), [nv(0, "H100"), nv(1, "A100")],
         ("nvidia:0", "guess")),
        (doc(device_type="cuda", device_index=0, env={"CUDA_VISIBLE_DEVICES": "MIG-1/2/3"}),
         [nv(0), nv(1)], ("nvidia:0", "guess")),
        # ROCm: HIP_VISIBLE_DEVICES picks among what ROCR_VISIBLE_DEVICES left.
        (doc(device_type="cuda", hip=True, device_index=0,
             env={"ROCR_VISIBLE_DEVICES": "2,3", "HIP_VISIBLE_DEVICES": "1"}),
         [CardReading(vendor="amd", index=i) for i in range(4)], ("amd:3", "device")),
        (doc(device_type="npu", device_index=1, env={"ASCEND_RT_VISIBLE_DEVICES": "4,6"}),
         [CardReading(vendor="ascend", index=i) for i in range(8)], ("ascend:6", "device")),
        (doc(device_type="mlu", device_index=0, env={"MLU_VISIBLE_DEVICES": "2"}),
         [CardReading(vendor="cambricon", index=i) for i in range(4)], ("cambricon:2", "device")),
        (doc(device_type="cuda", device_index=5, env={"CUDA_VISIBLE_DEVICES": "0"}),
         [nv(0), nv(1)], (None, None)),
        (doc(local_rank=1), [nv(0), nv(1)], ("nvidia:1", "guess")),
        (doc(), [nv(0)], ("nvidia:0", "guess")),
        (doc(), [nv(0), nv(1)], (None, None)),
        (doc(), [], (None, None)),
    ],
    ids=["index", "visible", "uuid", "mixed-models", "mig", "rocm-chain", "ascend", "mlu",
         "out-of-range", "local-rank", "only-card", "untied", "no-cards"],
)
def test_tie_to_card(probe: dict[str, Any], cards: list[CardReading],
                     expected: tuple[str | None, str | None]) -> None:
    assert tie_card(probe, cards, []) == expected


def test_the_tools_process_table_ties_before_a_guess() -> None:
    listed = [CardProcess(pid=77, card_id="nvidia:1")]
    assert tie_card(doc(local_rank=0), [nv(0), nv(1)], listed) == ("nvidia:1", "tool")


def test_parse_refuses_what_is_not_a_probe() -> None:
    with pytest.raises(ValueError, match="no PID"):
        parse_probe(b'{"layout": 1, "pid": -3}')
    with pytest.raises(ValueError, match="unknown layout 0"):
        parse_probe(b'{"layout": 0, "pid": 3}')


def test_a_fresh_file_of_an_invisible_pid_is_used_with_a_note(tmp_path: Path) -> None:
    write(tmp_path, mine())
    reader = ProbeReader(dirs=[str(tmp_path)], pid_state=lambda pid, ticks: "gone")
    [sample], notes = reader.sample([nv(0)])
    assert sample.pid == os.getpid() and "another PID namespace" in notes[0]
