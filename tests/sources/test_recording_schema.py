"""The recording format is an interface other people's scripts read: pin it.

Adding a field (with a default) is fine and needs this file updated on purpose; renaming or
removing one breaks old recordings and readers, so it must come with a new SCHEMA_VERSION.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusat_tui import model
from gpusat_tui.sources.recording.reader import read_recording

RECORDING_V1_FIELDS = {
    model.RecordingHeader: {
        "type", "schema_version", "gpusat_tui_version", "host", "tools", "interval_s",
        "started_at", "part",
    },
    model.Frame: {
        "t", "seq", "cards", "card_processes", "processes", "host", "errors", "notes",
        "monitor_cpu_pct", "raw", "probes", "jobs", "fleet",
    },
    model.FleetSummary: {
        "hosts", "cards", "kinds", "down_hosts", "problems", "healthy", "healthy_ids",
        "job_cards", "host_busy", "kind_jobs", "busy_hosts", "busy_median",
    },
    model.FleetItem: {"id", "host", "kind", "cause", "job", "util_pct"},
    model.JobContext: {
        "scheduler", "job_id", "step", "name", "user", "partition", "namespace", "pod_uid",
        "command", "source", "pids", "card_ids", "host",
    },
    model.CardReading: {
        "vendor", "index", "name", "uuid", "bus_id", "util_pct", "mem_used_mib",
        "mem_total_mib", "mem_pct", "power_w", "power_cap_w", "temp_c", "extras", "tool",
        "stale_s", "host", "instance",
    },
    model.CardProcess: {"pid", "card_id", "name", "mem_used_mib"},
    model.ProcessSample: {
        "pid", "role", "name", "cpu_pct", "state", "trainer_pid", "card_ids", "pin_cpu_pct",
        "num_threads", "run_delay_pct", "rchar_per_s", "wchar_per_s", "syscalls_per_s",
        "ctx_switches_per_s", "world_size", "rank", "other_threads_cpu_pct", "busy_threads",
        "cpu_quota_cores", "cpu_throttled_pct", "stack_dump",
    },
    model.StackDump: {"tool", "t", "thread", "frames", "error", "message", "main_cpu_s",
                      "still_since"},
    model.HostSample: {"cpu_pct", "iowait_pct", "cpu_count"},
    model.ProbeSample: {
        "pid", "rank", "local_rank", "world_size", "device_index", "card_id", "tie",
        "data_wait_pct", "step_ms", "batches_per_s", "samples_per_s", "batches", "steps",
        "data_wait_s", "elapsed_s", "alloc", "age_s", "device_type", "last_batch_s",
        "last_step_s", "batch_size", "num_workers", "framework", "data_wait_note",
        "stack_hz", "stack_samples", "phase_samples", "user_lines", "stack_phase",
        "stack_where", "stack_line", "stack_still_s", "stack_sig", "stack",
    },
    model.CodeLine: {"module", "function", "file", "line", "samples"},
    model.ProbeAlloc: {
        "allocated_bytes", "reserved_bytes", "inactive_split_bytes", "alloc_retries", "ooms",
    },
    model.ToolError: {"tool", "message", "kind"},
}

SESSIONS = Path(__file__).resolve().parents[2] / "samples" / "sessions"


def test_schema_version_is_1() -> None:
    assert model.SCHEMA_VERSION == 1


@pytest.mark.parametrize("cls", list(RECORDING_V1_FIELDS), ids=lambda c: c.__name__)
def test_recording_field_names_are_pinned(cls: type) -> None:
    assert set(cls.model_fields) == RECORDING_V1_FIELDS[cls]


def test_vendor_and_verdict_names_are_pinned() -> None:
    # Names may be added (old readers then see an unknown vendor), never renamed or removed.
    assert model.VENDORS == (
        "nvidia", "amd", "hygon", "ascend", "cambricon", "kunlunxin", "mthreads", "biren",
        "gaudi", "iluvatar", "enflame", "metax", "intel", "neuron", "tpu", "jetson", "tenstorrent",
    )
    assert model.VERDICT_KINDS == (
        "saturated", "starving", "fragmenting", "imbalanced", "idle", "unknown", "stalled"
    )


def test_a_v1_line_written_by_hand_still_loads(tmp_path: Path) -> None:
    """A line another tool wrote from the documented v1 field names must load as a Frame."""
    header = {"type": "header", "schema_version": 1, "gpusat_tui_version": "0.1.0"}
    frame = {
        "t": 1700000000.0,
        "seq": 0,
        "cards": [
            {"vendor": "hygon", "index": 0, "util_pct": 97.0, "mem_pct": 61.0,
             "power_w": 250.0, "power_cap_w": 300.0, "temp_c": 55.0}
        ],
        "processes": [
            {"pid": 10, "role": "dataloader_worker", "name": "pt_data_worker", "cpu_pct": 99.0,
             "trainer_pid": 9, "card_ids": ["hygon:0"]}
        ],
        "future_field": {"ignored": True},
    }
    path = tmp_path / "hand.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(frame) + "\n")
    read_header, frames = read_recording(path)
    (loaded,) = list(frames)
    assert read_header.schema_version == 1
    assert loaded.cards[0].id == "hygon:0"
    assert loaded.cards[0].power_frac == pytest.approx(250 / 300)
    assert loaded.processes[0].role == "dataloader_worker"
    assert loaded.probes == []  # a line from before the probe existed loads with none


def test_a_frame_with_probe_samples_round_trips() -> None:
    frame = model.Frame(
        t=1.0,
        probes=[model.ProbeSample(
            pid=9, rank=1, world_size=2, card_id="nvidia:1", tie="device", data_wait_pct=43.0,
            step_ms=182.0, batches=10, steps=10, data_wait_s=float("nan"),
            alloc=model.ProbeAlloc(allocated_bytes=1, reserved_bytes=2, alloc_retries=0),
        )],
    )
    again = model.Frame.model_validate_json(frame.model_dump_json())
    assert again == frame
    assert again.probes[0].data_wait_s is None  # NaN refused at the door
    assert again.probes[0].alloc is not None and again.probes[0].alloc.reserved_bytes == 2


@pytest.mark.parametrize("path", sorted(SESSIONS.glob("*.jsonl")), ids=lambda p: p.name)
def test_bundled_sessions_are_v1_and_load_whole(path: Path) -> None:
    header, frames = read_recording(path)
    assert header.schema_version == model.SCHEMA_VERSION
    seqs = [f.seq for f in frames]
    raw_lines = path.read_text().splitlines()
    assert len(seqs) == len(raw_lines) - 1  # every line after the header is a frame
    assert seqs == sorted(seqs)


def test_a_fleet_frames_summary_round_trips_and_older_lines_have_none() -> None:
    summary = model.FleetSummary(
        hosts=2, cards=16, kinds={"saturated": 12, "starving": 4}, healthy=12,
        problems=[model.FleetItem(id="gpu-1/nvidia:0", host="gpu-1", kind="starving",
                                  cause="input", job="slurm:9", util_pct=35.0)],
        job_cards={"slurm:9": 8}, host_busy={"gpu-1": 0.35, "gpu-2": 0.97},
    )
    frame = model.Frame(t=1000.0, fleet=summary)
    assert model.Frame.model_validate_json(frame.model_dump_json()) == frame
    older = model.Frame(t=1000.0).model_dump_json().replace(',"fleet":null', "")
    assert "fleet" not in older
    assert model.Frame.model_validate_json(older).fleet is None
