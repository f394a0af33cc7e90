"""A small PromQL evaluator for exactly the query forms the fleet view sends, over a store of
series: what the synthetic servers (tests and ``benchmarks/bench_fleet_scale.py``) answer with.

Forms: vector selectors with ``=``, ``!=``, ``=~``, ``!~`` matchers (a metric name or
``__name__`` matchers); ``irate``/``rate``/``last_over_time`` of a range selector; ``== N``
(a filter, the metric name kept); ``and``/``unless`` with ``on (...)`` or on every label but
the name; ``or``; ``count``/``avg``/``sum``/``max`` with ``by (...)``; ``topk``/``bottomk(N, ...)``,
``quantile(q, ...)``;
``+``, ``-``, ``*`` of numbers and vectors (vector with vector: ``on (...)``, one-to-one or
``group_left (...)``); parentheses. Precedence as PromQL's (``*`` over ``+ -`` over ``==``
over ``and``/``unless`` over ``or``, left to right). Anything else raises `Unsupported`.

It is no TSDB: a series holds its value now, the time it went away (None while it is there)
and, for a counter, the rate its ``irate`` gives. ``last_over_time(x[r])`` is the series
there now or gone within ``r``; ``irate``/``rate`` drop the metric name, ``last_over_time``
keeps it, as Prometheus does.
tests/commands/test_prometheus_real.py runs every query the fleet view sends on a real
Prometheus and on this, over the same series, and compares the answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Series", "Store", "Unsupported", "format_value"]


class Unsupported(ValueError):
    """A query form this evaluator does not know."""


@dataclass
class Series:
    labels: dict[str, str]
    value: float
    #: When it went away (its exporter stopped): absent from instant selectors from then on.
    gone_at: float | None = None
    #: What ``irate``/``rate`` of this counter gives.
    rate: float | None = None
    #: Subtracted ``Store.wobble`` times this (figures that move between answers).
    moves: float = 0.0


Element = tuple[dict[str, str], float]

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<op>==|!=|=~|!~|=|[(){},\[\]+*-])
    | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
    )""", re.VERBOSE)

_DURATION = re.compile(r"(\d+)([smhd])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_AGGREGATIONS = ("count", "avg", "sum", "max")
#: Labels whose values index the series (a host's series found without a scan).
_INDEXED = ("host", "instance")
_RANGE_FUNCTIONS = ("irate", "rate", "last_over_time")


def format_value(value: float) -> str:
    """As Prometheus writes a sample value (Go's shortest 'f' form)."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise Unsupported(f"cannot read {text[pos:pos + 20]!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


@dataclass
class _Matcher:
    label: str
    op: str
    value: str
    regex: re.Pattern[str] | None = None

    def __post_init__(self) -> None:
        if self.op in ("=~", "!~"):
            self.regex = re.compile(self.value)
        #: value -> whether it matches (label values repeat: hosts, kinds, cards)
        self.seen: dict[str, bool] = {}

    def matches_value(self, got: str) -> bool:
        hit = self.seen.get(got)
        if hit is None:
            if self.op == "=":
                hit = got == self.value
            elif self.op == "!=":
                hit = got != self.value
            else:
                assert self.regex is not None
                hit = (self.regex.fullmatch(got) is not None) == (self.op == "=~")
            if len(self.seen) < 1 << 16:
                self.seen[got] = hit
        return hit

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.matches_value(labels.get(self.label, ""))


@dataclass
class Store:
    """The series a synthetic server holds; `evaluate` answers an instant query."""

    series: list[Series] = field(default_factory=list)
    wobble: float = 0.0

    def __post_init__(self) -> None:
        self._by_name: dict[str, list[Series]] = {}
        self._by_label: dict[tuple[str, str, str], list[Series]] = {}
        self._kinds: dict[str, dict[str, list[Series]]] = {}
        self._gone: set[float] = set()
        self._answers: dict[tuple[str, int, int], list[Element]] = {}
        for s in self.series:
            self._index(s)
        self._cache: dict[str, list[Element]] = {}
        self._cache_at: float | None = None

    def _index(self, s: Series) -> None:
        if s.gone_at is not None:
            self._gone.add(s.gone_at)
        name = s.labels.get("__name__", "")
        self._by_name.setdefault(name, []).append(s)
        if "kind" in s.labels:
            self._kinds.setdefault(name, {}).setdefault(s.labels["kind"], []).append(s)
        for label in _INDEXED:
            if label in s.labels:
                self._by_label.setdefault((name, label, s.labels[label]), []).append(s)

    def add(self, series: Iterable[Series]) -> None:
        for s in series:
            self.series.append(s)
            self._index(s)

    # --- the API's answer -----------------------------------------------------------------

    def answer(self, query: str, now: float, remember: bool = False) -> dict[str, Any]:
        """The ``data`` of ``/api/v1/query``: a vector of ``{metric, value}``. ``remember``:
        the same query's elements are reused until a series goes away (the values then do
        not move: the benchmark's server, whose Python evaluation would otherwise cost more
        than the client it measures)."""
        if remember:
            epoch = (query, sum(1 for t in self._gone if t <= now),
                     sum(1 for t in self._gone if t + 600 <= now))
            elements = self._answers.get(epoch)
            if elements is None:
                if len(self._answers) > 256:
                    self._answers.clear()
                elements = self._answers[epoch] = self.evaluate(query, now)
        else:
            elements = self.evaluate(query, now)
        return {"resultType": "vector", "result": [
            {"metric": labels, "value": [now, format_value(value)]}
            for labels, value in elements
        ]}

    def answer_bytes(self, query: str, now: float, remember: bool = False) -> bytes:
        return json.dumps({"status": "success",
                           "data": self.answer(query, now, remember)}).encode()

    def evaluate(self, query: str, now: float) -> list[Element]:
        """The elements (labels, value) of ``query`` at ``now``. Sub-expressions are
        remembered for the same second (a refresh's queries share their problem selector)."""
        second = float(int(now))
        if self._cache_at != second:
            self._cache, self._cache_at = {}, second
        parser = _Parser(_tokens(query), self, now)
        result = parser.expr()
        if parser.pos != len(parser.tokens):
            raise Unsupported(f"left over: {parser.tokens[parser.pos:]}")
        return result

    # --- selectors --------------------------------------------------------------------------

    def select(self, matchers: list[_Matcher], now: float, within: float | None) -> list[
            tuple[Series, dict[str, str]]]:
        """Series matching ``matchers``: there now, or (``within``) gone at most that ago."""
        name_eq = next((m.value for m in matchers if m.label == "__name__" and m.op == "="),
                       None)
        names = [name_eq] if name_eq is not None else [
            n for n in self._by_name
            if all(m.matches({"__name__": n}) for m in matchers if m.label == "__name__")
        ]
        place = next(((m.label, m.value) for m in matchers
                      if m.op == "=" and m.label in ("host", "instance")), None)
        kind = next((m for m in matchers if m.label == "kind"), None)
        rest = [m for m in matchers if m.label != "__name__"]
        out = []
        for name in names:
            if place is not None:
                pool = self._by_label.get((name, *place), [])
            elif kind is not None and name in self._kinds:
                pool = [s for value, found in self._kinds[name].items()
                        if kind.matches_value(value) for s in found]
            else:
                pool = self._by_name.get(name, [])
            for s in pool:
                if s.gone_at is not None and s.gone_at <= now and (
                        within is None or now - s.gone_at > within):
                    continue
                labels = s.labels
                for m in rest:
                    if not m.matches_value(labels.get(m.label, "")):
                        break
                else:
                    out.append((s, labels))
        return out


def _vector(value: list[Element] | float) -> list[Element]:
    if isinstance(value, float):
        raise Unsupported("a number where a vector is wanted")
    return value


def _apply(op: str, a: float, b: float) -> float:
    return a + b if op == "+" else a - b if op == "-" else a * b


def _unnamed(labels: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k != "__name__"}


def _arithmetic(
    op: str, left: list[Element] | float, right: list[Element] | float,
    on: tuple[str, ...] | None, group: tuple[str, ...] | None,
) -> list[Element] | float:
    """``left op right`` as Prometheus: the metric name dropped; vector with vector matched
    on ``on`` (else every label), one-to-one keeping only the ``on`` labels, ``group_left``
    keeping the left's labels and the listed ones of the right."""
    if isinstance(left, float) and isinstance(right, float):
        return _apply(op, left, right)
    if isinstance(right, float):
        return [(_unnamed(labels), _apply(op, value, right)) for labels, value in left]
    if isinstance(left, float):
        return [(_unnamed(labels), _apply(op, left, value)) for labels, value in right]
    index = {_signature(labels, on): (labels, value) for labels, value in right}
    out: list[Element] = []
    for labels, value in left:
        match = index.get(_signature(labels, on))
        if match is None:
            continue
        if group is not None:
            result = _unnamed(labels)
            result.update({k: match[0][k] for k in group if match[0].get(k)})
        elif on is not None:
            result = {k: labels[k] for k in on if labels.get(k)}
        else:
            result = _unnamed(labels)
        out.append((result, _apply(op, value, match[1])))
    return out


def _signature(labels: Mapping[str, str], on: tuple[str, ...] | None) -> tuple[Any, ...]:
    if on is None:
        return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))
    return tuple(labels.get(k, "") for k in on)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], store: Store, now: float) -> None:
        self.tokens = tokens
        self.pos = 0
        self.store = store
        self.now = now

    # --- tokens ---------------------------------------------------------------------------

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise Unsupported(f"expected {value!r}, got {token!r}")
        self.pos += 1
        return token

    def _labels(self) -> tuple[str, ...]:
        self.take("(")
        names: list[str] = []
        while self.peek() != ("op", ")"):
            names.append(self.take()[1])
            if self.peek() == ("op", ","):
                self.take(",")
        self.take(")")
        return tuple(names)

    # --- grammar --------------------------------------------------------------------------

    def expr(self) -> list[Element]:
        left = self.and_expr()
        while self.peek() == ("ident", "or"):
            self.take()
            right = self.and_expr()
            seen = {_signature(labels, None) for labels, _ in left}
            left = left + [e for e in right if _signature(e[0], None) not in seen]
        return left

    def and_expr(self) -> list[Element]:
        left = self.cmp_expr()
        while self.peek() in (("ident", "and"), ("ident", "unless")):
            op = self.take()[1]
            on: tuple[str, ...] | None = None
            if self.peek() == ("ident", "on"):
                self.take()
                on = self._labels()
            right = self.cmp_expr()
            keys = {_signature(labels, on) for labels, _ in right}
            keep = op == "and"
            left = [e for e in left if (_signature(e[0], on) in keys) == keep]
        return left

    def cmp_expr(self) -> list[Element]:
        start = self.pos
        value = _vector(self.add_expr())
        if self.peek() == ("op", "=="):
            self.take()
            number = float(self.take()[1])
            value = [e for e in value if e[1] == number]
        key = " ".join(t[1] for t in self.tokens[start:self.pos])
        self.store._cache.setdefault(key, value)
        return self.store._cache[key]

    def add_expr(self) -> list[Element] | float:
        left = self.mul_expr()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            matching = self._matching()
            left = _arithmetic(op, left, self.mul_expr(), *matching)
        return left

    def mul_expr(self) -> list[Element] | float:
        left = self.unary()
        while self.peek() == ("op", "*"):
            self.take()
            matching = self._matching()
            left = _arithmetic("*", left, self.unary(), *matching)
        return left

    def _matching(self) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
        """``on (...)`` and ``group_left (...)`` after an arithmetic operator."""
        on: tuple[str, ...] | None = None
        group: tuple[str, ...] | None = None
        if self.peek() == ("ident", "on"):
            self.take()
            on = self._labels()
        if self.peek() == ("ident", "group_left"):
            self.take()
            group = self._labels() if self.peek() == ("op", "(") else ()
        return on, group

    def unary(self) -> list[Element] | float:
        token = self.peek()
        if token is not None and token[0] == "num":
            return float(self.take()[1])
        return self.primary()

    def ranked(self) -> list[Element]:
        """``topk``/``bottomk(N, v)`` (the labels kept), ``quantile(q, v)`` (Prometheus's
        linear interpolation between the closest ranks)."""
        op = self.take()[1]
        self.take("(")
        number = float(self.take()[1])
        self.take(",")
        inner = self.expr()
        self.take(")")
        if op == "quantile":
            values = sorted(v for _, v in inner)
            if not values:
                return []
            rank = number * (len(values) - 1)
            low = max(0, min(len(values) - 1, int(rank)))
            high = min(len(values) - 1, low + 1)
            weight = rank - low
            return [({}, values[low] * (1 - weight) + values[high] * weight)]
        sign = -1 if op == "topk" else 1
        return sorted(inner, key=lambda e: sign * e[1])[:int(number)]

    def primary(self) -> list[Element]:
        token = self.peek()
        if token in (("ident", "topk"), ("ident", "bottomk"), ("ident", "quantile")):
            return self.ranked()
        if token == ("op", "("):
            self.take()
            inner = self.expr()
            self.take(")")
            return inner
        if token is not None and token[0] == "ident" and token[1] in _AGGREGATIONS:
            return self.aggregation()
        if token is not None and token[0] == "ident" and token[1] in _RANGE_FUNCTIONS:
            return self.range_function()
        matchers = self.selector()
        wobble = self.store.wobble
        return [(labels, s.value - s.moves * wobble if s.moves else s.value)
                for s, labels in self.store.select(matchers, self.now, None)]

    def selector(self) -> list[_Matcher]:
        matchers: list[_Matcher] = []
        token = self.peek()
        if token is not None and token[0] == "ident":
            matchers.append(_Matcher("__name__", "=", self.take()[1]))
        if self.peek() == ("op", "{"):
            self.take()
            while self.peek() != ("op", "}"):
                label = self.take()[1]
                op = self.take()[1]
                value = json.loads(self.take()[1])
                matchers.append(_Matcher(label, op, value))
                if self.peek() == ("op", ","):
                    self.take(",")
            self.take("}")
        if not matchers:
            raise Unsupported(f"expected a selector at {self.peek()!r}")
        return matchers

    def range_function(self) -> list[Element]:
        function = self.take()[1]
        self.take("(")
        matchers = self.selector()
        self.take("[")
        duration = self.take()[1] + (self.take()[1] if self.peek() and self.peek()[0] == "ident"
                                     else "")
        self.take("]")
        self.take(")")
        found = _DURATION.fullmatch(duration)
        if found is None:
            raise Unsupported(f"duration {duration!r}")
        window = int(found.group(1)) * _SECONDS[found.group(2)]
        out: list[Element] = []
        for s, labels in self.store.select(matchers, self.now, window):
            named = {k: v for k, v in labels.items() if k != "__name__"}
            if function == "last_over_time":  # Prometheus keeps the name here (2.42 does)
                out.append((labels, s.value))
            elif s.rate is not None and (s.gone_at is None or s.gone_at > self.now):
                out.append((named, s.rate))
        return out

    def aggregation(self) -> list[Element]:
        op = self.take()[1]
        by: tuple[str, ...] | None = None
        if self.peek() == ("ident", "by"):
            self.take()
            by = self._labels()
        self.take("(")
        inner = self.expr()
        self.take(")")
        groups: dict[tuple[str, ...], list[float]] = {}
        for labels, value in inner:
            key = tuple(labels.get(k, "") for k in by) if by else ()
            groups.setdefault(key, []).append(value)
        out: list[Element] = []
        for key, values in groups.items():
            labels = {k: v for k, v in zip(by or (), key, strict=True) if v}
            if op == "count":
                out.append((labels, float(len(values))))
            elif op == "sum":
                out.append((labels, sum(values)))
            elif op == "max":
                out.append((labels, max(values)))
            else:
                out.append((labels, sum(values) / len(values)))
        return out
