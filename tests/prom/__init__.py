"""Helpers for the exporter and fleet tests: fake hosts, exporters and a real Prometheus."""
