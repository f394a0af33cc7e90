"""``neuron-monitor`` lines that are not JSON the parser can read are skipped or refused with
a ParseError: never another exception (a caller handles ParseError only)."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors.neuron_monitor import parse_neuron_monitor
from gpusat_tui.errors import ParseError
from tests.collectors.test_collectors_neuron import MONITOR, read

#: json.loads raises a plain ValueError (not a JSONDecodeError, which has ``msg``) for an
#: integer of more digits than Python converts (4300 by default).
TOO_LONG = '{"neuron_runtime_data": ' + "1" * 5000 + "}"


def test_an_integer_too_long_to_convert_is_refused_saying_why() -> None:
    with pytest.raises(ParseError, match=r"not JSON \(Exceeds the limit"):
        parse_neuron_monitor(TOO_LONG)


def test_an_integer_too_long_to_convert_is_skipped_for_the_report_before_it() -> None:
    good = read(MONITOR).strip()
    reading = parse_neuron_monitor(good + "\n" + TOO_LONG + "\n")
    assert reading.cards == parse_neuron_monitor(good).cards
    assert reading.cards
