"""Biren ``brsmi``: UNTESTED AGAINST A REAL CARD.

No public capture of brsmi output exists, so there is no sample under samples/smi/ for it. The
text below is SYNTHETIC: an nvidia-smi-like table built from the fields Biren's BRML library
documents (utilisation, memory used/total, power, temperature, bus id), with the idle wording
Biren's own scripts grep for ("No running process found"). These tests pin what the parser does
with that assumed layout and that it fails loudly (ParseError), never silently, on anything
else. They say nothing about a real Biren card.
"""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import birensmi
from gpusat_tui.collectors.birensmi import parse_default
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess
from tests.collector_helpers import card_figures
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import birensmi as fake

SYNTHETIC = """\
+-----------------------------------------------------------------------------+
| BRSMI 1.5.0                 Driver Version: 1.5.0                           |
+-------------------------------+----------------------+----------------------+
| GPU  Name                     | Bus-Id               | GPU-Util  Compute M. |
| Fan  Temp  Pwr:Usage/Cap      |         Memory-Usage |                      |
|===============================+======================+======================|
| 0    BR104P                   |         0000:1a:00.0 |                      |
| N/A  45C   152W / 300W        | 30210MiB / 32768MiB  |     88%   Default    |
+-------------------------------+----------------------+----------------------+
| 1    BR104P                   |         0000:1b:00.0 |                      |
| N/A  N/A   N/A / 300W         |      N/A / 32768MiB  |     N/A   Default    |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU       PID   Process name                                    GPU Memory  |
|=============================================================================|
|  0        4321   python                                          30000MiB   |
+-----------------------------------------------------------------------------+
"""


def test_synthetic_table_every_card() -> None:
    reading = parse_default(SYNTHETIC)
    assert reading.version == "1.5.0"
    got = [(c.index, c.name, c.bus_id, c.util_pct, c.mem_used_mib, c.mem_total_mib,
            c.power_w, c.power_cap_w, c.temp_c) for c in reading.cards]
    assert got == [
        (0, "BR104P", "0000:1a:00.0", 88.0, 30210.0, 32768.0, 152.0, 300.0, 45.0),
        (1, "BR104P", "0000:1b:00.0", None, None, 32768.0, None, 300.0, None),
    ]
    assert reading.cards[0].mem_pct == pytest.approx(100.0 * 30210 / 32768)
    assert all(c.vendor == "biren" and c.tool == "brsmi" for c in reading.cards)
    assert all(c.extras == {"untested_parser": "brsmi"} for c in reading.cards)
    assert reading.processes == [
        CardProcess(pid=4321, card_id="biren:0", name="python", mem_used_mib=30000.0)]


def test_idle_line_means_no_processes() -> None:
    text = SYNTHETIC.split("|  0        4321")[0] + (
        "|  No running process found                                                   |\n")
    assert parse_default(text).processes == []


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n", "brsmi: command failed: driver not loaded\n",
     "| GPU  Name | Bus-Id |\n|======|\n"],
)
def test_anything_else_is_a_parse_error_that_says_untested(text: str) -> None:
    with pytest.raises(ParseError, match="untested"):
        parse_default(text)


def test_spec_is_labelled_untested() -> None:
    (spec,) = birensmi.SPECS
    assert spec.untested is True
    assert (spec.tool, spec.vendor, spec.names) == ("brsmi", "biren", ("brsmi", "birensmi"))
    assert "UNTESTED AGAINST A REAL CARD" in (birensmi.__doc__ or "")


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="BR104P", util_pct=64.0, mem_used_mib=12000.0,
                 mem_total_mib=32768.0, power_w=180.0, power_cap_w=300.0, temp_c=58.0),
        FakeCard(index=1, name="BR104P", util_pct=0.0, mem_used_mib=0.0,
                 mem_total_mib=32768.0, power_w=60.0, power_cap_w=300.0, temp_c=35.0),
    ]
    procs = [FakeProcess(pid=77, name="python", card_index=0, mem_mib=11000.0)]
    reading = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "BR104P", 64.0, 12000.0, 32768.0, 180.0, 300.0, 58.0),
        (1, "BR104P", 0.0, 0.0, 32768.0, 60.0, 300.0, 35.0),
    ]
    assert reading.processes == [
        CardProcess(pid=77, card_id="biren:0", name="python", mem_used_mib=11000.0)]
    assert parse_default(fake.render(cards)).processes == []
