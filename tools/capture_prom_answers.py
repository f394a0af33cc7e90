"""Regenerate samples/prometheus/: real Prometheus API answers the fleet source's unit tests read.

Starts two exporters against fake nvidia-smi tools (node-a saturated, node-b starving), a real
Prometheus scraping them every second, and saves what /api/v1/query and /api/v1/query_range
answer to the fleet source's own queries: normal, with node-b stopped, with a matcher that
matches nothing, and a query the server refuses. Run from the repository root:
``.venv/bin/python tools/capture_prom_answers.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusat_tui.sources.fleet_view.fleet import HISTORY_FIGURES, instant_query, selector
from tests.prom.hosts import fake_host, start_exporter
from tests.prom.server import prometheus

OUT = Path(__file__).resolve().parents[1] / "samples" / "prometheus"


def raw(url: str, endpoint: str, **params: str) -> bytes:
    try:
        with urllib.request.urlopen(
            f"{url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}", timeout=10
        ) as answer:
            return answer.read()  # type: ignore[no-any-return]
    except urllib.error.HTTPError as exc:
        return exc.read()  # type: ignore[no-any-return]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    a = start_exporter(fake_host(work / "a", "saturated"), "node-a")
    b = start_exporter(fake_host(work / "b", "starving"), "node-b")
    try:
        with prometheus(work / "prom", {"gpusat": [a.address, b.address]}) as prom:
            prom.wait_for("gpusat_card_verdict == 1", 4)
            time.sleep(8)  # a few scrapes of history
            now = time.time()
            (OUT / "instant.json").write_bytes(raw(prom.url, "query", query=instant_query()))
            (OUT / "range.json").write_bytes(raw(
                prom.url, "query_range", query=selector(HISTORY_FIGURES),
                start=f"{now - 6:.3f}", end=f"{now:.3f}", step="1",
            ))
            (OUT / "empty.json").write_bytes(
                raw(prom.url, "query", query=instant_query(['job="nosuchjob"']))
            )
            (OUT / "bad_query.json").write_bytes(raw(prom.url, "query", query="sum("))
            b.stop()
            time.sleep(3)
            (OUT / "instant_node_b_gone.json").write_bytes(
                raw(prom.url, "query", query=instant_query())
            )
    finally:
        a.stop()
        b.stop()


if __name__ == "__main__":
    main()
