"""The exporter's text exposition, parsed back with prometheus_client's own parser: what a
Prometheus server would scrape from `ExportCollector`, without one."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from gpusat_tui.commands.export_metrics import ExportCollector, ExportState


def exposed_samples(state: ExportState) -> list[Sample]:
    """Every sample of one scrape of ``state``, through the real exposition and parser."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExportCollector(state))
    text = generate_latest(registry).decode()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]
