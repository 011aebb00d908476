"""JUnit XML as the real tools write it, parsed exactly.

The fixtures were written by the tools themselves (fixtures/SOURCES.md);
each test compares the parsed outcomes with the tool's own summary line.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from app.errors import MalformedReport, ReportTooLarge
from app.testresults.junit import MAX_MESSAGE_CHARS, parse_junit, trim_message
from tests.support.paths import JUNIT

FIXTURES = JUNIT


def outcomes(name: str) -> Counter[str]:
    return Counter(c.outcome for c in parse_junit((FIXTURES / f"{name}.xml").read_bytes()))


def summary(name: str) -> dict[str, int]:
    """``{"failed": 3, "passed": 5, ...}`` from the tool's own summary line."""
    line = (FIXTURES / f"{name}.summary.txt").read_text()
    return {word.lower(): int(n) for n, word in re.findall(r"(\d+) (\w+)", line)}


def test_pytest_counts_equal_its_summary_line() -> None:
    said = summary("pytest")  # "3 failed, 5 passed, 1 skipped, 1 xfailed, 1 error in ..."
    assert outcomes("pytest") == Counter(
        passed=said["passed"],
        failed=said["failed"],
        error=said["error"],
        skipped=said["skipped"] + said["xfailed"],  # pytest writes xfail as <skipped>
    )


def test_jest_junit_counts_equal_its_summary_line() -> None:
    said = summary("jest")  # "Tests: 2 failed, 1 skipped, 1 todo, 3 passed, 7 total"
    got = outcomes("jest")
    # jest-junit writes a todo as a <testcase> without a result: it reads as passed.
    assert got == Counter(
        passed=said["passed"] + said["todo"], failed=said["failed"], skipped=said["skipped"]
    )
    assert sum(got.values()) == said["total"]


def test_gotestsum_counts_equal_its_summary_line() -> None:
    said = summary("gotestsum")  # "DONE 7 tests, 1 skipped, 3 failures in ..."
    got = outcomes("gotestsum")
    assert sum(got.values()) == said["tests"]
    assert got["failed"] == said["failures"] and got["skipped"] == said["skipped"]
    assert got["passed"] == said["tests"] - said["failures"] - said["skipped"]


def test_phpunit_counts_equal_its_summary_line() -> None:
    line = (FIXTURES / "phpunit.summary.txt").read_text()  # "Tests: 7, ..., Errors: 1, ..."
    said = {k.lower(): int(v) for k, v in re.findall(r"(\w+): (\d+)", line)}
    got = outcomes("phpunit")
    assert sum(got.values()) == said["tests"]
    assert got["error"] == said["errors"] and got["failed"] == said["failures"]
    assert got["skipped"] == said["skipped"]


def test_surefire_counts_and_its_flake_equal_its_summary_line() -> None:
    line = (FIXTURES / "surefire.summary.txt").read_text()  # "Tests run: 5, ..., Flakes: 1"
    said = {k.lower(): int(v) for k, v in re.findall(r"(\w+): (\d+)", line)}
    cases = parse_junit((FIXTURES / "surefire.xml").read_bytes())
    got = Counter(c.outcome for c in cases)
    assert sum(got.values()) == said["run"]
    assert got["failed"] == said["failures"] and got["error"] == said["errors"]
    assert got["skipped"] == said["skipped"]
    flakes = [c for c in cases if c.outcome == "passed" and c.retried_failures]
    assert [c.name for c in flakes] == ["flakyNetwork"] and len(flakes) == said["flakes"]
    assert {c.name: c.retried_failures for c in cases}["comparesMarkup"] == 2  # two reruns
    markup = next(c for c in cases if c.name == "comparesMarkup")
    assert "but was: <<b>a & b</b>>" in (markup.message or "")


def test_nextest_counts_and_its_flake_equal_its_summary_line() -> None:
    line = (FIXTURES / "nextest.summary.txt").read_text()
    # "3 tests run: 2 passed (1 flaky), 1 failed, 1 skipped": nextest leaves
    # ignored tests out of its JUnit file, so the skipped one is not there.
    said = {word: int(n) for n, word in re.findall(r"(\d+) (tests run|passed|flaky|failed)", line)}
    cases = parse_junit((FIXTURES / "nextest.xml").read_bytes())
    got = Counter(c.outcome for c in cases)
    assert sum(got.values()) == said["tests run"]
    assert (got["passed"], got["failed"]) == (said["passed"], said["failed"])
    flaky = [c.name for c in cases if c.outcome == "passed" and c.retried_failures]
    assert flaky == ["tests::flaky_network"] and len(flaky) == said["flaky"]
    assert all(c.suite == "calc" for c in cases)


def test_names_suites_durations_and_messages_are_read_as_written() -> None:
    cases = {(c.suite, c.name): c for c in parse_junit((FIXTURES / "pytest.xml").read_bytes())}
    markup = cases[("test_sample", "test_compares_markup")]
    assert markup.outcome == "failed"
    assert markup.message is not None
    assert 'assert "<b>a & b</b>" == "<i>a | b</i>"' in markup.message  # entities decoded once
    assert markup.message.endswith("test_sample.py:22: AssertionError")
    assert cases[("test_sample.TestStrings", "test_split")].outcome == "failed"
    assert cases[("test_sample", "test_on_gpu")].message == "needs a GPU"
    broken = cases[("test_sample", "test_uses_broken_fixture")]
    assert broken.outcome == "error" and "could not connect" in (broken.message or "")
    go = {c.name: c for c in parse_junit((FIXTURES / "gotestsum.xml").read_bytes())}
    assert go["TestTable/d"].suite == "example.com/sample"
    assert "case 3 fails" in (go["TestTable/d"].message or "")


def test_jest_junit_names_keep_their_ampersand_and_take_the_suite_from_the_testsuite() -> None:
    cases = parse_junit((FIXTURES / "jest.xml").read_bytes())
    names = {c.name: c for c in cases}
    case = names["math compares <markup> & pipes |"]
    assert case.suite == "math" and case.outcome == "failed"
    assert case.duration == pytest.approx(float(_attr(FIXTURES / "jest.xml", case.name)))


def _attr(path: Path, name: str) -> str:
    escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    found = re.search(rf'name="{re.escape(escaped)}" time="([\d.]+)"', path.read_text())
    assert found, name
    return found.group(1)


# Documents written here (no tool in reach writes them): Surefire's and
# nextest's retry elements, and hostile input.

SUREFIRE_RERUNS = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.acme.CalcTest" tests="2" failures="1">
  <testcase name="adds" classname="com.acme.CalcTest" time="0.02">
    <flakyFailure message="expected 3" type="AssertionError">
      <stackTrace>at CalcTest.adds</stackTrace></flakyFailure>
  </testcase>
  <testcase name="divides" classname="com.acme.CalcTest" time="0.01">
    <failure message="expected 2" type="AssertionError">at CalcTest.divides</failure>
    <rerunFailure message="expected 2" type="E"><stackTrace>at x</stackTrace></rerunFailure>
    <rerunFailure message="expected 2" type="E"><stackTrace>at x</stackTrace></rerunFailure>
  </testcase>
</testsuite>"""


def test_reruns_inside_a_testcase_are_attempts_of_one_test() -> None:
    adds, divides = parse_junit(SUREFIRE_RERUNS)
    assert (adds.outcome, adds.retried_failures, adds.message) == ("passed", 1, "expected 3")
    assert (divides.outcome, divides.retried_failures) == ("failed", 2)
    assert divides.message == "at CalcTest.divides"


def test_an_entity_declaration_is_refused() -> None:
    bomb = b'<!DOCTYPE t [<!ENTITY a "aaaa">]><testsuite><testcase name="&a;"/></testsuite>'
    with pytest.raises(MalformedReport, match="entity declarations"):
        parse_junit(bomb)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"<coverage/>", "root element is <coverage>"),
        (b"<testsuite><testcase/></testsuite>", "without a name"),
        (b"<testsuite><testcase name='a'>", "not well-formed"),
        (b"", "empty"),
    ],
)
def test_a_document_that_is_not_junit_says_why(raw: bytes, why: str) -> None:
    with pytest.raises(MalformedReport, match=why):
        parse_junit(raw)


def test_more_cases_than_the_limit_is_refused_while_parsing() -> None:
    raw = b"<testsuite>" + b'<testcase name="t"/>' * 11 + b"</testsuite>"
    with pytest.raises(ReportTooLarge, match="more than 10 test cases"):
        parse_junit(raw, max_cases=10)


def test_a_long_message_keeps_its_end_and_blank_ones_are_none() -> None:
    text = "x" * (MAX_MESSAGE_CHARS * 2) + "AssertionError"
    kept = trim_message(text)
    assert kept is not None and len(kept) == MAX_MESSAGE_CHARS
    assert kept.startswith("…") and kept.endswith("AssertionError")
    assert trim_message("  \n ") is None
