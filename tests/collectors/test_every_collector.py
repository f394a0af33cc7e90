"""What every vendor's collector must hold on its captured samples, one table row per vendor.

Each row names the samples folder, the parsers, the outputs they must refuse and the test file
whose exact-figure tests name each sample. A new vendor is a row here, its captures under
``samples/smi/`` with INDEX.md rows, and its exact figures in its own test file.
"""

from __future__ import annotations

from functools import cache, partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusat_tui.collectors import (
    amd_smi,
    cnmon,
    efsmi,
    hl_smi,
    hy_smi,
    intel_xpu_smi,
    ixsmi,
    mthreads_gmi,
    mx_smi,
    nvidia_smi,
    nvidia_smi_table,
    rocm_smi,
    tegrastats,
    tpu_info,
    tt_smi,
    xpu_smi,
)
from gpusat_tui.collectors.neuron_ls import parse_neuron_ls
from gpusat_tui.collectors.neuron_monitor import parse_neuron_monitor
from gpusat_tui.collectors.npu_smi import parse_info, parse_usages
from gpusat_tui.collectors.npu_smi_watch import parse_watch
from gpusat_tui.errors import ParseError
from tests.collector_helpers import (
    SWEEP_SETTINGS,
    Truncation,
    VendorCase,
    assert_every_line_prefix_parses_or_is_refused,
    assert_every_sample_tested_and_indexed,
    assert_every_truncation_parses_or_is_refused,
    parse_or_refuse,
    read_sample,
    sample_lines_and_noise,
    samples_dir,
)
from tests.collectors.test_collectors_gaudi import ALL_SMI_FIELDS

GARBAGE = "\x1b[31mgarbage\x1b[0m\n"

CASES = [
    VendorCase(
        "amd", "test_collectors_amd.py",
        (amd_smi.parse_default, amd_smi.parse_monitor, rocm_smi.parse_table, rocm_smi.parse_json,
         rocm_smi.parse_pids),
    ),
    VendorCase(
        "ascend", "test_collectors_ascend.py", (parse_info, parse_usages),
        truncation=Truncation("ascend", (parse_info, parse_usages, parse_watch)),
    ),
    VendorCase(
        "cambricon", "test_collectors_cambricon.py", (cnmon.parse_default,),
        junk=("", GARBAGE, "cnmon: error while loading shared libraries: libcndev.so\n",
              "Wed May 19 10:33:51 2021\n| CNMON 1.16.0 |\n"),
        truncation=Truncation("cambricon", (cnmon.parse_default,)),
    ),
    VendorCase(
        "enflame", "test_collectors_enflame.py",
        (efsmi.parse_default, efsmi.parse_query, efsmi.parse_monitor),
        junk=("", "efsmi: command not found\n", GARBAGE,
              "-" * 40 + "\n Enflame System Management Interface \n"),
    ),
    VendorCase(
        "gaudi", "test_collectors_gaudi.py",
        (hl_smi.parse_default, hl_smi.parse_query,
         partial(hl_smi.parse_query, fields=ALL_SMI_FIELDS)),
        junk=("", "hl-smi: command not found\n", GARBAGE,
              "+------+\n| HL-SMI Version:   hl-1.22.1 |\n"),
    ),
    VendorCase(
        "hygon", "test_collectors_hygon.py",
        (hy_smi.parse_table, hy_smi.parse_json, hy_smi.parse_pids, rocm_smi.parse_table,
         rocm_smi.parse_pids),
    ),
    VendorCase(
        "iluvatar", "test_collectors_iluvatar.py", (ixsmi.parse_default,),
        junk=("", "ixsmi: command not found\n", GARBAGE,
              "+---+\n|  IX-ML: 4.1.0   Driver Version: 4.1.0 |\n",
              "Failed to initialize IXML: Driver Not Loaded\n"),
    ),
    VendorCase(
        "intel", "test_collectors_intel.py",
        (intel_xpu_smi.parse_default, intel_xpu_smi.parse_dump, intel_xpu_smi.parse_discovery,
         intel_xpu_smi.parse_stats),
        junk=("", "xpu-smi: error while loading shared libraries: libxpum.so\n", GARBAGE,
              "Timestamp, DeviceId, GPU Power (W)\n"),
    ),
    VendorCase(
        "jetson", "test_collectors_jetson.py", (tegrastats.parse_tegrastats,),
        junk=("", "tegrastats: command not found", "RAM 1/2MB CPU [1%@100]",
              "\x1b[31mgarbage\x1b[0m"),
        truncation=Truncation("jetson", (tegrastats.parse_tegrastats,)),
    ),
    VendorCase(
        "kunlunxin", "test_collectors_kunlunxin.py",
        (xpu_smi.parse_default, xpu_smi.parse_machine),
        truncation=Truncation("kunlunxin", (xpu_smi.parse_default, xpu_smi.parse_machine)),
    ),
    VendorCase(
        "metax", "test_collectors_metax.py",
        (mx_smi.parse_default, mx_smi.parse_ht_default, mx_smi.parse_list),
        junk=("", "mx-smi: command not found\n", GARBAGE,
              "mx-smi  version: 2.2.9\n\nfailed to init: MetaX Sysfs File Unaccessible\n"),
    ),
    VendorCase(
        "moorethreads", "test_collectors_mthreads.py", (mthreads_gmi.parse_default,),
        junk=("", "garbage\n", "mthreads-gmi: failed to initialize MTML\n",
              "ID   Name           |PCIe                |%GPU  Mem            \n"),
        truncation=Truncation("mthreads", (mthreads_gmi.parse_default,)),
    ),
    # neuron-monitor's truncations are its own test (only a whole JSON report parses).
    VendorCase("neuron", "test_collectors_neuron.py", (parse_neuron_monitor, parse_neuron_ls)),
    VendorCase(
        "nvidia", "test_collectors_nvidia.py",
        (nvidia_smi_table.parse_table, nvidia_smi.parse_query_gpu, nvidia_smi.parse_compute_apps),
    ),
    VendorCase(
        "tenstorrent", "test_collectors_tenstorrent.py", (tt_smi.parse_snapshot,),
        junk=("", "tt-smi: command not found\n", "{", '{"device_info": []}', "[1, 2]",
              '{"host_info": {"OS": "Linux"}}', GARBAGE, '{"device_info": [{'),
    ),
    VendorCase(
        "tpu", "test_collectors_tpu.py", (tpu_info.parse_default,),
        junk=("", "tpu-info: command not found\n", GARBAGE,
              "TPU Chips\n\n| Chip | Type | Devices | PID |\n|---|---|---|---|\n"),
    ),
]

BY_FOLDER = [pytest.param(case, id=case.folder) for case in CASES]


@pytest.mark.parametrize(
    ("case", "text"),
    [pytest.param(case, text, id=f"{case.folder}-{i}")
     for case in CASES for i, text in enumerate(case.junk)],
)
def test_bad_output_is_a_parse_error(case: VendorCase, text: str) -> None:
    for parse in case.parsers:
        with pytest.raises(ParseError):
            parse(text)


@pytest.mark.parametrize("case", BY_FOLDER)
def test_every_sample_here_has_a_test(case: VendorCase) -> None:
    assert_every_sample_tested_and_indexed(
        samples_dir(case.folder), str(Path(__file__).with_name(case.test_file)))


@pytest.mark.parametrize("case", BY_FOLDER)
def test_every_prefix_of_every_sample_parses_or_is_refused(case: VendorCase) -> None:
    assert_every_line_prefix_parses_or_is_refused(samples_dir(case.folder), case.parsers)


@pytest.mark.parametrize(
    ("case", "name"),
    [pytest.param(case, path.name, id=f"{case.folder}-{path.name}")
     for case in CASES if case.truncation is not None
     for path in sorted(samples_dir(case.folder).iterdir())],
)
def test_every_truncation_parses_or_is_a_parse_error(case: VendorCase, name: str) -> None:
    """Output cut anywhere (a killed tool, a full pipe) never crashes a parser."""
    assert case.truncation is not None
    assert_every_truncation_parses_or_is_refused(
        read_sample(samples_dir(case.folder), name), case.truncation.parsers,
        case.truncation.vendor)


#: One strategy per folder: the samples are read once, not once per example.
lines_and_noise = cache(lambda folder: sample_lines_and_noise(samples_dir(folder)))


@pytest.mark.parametrize("case", BY_FOLDER)
@SWEEP_SETTINGS
@given(data=st.data())
def test_shuffled_sample_lines_and_noise_never_crash(case: VendorCase, data: st.DataObject) -> None:
    lines = data.draw(lines_and_noise(case.folder))
    for parse in case.parsers:
        parse_or_refuse(parse, "\n".join(lines))
