"""The SVG the repository and commit pages draw on the server: the coverage
chart and the treemap (app/web/chart.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from app.web.chart import Point, Region, coverage_chart, treemap


def test_each_point_of_the_chart_links_to_its_commit_in_order() -> None:
    points = [Point(f"{i:040x}", datetime(2026, 1, i + 1, tzinfo=UTC), 50.0 + i) for i in range(3)]
    svg = coverage_chart(points, "acme/web", "main")
    assert re.findall(r'<a href="/acme/web/commit/([0-9a-f]{40})"', svg) == [
        p.commit for p in points
    ]
    ys = [float(y) for y in re.findall(r'<circle cx="[^"]+" cy="([^"]+)"', svg)]
    assert ys[0] > ys[1] > ys[2]  # higher coverage is drawn higher
    assert "2026-01-01" in svg and "2026-01-03" in svg


def test_a_chart_without_points_says_so_and_a_label_is_escaped() -> None:
    empty = coverage_chart([], "acme/web", '<b "x">')
    assert "no settled commits yet" in empty
    assert '<b "x">' not in empty and "&lt;b &quot;x&quot;&gt;" in empty


def test_the_treemap_s_regions_are_sized_by_lines_and_fill_it() -> None:
    regions = [Region(f"r{i}", f"?dir=r{i}", lines, 50.0) for i, lines in enumerate([60, 30, 10])]
    svg = treemap(regions, "tree")
    rects = [
        (float(w) * float(h), name)
        for name, w, h in re.findall(
            r'aria-label="(r\d)[^"]*"><rect x="[^"]+" y="[^"]+" width="([^"]+)" height="([^"]+)"',
            svg,
        )
    ]
    total = sum(a for a, _ in rects)
    assert abs(total - 760 * 300) < 760 * 300 * 0.01
    shares = {name: a / total for a, name in rects}
    assert abs(shares["r0"] - 0.6) < 0.01 and abs(shares["r2"] - 0.1) < 0.01


def test_a_region_s_name_and_link_are_escaped() -> None:
    svg = treemap([Region('<script>"', '?dir="><x', 5, None)], "tree")
    assert "<script>" not in svg and '"><x' not in svg
    assert 'aria-label="&lt;script&gt;&quot;: no lines of 5 lines"' in svg
    assert 'href="?dir=&quot;&gt;&lt;x"' in svg
