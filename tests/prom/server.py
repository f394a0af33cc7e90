"""A real Prometheus server for tests: the distribution's binary on loopback, tmp storage.

`prometheus_binary()` finds it (``.ci/run`` installs it from Debian's packages); tests that need
it skip with the reason when it is missing. The config scrapes the given targets every
``scrape_interval``; `PromServer.query` asks the HTTP API, as the fleet view does.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.prom.hosts import stop_process


def prometheus_binary() -> str | None:
    return shutil.which("prometheus") or (
        "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(
    path: Path, targets: Mapping[str, Sequence[str]], scrape_interval: str,
    rule_files: Sequence[Path] = (),
) -> None:
    """One scrape job per key, the rules evaluated at the scrape interval; YAML is a superset
    of JSON, so json.dumps writes it."""
    config: dict[str, Any] = {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval,
                   "evaluation_interval": scrape_interval},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(addrs)}]}
            for job, addrs in targets.items()
        ],
    }
    if rule_files:
        config["rule_files"] = [str(p) for p in rule_files]
    path.write_text(json.dumps(config, indent=1))


@dataclass
class PromServer:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def get(self, endpoint: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{endpoint}?{query}", timeout=10) as a:
            doc = json.loads(a.read())
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """``promql`` evaluated now, or at the time ``at`` (seconds since the epoch)."""
        params = {"query": promql} if at is None else {"query": promql, "time": f"{at:.3f}"}
        return self.get("query", **params)["result"]  # type: ignore[no-any-return]

    def wait_for(self, promql: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Poll ``promql`` until it returns at least ``count`` series."""
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            result = self.query(promql)
            if len(result) >= count:
                return result
            time.sleep(0.25)
        raise AssertionError(f"{promql}: {len(result)} series after {timeout} s: {result}")

    def stop(self) -> None:
        stop_process(self.proc)


@contextlib.contextmanager
def prometheus(
    workdir: Path, targets: Mapping[str, Sequence[str]], scrape_interval: str = "1s",
    timeout: float = 30.0, rule_files: Sequence[Path] = (),
) -> Iterator[PromServer]:
    """Start Prometheus scraping ``targets`` (job -> host:port list) and evaluating
    ``rule_files``; stop it on exit."""
    binary = prometheus_binary()
    assert binary is not None
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    write_config(config, targets, scrape_interval, rule_files)
    log = workdir / "prometheus.log"
    for _attempt in range(3):  # the free port may be taken between the check and the bind
        port = free_port()
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=workdir,
            )
        server = PromServer(proc, f"http://127.0.0.1:{port}", log)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and proc.poll() is None:
                with contextlib.suppress(OSError), urllib.request.urlopen(
                    f"{server.url}/-/ready", timeout=2
                ) as answer:
                    if answer.status == 200:
                        break
                time.sleep(0.1)
            if proc.poll() is not None:
                if "address already in use" in log.read_text(errors="replace"):
                    continue
                raise AssertionError(f"prometheus exited: {log.read_text()}")
            yield server
            return
        finally:
            server.stop()
    raise AssertionError(f"prometheus found no free port: {log.read_text()}")
