"""The test section of the pull-request comment, as Codecov writes it.

A pure function of a commit's :class:`~app.testresults.summary.CommitTests`
(no database, no provider): the comment builder puts the string it returns
where Codecov's comment has its test section::

    tests = commit_tests(session, repository_id, commit_id, settings.testresults_flake_runs)
    unreadable = unreadable_uploads(session, commit_id)
    section = tests_section(tests, unreadable_uploads=unreadable)  # None: no section

The wording and layout are Codecov's worker's (GitHub and GitLab render ``:x:`` as ❌,
``:white_check_mark:`` as ✅ and ``:snowflake:`` as ❄️):

- all passed: ``:white_check_mark: All tests successful. No failed tests found.``
- some failed: ``### :x: N Tests Failed:``, a table of the counts, each
  failure in a collapsed block with its name and message (the message in a
  fenced block, so nothing in it is read as Markdown or HTML), and the
  flaky ones apart, with their fail rate over their last runs;
- no test-results upload could be read: Codecov's line asking for JUnit XML.
"""

from __future__ import annotations

import re

from app.testresults.summary import CommitTests, Failure

ALL_PASSED = ":white_check_mark: All tests successful. No failed tests found."
UNREADABLE = (
    ":x: We are unable to process any of the uploaded JUnit XML files. "
    "Please ensure your files are in the right format."
)
NO_MESSAGE = "No failure message available"
#: Failures shown in the comment at most (each kind); the table counts them all.
MAX_LISTED = 50
#: Characters of a message shown (its end); the tests page has more.
MAX_MESSAGE_SHOWN = 1500


def tests_section(tests: CommitTests | None, *, unreadable_uploads: int = 0) -> str | None:
    """The Markdown of the comment's test section, or None when the commit
    has no test results (the comment then has no such section).

    ``unreadable_uploads``: test-results uploads of the commit that failed
    to parse; with none readable, the section says so.
    """
    if tests is None:
        return UNREADABLE if unreadable_uploads else None
    failed = tests.failed + tests.errored
    if failed == 0:
        return ALL_PASSED
    lines = [
        f"### :x: {failed} Tests Failed:",
        "| Tests completed | Failed | Passed | Skipped |",
        "|---|---|---|---|",
        f"| {failed + tests.passed} | {failed} | {tests.passed} | {tests.skipped} |",
    ]
    failing = sorted(
        (f for f in tests.failures if f.failed and not f.flaky),
        key=lambda f: (f.duration, f.suite, f.name),
    )[:MAX_LISTED]
    if failing:
        lines.append(
            _details(
                f"View the top {len(failing)} failed tests by shortest run time",
                "\n".join(_failure(f) for f in failing),
            )
        )
    flaky = [f for f in tests.failures if f.failed and f.flaky][:MAX_LISTED]
    if flaky:
        lines.append(
            _details(
                f"View the full list of {len(flaky)} :snowflake: flaky tests",
                "\n".join(_failure(f, with_rate=True) for f in flaky),
            )
        )
    return "\n".join(lines)


def _details(summary: str, content: str) -> str:
    return f"<details><summary>{summary}</summary>\n{content}\n</details>"


def _quoted(content: str) -> str:
    return "\n" + "\n".join("> " + line for line in content.splitlines()) + "\n"


#: Runs of backticks (a linear scan, in C).
_BACKTICKS = re.compile("`+")


def _fenced(content: str) -> str:
    """``content`` in a code fence longer than any run of backticks in it."""
    longest = max(map(len, _BACKTICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n{fence}\n{content}\n{fence}\n"


def _duration(seconds: float) -> str:
    whole = str(int(seconds))
    return whole if len(whole) > 3 else f"{seconds:.3g}"


def _display_name(failure: Failure) -> str:
    name = f"{failure.suite} {failure.name}" if failure.suite else failure.name
    if failure.job:
        name += f" ({failure.job})"
    return " ".join(name.split())  # one line: a name never breaks the fence


def _message(failure: Failure) -> str:
    text = failure.message or NO_MESSAGE
    if len(text) > MAX_MESSAGE_SHOWN:
        text = "…" + text[-(MAX_MESSAGE_SHOWN - 1) :]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _failure(failure: Failure, *, with_rate: bool = False) -> str:
    parts = [_fenced(_display_name(failure))]
    if with_rate and failure.fail_rate is not None:  # over its last runs (app.testresults.summary)
        parts.append(f"**Flake rate:** {failure.fail_rate * 100:.2f}%")
    trace = _details(
        f"Stack Traces | {_duration(failure.duration)}s run time",
        _quoted(_fenced(_message(failure))),
    )
    parts.append(trace)
    return _quoted("\n".join(parts))


tests_section.__test__ = False  # type: ignore[attr-defined]  # pytest: not a test
