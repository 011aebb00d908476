"""The pull-request comment's test section: Codecov's wording, escaping."""

from __future__ import annotations

from app.testresults.comment import ALL_PASSED, UNREADABLE, tests_section
from app.testresults.summary import CommitTests, Failure


def failure(name: str, **kw: object) -> Failure:
    values: dict[str, object] = {
        "name": name, "suite": "tests.test_calc", "message": f"{name} broke",
        "flaky": False, "duration": 0.5, "job": "py311",
    }  # fmt: skip
    values.update(kw)
    return Failure(**values)  # type: ignore[arg-type]


def test_no_test_results_means_no_section() -> None:
    assert tests_section(None) is None


def test_uploads_that_could_not_be_read_say_so_as_codecov_does() -> None:
    assert tests_section(None, unreadable_uploads=2) == UNREADABLE
    assert UNREADABLE.startswith(":x: We are unable to process any of the uploaded JUnit XML")


def test_all_passed_is_codecov_s_line() -> None:
    tests = CommitTests(uploads=3, passed=40, skipped=2)
    assert tests_section(tests) == ":white_check_mark: All tests successful. No failed tests found."
    assert tests_section(tests) == ALL_PASSED
    # a test that failed then passed (flaky here) is not a failure
    flaky = CommitTests(1, passed=1, flaky=1, failures=[failure("a", flaky=True, failed=False)])
    assert tests_section(flaky) == ALL_PASSED


def test_failures_are_counted_listed_by_run_time_and_flaky_ones_apart() -> None:
    tests = CommitTests(
        uploads=2,
        passed=10,
        failed=2,
        errored=1,
        skipped=4,
        failures=[
            failure("test_slow", duration=2.0),
            failure("test_fast", duration=0.001),
            failure("test_setup", message=None, duration=0.2),
            failure("test_net", flaky=True, fail_rate=0.25, duration=1.0),
        ],
    )
    text = tests_section(tests)
    assert text is not None
    lines = text.splitlines()
    assert lines[:4] == [
        "### :x: 3 Tests Failed:",
        "| Tests completed | Failed | Passed | Skipped |",
        "|---|---|---|---|",
        "| 13 | 3 | 10 | 4 |",
    ]
    assert "<details><summary>View the top 3 failed tests by shortest run time</summary>" in text
    order = [text.index(n) for n in ("test_fast", "test_setup", "test_slow")]
    assert order == sorted(order)
    assert "> tests.test_calc test_fast (py311)" in text
    assert "Stack Traces | 0.001s run time" in text
    assert "No failure message available" in text  # test_setup has none
    assert "View the full list of 1 :snowflake: flaky tests" in text
    assert "**Flake rate:** 25.00%" in text
    assert text.index("test_net") > text.index(":snowflake:")


def test_a_message_cannot_break_out_of_its_code_block() -> None:
    hostile = "```\n</details><script>alert(1)</script>\n````"
    text = tests_section(CommitTests(1, failed=1, failures=[failure("test_x", message=hostile)]))
    assert text is not None
    # the fence around the message is longer than any backtick run in it
    assert "> > `````\n> > ```\n> > </details><script>" in text
    name = tests_section(CommitTests(1, failed=1, failures=[failure("a\nb ```", suite="s")]))
    assert name is not None and "> s a b ``` (py311)" in name  # one line, fenced
