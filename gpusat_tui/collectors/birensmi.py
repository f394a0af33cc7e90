"""Biren GPUs through ``brsmi`` (older name ``birensmi``). UNTESTED AGAINST A REAL CARD.

No public capture of this tool's output was found. What could be checked:

* the executable is called ``brsmi`` (Biren's own ModelZoo scripts run ``brsmi`` and grep its
  default output for "No running process found" to decide the GPUs are free);
* the figures it can show are those of Biren's management library BRML, which mirrors NVML:
  GPU and memory utilisation %, memory used/free/total, power usage (mW in the API), temperature,
  PCI bus id, UUID (see the public go-brml bindings and their example).

So the parser assumes an nvidia-smi-like box table (the same wording as nvidia-smi's
"No running processes found" suggests the same family) and reads it **by tokens, not by
columns**: per card block it takes the index and name from the first cell, ``<n>C`` as the
temperature, ``<a>W / <b>W`` as power and cap, ``<a>MiB / <b>MiB`` as memory, and the first
``<n>%`` after the memory figure as utilisation. Anything it cannot find stays None. The spec is
marked ``untested=True`` so the UI and ``check`` can say so; please report a real output.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.tables import box_cells
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "brsmi"

# The unit of the first figure is optional: "N/A / 300W", "N/A / 32768MiB".
_POWER_RE = re.compile(r"(\S+?)\s*W?\s*/\s*(\S+?)\s*W\b")
_MEM_RE = re.compile(r"(\S+?)\s*(?:MiB)?\s*/\s*(\S+?)\s*MiB")
_TEMP_RE = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)\s*C\b")
_PCT_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*%")
_BUS_RE = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")
_HEAD_RE = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_VERSION_RE = re.compile(r"(?:brsmi|birensmi|BRSMI|BR-SMI)\D{0,20}?(\d+(?:\.\d+)+)", re.IGNORECASE)
_FLAGS = {"on", "off", "n/a"}


def _card(block: list[str]) -> CardReading | None:
    first = box_cells(block[0])
    head = _HEAD_RE.match(first[0])
    if not head:
        return None
    name_tokens = head.group(2).split()
    while name_tokens and name_tokens[-1].lower() in _FLAGS:
        name_tokens.pop()
    joined = "  |  ".join(block)
    power = _POWER_RE.search(joined)
    mem = _MEM_RE.search(joined)
    temp = _TEMP_RE.search(joined)
    after = joined[mem.end():] if mem else joined
    pcts = _PCT_RE.findall(after)
    util = num(pcts[0]) if pcts else None
    bus = _BUS_RE.search(joined)
    return CardReading(
        vendor="biren",
        index=int(head.group(1)),
        name=" ".join(name_tokens) or None,
        bus_id=bus.group(0) if bus else None,
        util_pct=util,
        mem_used_mib=num(mem.group(1)) if mem else None,
        mem_total_mib=(num(mem.group(2)) or None) if mem else None,
        power_w=num(power.group(1)) if power else None,
        power_cap_w=num(power.group(2)) if power else None,
        temp_c=num(temp.group(1)) if temp else None,
        extras={"untested_parser": "brsmi"},
        tool=TOOL,
    )


def parse_default(text: str) -> ToolReading:
    """Parse plain ``brsmi`` assuming an nvidia-smi-like table (see the module docstring)."""
    lines = strip_ansi(text).splitlines()
    version_match = _VERSION_RE.search(text)
    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    block: list[str] = []
    in_procs = False

    def flush() -> None:
        if block:
            card = _card(block)
            if card is not None:
                cards.append(card)
            block.clear()

    for line in lines:
        stripped = line.strip()
        if "Processes" in stripped:
            flush()
            in_procs = True
            continue
        if in_procs:
            if not stripped.startswith("|") or "PID" in stripped:
                continue
            tokens = " ".join(box_cells(stripped)).split()
            mem_at = next((i for i, t in enumerate(tokens) if t.endswith("MiB")), None)
            if not tokens or not tokens[0].isdigit() or mem_at is None:
                continue
            pid = next((t for t in tokens[1:mem_at] if t.isdigit()), None)
            if pid is None:
                continue
            processes.append(
                CardProcess(
                    pid=int(pid),
                    card_id=f"biren:{tokens[0]}",
                    name=tokens[mem_at - 1] if mem_at - 1 > tokens.index(pid) else None,
                    mem_used_mib=num(tokens[mem_at].removesuffix("MiB")),
                )
            )
            continue
        if not stripped.startswith("|"):
            flush()
            continue
        if set(stripped) <= set("|=+- "):
            flush()
            continue
        if block or _HEAD_RE.match(box_cells(stripped)[0]):
            block.append(stripped)
    flush()
    if not cards:
        raise ParseError(
            "brsmi: no card rows recognised (this parser is untested against a real Biren "
            "card; please report the output)"
        )
    return ToolReading(
        cards=cards, processes=processes, version=version_match.group(1) if version_match else None
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="biren",
        names=("brsmi", "birensmi"),
        # /usr/bin and /usr/local/bin are generic; the BIRENSUPA folder is a guess, not verified.
        search_dirs=("/usr/bin", "/usr/local/bin", "/usr/local/birensupa/bin"),
        queries=(Query(name="default", args=(), parse=parse_default),),
        untested=True,
    ),
)
