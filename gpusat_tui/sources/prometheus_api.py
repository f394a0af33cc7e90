"""Talking to a Prometheus server: PromQL selectors from ``--match``, and GETs of its HTTP API
whose answers are checked to be the API's before anyone reads them.

Blocking on purpose (`PrometheusAPI.get` runs in a thread, with a timeout): the fleet source
keeps its event loop free and never waits on a slow server. Every failure is one `FleetError`
with a ``kind`` the status line shows: ``unreachable``, ``timeout``, ``http``, ``query``,
``parse``.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpusat_tui.errors import GpusatError

__all__ = ["FleetError", "PrometheusAPI", "decode_answer", "parse_matcher", "selector"]

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_MATCHER = re.compile(r"^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)(.*)$")


class FleetError(GpusatError):
    """A request to Prometheus failed; ``kind`` says how (for the status line)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


# --- PromQL ------------------------------------------------------------------------------------


def parse_matcher(text: str) -> str:
    """``--match 'job=train'`` (also ``!=``, ``=~``, ``!~``) -> a PromQL matcher ``job="train"``.

    Raises ValueError with a plain message for anything else.
    """
    match = _MATCHER.match(text)
    if not match:
        raise ValueError(
            f"--match expects LABEL=VALUE (or LABEL!=VALUE, LABEL=~REGEX, LABEL!~REGEX), "
            f"got {text!r}"
        )
    label, op, value = match.groups()
    if label == "__name__":
        raise ValueError("--match cannot select on the metric name")
    return f"{label}{op}{json.dumps(value.strip())}"


def selector(names: Iterable[str], matchers: Sequence[str] = ()) -> str:
    """``{__name__=~"a|b", job="train"}``: one vector selector for several metrics."""
    alternatives = "|".join(re.escape(n) for n in names)
    return "{" + ", ".join([f'__name__=~"{alternatives}"', *matchers]) + "}"


# --- HTTP ---------------------------------------------------------------------------------------


class PrometheusAPI:
    """Blocking GETs of the Prometheus HTTP API (run them in a thread)."""

    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GpusatError(
                f"--prometheus expects the server's URL, like http://prom:9090, got {base_url!r}"
            )
        self.base_url = base_url.strip().rstrip("/")
        self.timeout = float(timeout)

    def get(self, endpoint: str, params: Mapping[str, str]) -> Any:
        """``data`` of a successful answer; raises `FleetError` for everything else."""
        url = f"{self.base_url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:  # 400/422/503: the API still explains in JSON
            body = exc.read() if exc.fp is not None else b""
            exc.close()
            message = _api_error(body) or f"HTTP {exc.code} {exc.reason}"
            raise FleetError(message, "query" if exc.code in (400, 422) else "http") from None
        except TimeoutError:
            raise FleetError(f"no answer within {self.timeout:g} s", "timeout") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise FleetError(f"no answer within {self.timeout:g} s", "timeout") from None
            raise FleetError(f"cannot reach {self.base_url}: {reason}", "unreachable") from None
        except (OSError, ValueError) as exc:  # reset mid-answer, bad chunking...
            raise FleetError(f"request failed: {exc}", "unreachable") from None
        return decode_answer(body)


def _api_error(body: bytes) -> str | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("status") == "error":
        return f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"[:300]
    return None


def decode_answer(body: bytes) -> Any:
    """``data`` of an API answer, or `FleetError` (``query`` or ``parse``)."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise FleetError("the answer is not JSON (is this a Prometheus server?)", "parse") from None
    if not isinstance(doc, dict) or "status" not in doc:
        raise FleetError("the answer is not a Prometheus API answer", "parse")
    if doc["status"] != "success":
        raise FleetError(_api_error(body) or "the query failed", "query")
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise FleetError("the answer has no result list", "parse")
    return data
