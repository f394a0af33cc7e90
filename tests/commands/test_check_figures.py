"""The figures ``check --json`` summarises are declared once, as `Stats` fields of its shapes,
each named as the `model` figure it summarises: the builder folds exactly those, and a shape's
figure with no model field of its name fails here (not as a null in every report)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from gpusat_tui.commands.check_report import CheckBuilder
from gpusat_tui.commands.check_schema import (
    CheckAlloc,
    CheckCard,
    CheckJob,
    CheckProbe,
    CheckProcess,
    CheckShape,
    stats_figures,
)
from gpusat_tui.model import CardReading, JobContext, ProbeAlloc, ProbeSample, ProcessSample
from tests.commands.output_frames import ASSESSMENT, full_frames

PAIRS = [(CheckCard, CardReading), (CheckProcess, ProcessSample), (CheckProbe, ProbeSample),
         (CheckAlloc, ProbeAlloc)]


@pytest.mark.parametrize(("shape", "model"), PAIRS)
def test_each_summarised_figure_is_a_numeric_figure_of_the_model(
    shape: type[CheckShape], model: type[BaseModel]
) -> None:
    figures = stats_figures(shape)
    assert figures  # the shape does summarise figures
    for name in figures:
        assert name in model.model_fields, f"{shape.__name__}.{name}: no {model.__name__} field"
        assert model.model_fields[name].annotation in (float | None, int | None), name


def test_the_job_shape_holds_every_field_of_the_job_context() -> None:
    assert set(JobContext.model_fields) <= set(CheckJob.model_fields)


def test_every_declared_figure_is_filled_from_the_polls() -> None:
    builder = CheckBuilder()
    for frame in full_frames():
        builder.add(frame, ASSESSMENT)
    data = json.loads(builder.report(3.0).model_dump_json())
    card = data["cards"][0]
    trainer = next(p for p in data["processes"] if p["pid"] == 4242)
    probe = trainer["probe"]
    for shape, part in ((CheckCard, card), (CheckProcess, trainer), (CheckProbe, probe),
                        (CheckAlloc, probe["alloc"])):
        for name in stats_figures(shape):
            assert part[name]["mean"] is not None, f"{shape.__name__}.{name} never filled"
