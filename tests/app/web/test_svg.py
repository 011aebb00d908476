"""The badge and the sparkline drawn on the server (app/web/svg.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from app.pullrequests.numbers import DisplayRounding
from app.web.svg import BADGE_LOW, BADGE_UNKNOWN, badge, badge_colour, sparkline

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("coverage", "colour"),
    [
        (100.0, "#4c1"),
        (95.0, "#4c1"),
        (94.99, "#97ca00"),
        (90.0, "#97ca00"),
        (75.0, "#a4a61d"),
        (60.0, "#dfb317"),
        (59.99, BADGE_LOW),
        (0.0, BADGE_LOW),
        (None, BADGE_UNKNOWN),
    ],
)
def test_the_badge_colour_steps_at_the_shields_io_thresholds(
    coverage: float | None, colour: str
) -> None:
    assert badge_colour(coverage) == colour


def test_the_badge_is_well_formed_svg_naming_the_coverage_rounded_as_the_pages() -> None:
    root = ET.fromstring(badge(66.6667))  # Codecov's default: two places, down
    assert root.tag == f"{SVG}svg" and root.get("aria-label") == "coverage: 66.66%"
    assert [t.text for t in root.iter(f"{SVG}text")] == ["coverage", "66.66%"]
    assert int(root.get("width", "0")) == (7 * len("coverage") + 10) + (7 * len("66.66%") + 10)


def test_the_badge_takes_the_repositorys_precision_and_rounding() -> None:
    assert ">67%<" in badge(66.6667, DisplayRounding(precision=0, round="nearest"))
    assert ">66.7%<" in badge(66.6667, DisplayRounding(precision=1, round="up"))


def test_a_badge_without_coverage_says_unknown_in_grey() -> None:
    drawn = badge(None)
    assert ">unknown<" in drawn and f'fill="{BADGE_UNKNOWN}"' in drawn


def test_the_badge_label_is_escaped() -> None:
    drawn = badge(50.0, label='<a href="x">&')
    root = ET.fromstring(drawn)  # still well formed
    assert "<a " not in drawn and "&lt;a href" in drawn and "&amp;" in drawn
    assert root.find(f"{SVG}title") is not None
    assert root.find(f"{SVG}title").text == '<a href="x">&: 50.00%'  # type: ignore[union-attr]


def test_an_empty_sparkline_is_an_empty_svg_that_says_why() -> None:
    root = ET.fromstring(sparkline([]))
    assert root.get("aria-label") == "no settled commits yet" and list(root) == []


def test_the_sparkline_spans_its_width_with_the_highest_value_at_the_top() -> None:
    drawn = sparkline([50.0, 100.0, 75.0], width=120, height=28)
    root = ET.fromstring(drawn)
    assert root.get("aria-label") == "coverage trend of the last 3 commits, latest 75.00%"
    points = root.find(f"{SVG}polyline").get("points", "")  # type: ignore[union-attr]
    xy = [tuple(map(float, p.split(","))) for p in points.split()]
    assert [x for x, _ in xy] == [0.0, 60.0, 120.0]
    assert [y for _, y in xy] == [25.0, 3.0, 14.0]  # padded 3 px top and bottom
    circle = root.find(f"{SVG}circle")
    assert circle is not None and circle.get("cx") == "117.5"  # the last point, kept inside


def test_a_flat_sparkline_or_a_single_point_sits_in_the_middle() -> None:
    for values in ([80.0, 80.0, 80.0], [42.0]):
        points = re.search(r'points="([^"]+)"', sparkline(values, height=28))
        assert points is not None
        assert {p.split(",")[1] for p in points.group(1).split()} == {"14.0"}
    single = re.search(r'points="([^"]+)"', sparkline([42.0], width=100))
    assert single is not None and single.group(1) == "50.0,14.0"
