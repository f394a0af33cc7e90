"""``gpusat-tui check --json`` against fakes that print real captures verbatim: every card of the
capture comes out with the capture's own figures (the new vendor families)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec
from tests.collector_helpers import read_sample, samples_dir
from tests.commands.test_check import check_json
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.tool import FakeBin, renderer_for, spec_arg_lists

#: (tool, sample folder, capture of its required query).
CAPTURES = [
    ("hl-smi", "gaudi", "hl-smi-8xHL225-1.20.0-drv1.19.1-mem-held-squeezed-power.txt"),
    ("ixsmi", "iluvatar", "ixsmi-16xBI-V150-IXML4.1.0-power-NA-on-every-other-chip.txt"),
    ("efsmi", "enflame", "efsmi-8xEnflame-S60-1.4.0.3-ansible-truncated.txt"),
    ("mx-smi", "metax", "mx-smi-8xMetaX-C500-2.1.12-15-proc-rows-workers-on-gpu0.txt"),
    ("ht-smi", "metax", "ht-smi-8xMars-X201-2.2.9-HPCC.txt"),
    ("intel-xpu-smi", "intel", "xpu-smi-v2.0-default-view-B580-1gpu-proc-row.txt"),
    ("tpu-info", "tpu", "tpu-info-streaming-v6e-chip-ids-8-9-12-13.txt"),
    ("tt-smi", "tenstorrent", "tt-smi-s-p300c-1dev-trimmed-string-values-leading-spaces.json.txt"),
]
FIELDS = ("util_pct", "mem_used_mib", "power_w", "temp_c")


def spec_named(tool: str) -> ToolSpec:
    return next(s for s in all_specs() if s.tool == tool)


@pytest.mark.parametrize(("tool", "folder", "name"), CAPTURES, ids=[c[0] for c in CAPTURES])
def test_check_json_gives_every_card_of_a_real_capture(
    fake_bin: FakeBin, tool: str, folder: str, name: str
) -> None:
    spec = spec_named(tool)
    required = next(q for q in spec.queries if not q.optional)
    text = read_sample(samples_dir(folder), name)

    def verbatim(args: Sequence[str], cards: Sequence[FakeCard],
                 procs: Sequence[FakeProcess]) -> str:
        # The capture for the required query; anything else is refused like an old tool.
        return text if tuple(args) == required.args else f"{tool}: unrecognized option\n"

    fake_bin.add_for_spec(spec, [[FakeCard(index=0)]], render=verbatim)
    expected = required.parse(text).cards
    report = check_json(fake_bin, "--duration", "1", "--interval", "0.5")
    assert report["errors"] == []
    assert [c["id"] for c in report["cards"]] == [c.id for c in expected]
    for card, want in zip(report["cards"], expected, strict=True):
        assert card["name"] == want.name
        for field in FIELDS:
            assert card[field]["last"] == getattr(want, field), (card["id"], field)
        assert card["mem_total_mib"] == want.mem_total_mib
        assert card["power_cap_w"] == want.power_cap_w


def _with_enrichments() -> list[ToolSpec]:
    new = {"hl-smi", "efsmi", "mx-smi", "intel-xpu-smi", "hy-smi"}
    return [s for s in all_specs() if s.tool in new]


@pytest.mark.parametrize("spec", _with_enrichments(), ids=lambda s: s.tool)
def test_refused_enrichments_lose_no_card_and_are_dropped_once(
    fake_bin: FakeBin, spec: ToolSpec
) -> None:
    """An older tool without the richer views: every enrichment is refused (usage text, exit 1);
    the default view's cards and figures stay, each refusal is said once, none is an error."""
    cards = [FakeCard(index=0, util_pct=55.0, mem_used_mib=2000.0, mem_total_mib=4000.0,
                      power_w=120.0, power_cap_w=300.0, temp_c=51.0),
             FakeCard(index=1, util_pct=65.0, mem_used_mib=3000.0, mem_total_mib=4000.0,
                      power_w=130.0, power_cap_w=300.0, temp_c=52.0)]
    required = next(q for q in spec.queries if not q.optional)
    parsed = required.parse(renderer_for(spec)(required.args, cards, ())).cards
    refused = [a for a in spec_arg_lists(spec, parsed) if a != required.args]
    assert refused, "the spec has enrichments"
    fake_bin.add_for_spec(spec, [cards], refuse=refused)
    report = check_json(fake_bin, "--duration", "1.5", "--interval", "0.5")
    assert report["errors"] == []
    assert [c["id"] for c in report["cards"]] == [f"{spec.vendor}:0", f"{spec.vendor}:1"]
    assert [c["util_pct"]["last"] for c in report["cards"]] == [55.0, 65.0]
    for query in (q for q in spec.queries if q.optional):
        said = [n for n in report["notes"] if n.startswith(f"{spec.tool} refused {query.name} ")]
        assert len(said) == 1 and said[0].endswith("not asked again"), (query.name, said)
