"""Pieces every fake tool renderer shares: how a missing figure prints, and argv dispatch.

Only what is the same for several tools lives here; a renderer whose tool prints figures its own
way (cnmon's two decimals, npu-smi's ``-``, nvidia-smi's ``{:.0f}``) keeps its own helper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from gpusat_tui.collectors.base import ToolSpec
from tests.fakes import FakeCard, FakeProcess

#: ``render(cards, processes)``: one view of a tool.
Render = Callable[[Sequence[FakeCard], Sequence[FakeProcess]], str]


class RenderForArgs(Protocol):
    """``render_for_args(args, cards, processes=())``: what the fake tool prints for an argv."""

    def __call__(
        self, args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
    ) -> str: ...


#: What these tools print where a figure is missing.
NA = "N/A"


def na_or(value: float | None, fmt: str, scale: float = 1.0) -> str:
    """``fmt`` applied to ``value * scale`` (MiB -> bytes, say), or ``N/A`` without a figure."""
    return NA if value is None else fmt.format(value * scale)


def whole(value: float | None, unit: str = "") -> str:
    """``value`` rounded to a whole number, then ``unit`` (``"45C"``, ``"300W"``), or ``N/A``."""
    return NA if value is None else f"{round(value)}{unit}"


def respond(
    args: Sequence[str], views: Mapping[tuple[str, ...], Callable[[], str]], refusal: str
) -> str:
    """What a tool prints for ``args``: the view for exactly that argv, else its ``refusal``.

    The refusal is the tool's usage complaint: the live source must see an unknown flag refused
    the way the real tool refuses it, never a silent empty view.
    """
    view = views.get(tuple(args))
    return view() if view is not None else refusal


def by_query_name(
    spec: ToolSpec, views: Mapping[str, Callable[[], str]]
) -> dict[tuple[str, ...], Callable[[], str]]:
    """Views keyed by the argv of ``spec``'s query of each name, so a fake follows SPECS.

    A name that is not one of the spec's queries is a KeyError: the fake is out of date.
    """
    argv = {q.name: q.args for q in spec.queries}
    return {argv[name]: view for name, view in views.items()}


def bare_command_only(render: Render, refusal: str) -> RenderForArgs:
    """``render_for_args`` of a tool read through its bare command alone.

    No args: ``render(cards, processes)``; any other argv: ``refusal`` (its usage complaint).
    """

    def render_for_args(
        args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
    ) -> str:
        return respond(args, {(): lambda: render(cards, processes)}, refusal)

    return render_for_args
