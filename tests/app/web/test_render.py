"""The pages' Jinja environment and its filters (app/web/render.py)."""

from __future__ import annotations

import jinja2
import pytest
from markupsafe import Markup

from app.pullrequests.numbers import DisplayRounding
from app.web.render import (
    MINUS,
    UNKNOWN,
    after,
    environment,
    file_url,
    pct,
    query,
    short,
    spark,
    when,
)


def test_coverage_shows_two_decimals_and_an_unknown_value_a_dash() -> None:
    assert pct(33.33333) == "33.33%" and pct(100) == "100.00%"
    assert pct(None) == UNKNOWN


def shown_with(template: str, value: float | None, rounding: object = None) -> str:
    context = {"v": value} if rounding is None else {"v": value, "rounding": rounding}
    return environment().from_string(template).render(**context)


def test_a_change_carries_its_sign_a_typographic_minus_and_rounds_as_coverage_does() -> None:
    def change(value: float | None, rounding: object = None) -> str:
        return shown_with("{{ v | delta }}", value, rounding)

    assert change(25.0) == "+25.00%"
    assert change(-1.5) == f"{MINUS}1.50%" and "-" not in change(-1.5)
    assert change(0.004) == "±0.00%"
    assert change(-0.004) == f"{MINUS}0.01%"  # down is a floor, as in the statuses
    assert change(-0.004, DisplayRounding(round="nearest")) == "±0.00%"
    assert change(None) == UNKNOWN
    classes = [shown_with("{{ v | delta_class }}", v) for v in (1.0, -1.0, 0.001, None)]
    assert classes == ["up", "down", "flat", "flat"]


def test_a_coverage_is_shown_with_the_pages_rounding_else_codecovs_default() -> None:
    assert shown_with("{{ v | cov }}", 99.58772) == "99.58%"
    assert shown_with("{{ v | cov }}", 99.58772, DisplayRounding(1, "nearest")) == "99.6%"
    assert shown_with("{{ v | cov }}", None) == UNKNOWN


def test_times_show_in_utc_and_a_naive_time_is_taken_as_utc() -> None:
    assert when("2024-05-01T12:00:00+02:00") == "2024-05-01 10:00:00 UTC"
    assert when("2024-05-01T12:00:00") == "2024-05-01 12:00:00 UTC"
    assert when(None) == when("") == UNKNOWN


def test_a_step_after_the_upload_shows_in_seconds_then_minutes() -> None:
    start = "2024-05-01T12:00:00+00:00"
    assert after("2024-05-01T12:00:01.25+00:00", start) == "+1.25 s"
    assert after("2024-05-01T12:03:00", start) == "+3.0 min"  # naive: UTC
    assert after(None, start) == after(start, None) == UNKNOWN


def test_short_shas_are_eight_characters() -> None:
    assert short("0123456789abcdef") == "01234567" and short(None) == ""


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("src/a b.py", "/acme/web/commit/S/file/src/a%20b.py"),
        ("/ci/build/a.c", "/acme/web/commit/S/file?path=%2Fci%2Fbuild%2Fa.c"),
        ("src//a.py", "/acme/web/commit/S/file?path=src%2F%2Fa.py"),
        ("src/upload/b.py", "/acme/web/commit/S/file?path=src%2Fupload%2Fb.py"),
        ("healthz", "/acme/web/commit/S/file?path=healthz"),
        ("a?b#c.py", "/acme/web/commit/S/file/a%3Fb%23c.py"),
    ],
)
def test_a_path_the_url_folding_would_change_links_by_query(path: str, url: str) -> None:
    assert file_url("acme/web", "S", path) == url


def test_a_query_string_keeps_what_is_set_and_drops_empty_values() -> None:
    assert query({"sort": "name", "q": ""}, page=2) == "?sort=name&page=2"
    assert query({"sort": "name"}, sort=None) == "?"
    assert query({}, q="a&b=c") == "?q=a%26b%3Dc"


def test_the_sparkline_is_markup_the_template_does_not_escape_again() -> None:
    drawn = spark([1.0, 2.0])
    assert isinstance(drawn, Markup) and drawn.startswith("<svg")


def test_the_environment_escapes_what_an_upload_names() -> None:
    env = environment()
    rendered = env.from_string("<td>{{ path }}</td><a href='{{ query(args) }}'>").render(
        path="<script>alert(1)</script>", args={"q": "'><b>"}
    )
    assert "<script>" not in rendered and "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    assert "'><b>" not in rendered


def test_a_value_a_template_forgets_to_pass_is_an_error_not_an_empty_string() -> None:
    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ missing }}").render()


def test_every_template_compiles_with_the_filters_it_uses() -> None:
    env = environment()
    names = env.list_templates(extensions=["html"])
    assert "file.html" in names and "404.html" in names
    for name in names:
        env.get_template(name)  # an unknown filter is a TemplateAssertionError here
    assert env.from_string("{{ 12.5 | pct }} {{ -2 | delta }}").render() == f"12.50% {MINUS}2.00%"


def test_every_value_a_page_prints_shows_its_controls_as_escapes() -> None:
    rendered = (
        environment()
        .from_string("<td>{{ path }}</td><td>{{ spark }}</td>")
        .render(path="src/evil\u202eyp.exe\x1b[2J", spark=spark([1.0, 2.0]))
    )
    assert "\u202e" not in rendered and "\x1b" not in rendered
    assert "<td>src/evil\\u202eyp.exe\\x1b[2J</td>" in rendered
    assert "<svg" in rendered  # markup covworker built is kept
