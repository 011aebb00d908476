"""A comment over the provider's limit is cut to fit, the coverage kept,
open blocks closed, with a note linking the commit's page."""

from __future__ import annotations

import time

from app.pullrequests.comment.fit import MAX_COMMENT_CHARS, cut_note, fit_markdown
from app.testresults.comment import tests_section
from app.testresults.summary import CommitTests, Failure
from tests.support.pullcomment import PAGE, rendered

URL = "https://cov.example/c"


def failures(count: int, message_chars: int) -> CommitTests:
    """``count`` failed tests, each with a message of ``message_chars`` characters."""
    listed = [
        Failure(
            suite="tests.test_big",
            name=f"test_{i}",
            job="py311",
            message="E" * message_chars,
            duration=0.5,
            failed=True,
            flaky=False,
            fail_rate=None,
        )
        for i in range(count)
    ]
    return CommitTests(
        uploads=1, passed=1, failed=count, errored=0, skipped=0, flaky=0, failures=listed
    )


def test_text_within_the_limit_is_left_as_it_is() -> None:
    text = "a\n```\nb\n```\n"
    assert fit_markdown(text, len(text), URL) is text


def test_a_cut_closes_the_open_fence_and_details_and_links_the_page() -> None:
    text = (
        "# title\n<details><summary>s</summary>\n\n> ````\n> " + "x\n> " * 500 + "````\n</details>"
    )
    got = fit_markdown(text, 300, URL)
    assert len(got) <= 300
    assert got.endswith(f"> ````\n</details>\n\n{cut_note(URL)}")
    assert got.startswith("# title\n<details><summary>s</summary>\n\n> ````\n> x\n")


def test_a_fence_run_inside_the_code_does_not_close_a_longer_fence() -> None:
    text = "````\n```\n" + "y\n" * 200 + "````\nafter"
    got = fit_markdown(text, 200, URL)
    assert "\n````\n\n:scissors:" in got  # the opening ```` is closed, the inner ``` is code


def test_nothing_fits_but_the_note() -> None:
    assert fit_markdown("z" * 1000, 400, URL) == cut_note(URL)


def test_cutting_costs_time_linear_in_the_text() -> None:
    small, large = "line\n" * 200_000, "line\n" * 2_000_000

    def cpu(text: str) -> float:
        started = time.process_time()
        fit_markdown(text, len(text) // 2, URL)
        return time.process_time() - started

    assert cpu(large) < 30 * max(cpu(small), 0.01)


def test_thousands_of_open_details_are_all_closed_within_the_limit() -> None:
    got = fit_markdown("<details>\n" * 200_000, MAX_COMMENT_CHARS, URL)
    assert MAX_COMMENT_CHARS - 20 < len(got) <= MAX_COMMENT_CHARS
    assert got.count("<details>") == got.count("</details>")


def test_a_comment_with_45_long_failures_fits_github_and_keeps_its_coverage() -> None:
    section = tests_section(failures(45, 1500))
    assert section is not None and len(section) > MAX_COMMENT_CHARS
    whole = rendered(extra_sections=[section], max_chars=10**9)
    body = rendered(extra_sections=[section])
    assert len(whole) > MAX_COMMENT_CHARS >= len(body)
    head_of_whole = whole.split("### :x: 45 Tests Failed:")[0]
    assert body.startswith(head_of_whole)  # the coverage header and files, untouched
    tail_of_whole = whole.split("</details>")[-1]
    assert body.endswith(tail_of_whole)  # and what follows the tests: footer, tables
    assert cut_note(PAGE) in body and body.count(":scissors:") == 1
    assert body.count("<details>") == body.count("</details>")
