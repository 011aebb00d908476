"""Coverage numbers as Codecov shows them: 5 decimals stored, then the
repository's precision and rounding, in Decimal."""

from __future__ import annotations

from decimal import Decimal

import pytest

from app.coverage.model import Totals
from app.pullrequests.config import CodecovConfig
from app.pullrequests.numbers import coverage, delta, percent, ratio, rounded, shown, signed


def test_ratio_is_a_percentage_to_five_decimals_and_none_without_lines() -> None:
    assert ratio(2, 3) == Decimal("66.66667")
    assert ratio(1, 8) == Decimal("12.50000")
    assert ratio(3, 3) == Decimal(100)
    assert ratio(0, 0) is None


def test_coverage_of_totals_is_hits_over_lines_and_none_without_totals() -> None:
    assert coverage(Totals(files=1, lines=4, hits=3, misses=1)) == Decimal("75.00000")
    assert coverage(Totals()) is None
    assert coverage(None) is None


@pytest.mark.parametrize(
    ("way", "value", "shown"),
    [
        ("down", "74.28999", "74.28"),
        ("up", "74.28001", "74.29"),
        ("nearest", "74.285", "74.28"),  # half to even
        ("nearest", "74.295", "74.30"),
        ("down", "-1.205", "-1.21"),  # floor, not towards zero
    ],
)
def test_rounded_follows_the_configured_way_to_the_configured_precision(
    way: str, value: str, shown: str
) -> None:
    assert str(rounded(CodecovConfig(round=way), Decimal(value))) == shown


def test_precision_sets_the_places_and_percent_prints_no_float_noise() -> None:
    assert percent(CodecovConfig(precision=0), Decimal("74.9")) == "74"
    assert percent(CodecovConfig(precision=3, round="nearest"), Decimal("74.2855")) == "74.286"
    assert percent(CodecovConfig(), ratio(52, 70)) == "74.28"  # 74.28571...
    assert percent(CodecovConfig(), Decimal(100)) == "100.00"


def test_signed_always_shows_the_sign() -> None:
    config = CodecovConfig()
    assert signed(config, Decimal("1.2")) == "+1.20"
    assert signed(config, Decimal("-9.05")) == "-9.05"
    assert signed(config, Decimal(0)) == "+0.00"


def test_delta_marks_zero_unknown_and_changes_too_small_to_show() -> None:
    config = CodecovConfig()
    assert delta(config, Decimal("2.1")) == "+2.10%"
    assert delta(config, Decimal("-0.5")) == "-0.50%"
    assert delta(config, Decimal(0)) == "\xf8"
    assert delta(config, Decimal(0), zero="0") == "0"
    assert delta(config, None) == "\u2205"
    assert delta(config, Decimal("0.004")) == "+<0.01%"
    assert delta(CodecovConfig(round="up"), Decimal("-0.004")) == "-<0.01%"
    assert delta(CodecovConfig(precision=1), Decimal("0.04")) == "+<0.1%"


def test_a_float_is_rounded_as_its_decimal_digits_not_its_binary_value() -> None:
    # 74.29 as a float is 74.28999999999999...; floored as such it would show 74.28.
    assert percent(CodecovConfig(), 74.29) == "74.29"
    assert percent(CodecovConfig(precision=5), 0.00001) == "0.00001"


def test_shown_is_the_figure_every_surface_displays() -> None:
    # 9 partial lines in 2,183: 99.58772 %, which two decimals to nearest make 99.59.
    value = ratio(2174, 2183)
    assert f"{float(value):.2f}" == "99.59"
    assert shown(CodecovConfig(), value) == "99.58"
    assert shown(CodecovConfig(), float(value)) == "99.58"
    assert shown(CodecovConfig(round="nearest"), value) == "99.59"
    assert shown(CodecovConfig(precision=0), value) == "99"
    assert shown(CodecovConfig(), None) is None
