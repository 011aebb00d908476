"""JUnit XML, as the common test runners write it, into test cases.

One reader for every producer: pytest ``--junitxml``, Jest's
``jest-junit``, ``gotestsum --junitfile``, Maven Surefire, PHPUnit and
cargo-nextest. They agree on ``<testcase name classname time>`` under
(possibly nested) ``<testsuite>`` elements, with at most one of
``<failure>``, ``<error>`` or ``<skipped>`` inside; they differ in where
the suite's name lives (``classname``, PHPUnit's ``class``, or only the
enclosing ``<testsuite name>``) and in how retries show:

- Surefire and nextest keep one ``<testcase>`` and add ``<flakyFailure>`` /
  ``<flakyError>`` (failed, then passed on a rerun) or ``<rerunFailure>`` /
  ``<rerunError>`` (failed again on a rerun) inside it;
- gotestsum ``--rerun-fails`` repeats the ``<testcase>``.

Both end up as attempts of one test (``TestCase.retried_failures``, or
several cases of the same identity), so a test retried within a run is
counted once, as flaky if it also passed.

The XML goes through the same safe, streaming lxml parser as the coverage
reports (:mod:`app.coverage.safexml`: no entities, no network, no DTD,
bounded depth). An upload may hold at most ``max_test_cases(N)`` cases
for the N bytes it stored (all its files together), as coverage's line
records are bounded by the upload's size (:mod:`app.coverage.limits`):
each case becomes three rows (the test, its run, its day's counts), so a
166 KB gzip of 257,000 empty ``<testcase/>`` elements must not become
770,000 rows. Real JUnit files take 12 to 25 stored bytes per case
(pytest, gotestsum, Surefire, compressed as codecov-cli sends them); the
bound allows 4, with a floor of 20,000 cases for any upload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.coverage.safexml import MAX_DEPTH, Invalid, feed
from app.errors import ReportTooLarge

FORMAT = "junit"
#: Most test cases one upload may hold (all of its files together), however large.
MAX_TEST_CASES = 2_000_000
#: Test cases any upload may hold, however small ...
CASES_FLOOR = 20_000
#: ... plus one per this many bytes it stored.
BYTES_PER_CASE = 4
#: Longest failure message kept, in characters (its end: where the assertion is).
MAX_MESSAGE_CHARS = 4000
#: Longest suite or test name kept, in characters.
MAX_NAME_CHARS = 1000

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
OUTCOMES = (PASSED, FAILED, ERROR, SKIPPED)

_RESULT_CHILD = {"failure": FAILED, "error": ERROR, "skipped": SKIPPED}
_RERUN_CHILD = frozenset({"flakyFailure", "flakyError", "rerunFailure", "rerunError"})


@dataclass(slots=True)
class TestCase:
    """One ``<testcase>``: who it is, how it ended, and why if it did not pass."""

    __test__ = False  # not a pytest test class

    suite: str
    name: str
    outcome: str
    duration: float
    message: str | None = None
    #: Reruns inside this case that failed (Surefire, nextest); a passed case
    #: with some is flaky within its run.
    retried_failures: int = 0


def max_test_cases(size: int) -> int:
    """The test cases an upload that stored ``size`` bytes may hold."""
    return min(MAX_TEST_CASES, CASES_FLOOR + size // BYTES_PER_CASE)


def trim_message(text: str | None) -> str | None:
    """A failure message without surrounding blank space, and at most
    ``MAX_MESSAGE_CHARS`` long: the end is kept, where runners put the
    assertion that failed."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_MESSAGE_CHARS:
        text = "…" + text[-(MAX_MESSAGE_CHARS - 1) :]
    return text


def _duration(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        seconds = float(value.replace(",", ""))  # Surefire writes 1,234.5 in some locales
    except ValueError:
        return 0.0
    return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else 0.0


def _attribute(value: str | None) -> str | None:
    """An attribute value as written: with entities left unexpanded (the safe
    setting) libxml2 hands ``&amp;`` over as ``&#38;``."""
    if value is None or "&#38;" not in value:
        return value
    return value.replace("&#38;", "&")


class _Target:
    """lxml target: builds ``TestCase`` objects as the elements stream by."""

    def __init__(self, max_cases: int) -> None:
        self.max_cases = max_cases
        self.cases: list[TestCase] = []
        self.suites: list[str] = []
        self.depth = 0
        self.elements = 0
        self.seen_root = False
        self.root_ok = False
        # The open <testcase>, if any.
        self.case: TestCase | None = None
        self.case_depth = 0
        self.result_tag: str | None = None
        self.result_attr: str | None = None
        self.text: list[str] | None = None

    def start(self, tag: str, attrib: Any) -> None:
        self.depth += 1
        self.elements += 1
        if self.depth > MAX_DEPTH:
            raise Invalid(f"elements nest deeper than {MAX_DEPTH}", self.elements)
        if not self.seen_root:
            self.seen_root = True
            self.root_ok = tag in ("testsuites", "testsuite")
            if not self.root_ok:
                raise Invalid(
                    f"the root element is <{tag}>, not <testsuites> or <testsuite>", self.elements
                )
        if tag == "testcase":
            if self.case is not None:
                raise Invalid("a <testcase> inside another <testcase>", self.elements)
            if len(self.cases) >= self.max_cases:
                raise ReportTooLarge(f"the JUnit XML holds more than {self.max_cases} test cases")
            name = attrib.get("name")
            if name is None:
                raise Invalid("a <testcase> without a name attribute", self.elements)
            suite = attrib.get("classname") or attrib.get("class")
            if not suite or suite == name:  # jest-junit repeats the name as classname
                suite = self.suites[-1] if self.suites else ""
            name, suite = _attribute(name) or "", _attribute(suite) or ""
            self.case = TestCase(
                suite[:MAX_NAME_CHARS], name[:MAX_NAME_CHARS], PASSED, _duration(attrib.get("time"))
            )
            self.case_depth = self.depth
        elif self.case is not None:
            if self.depth != self.case_depth + 1:
                return  # inside a result or a rerun (Surefire's <stackTrace>): its text only
            outcome = _RESULT_CHILD.get(tag)
            if outcome is not None:
                # failure and error together (pytest: failed, then its teardown
                # errored) is a failure; skipped never overrides either.
                current = self.case.outcome
                if current == PASSED or (current == ERROR and outcome == FAILED):
                    self.case.outcome = outcome
                    self.result_tag = tag
                    self.result_attr = _attribute(attrib.get("message"))
                    self.text = [] if outcome != SKIPPED else None
                    if outcome == SKIPPED:
                        self.case.message = trim_message(_attribute(attrib.get("message")))
            elif tag in _RERUN_CHILD:
                self.case.retried_failures += 1
                if self.case.message is None:  # a flaky pass: why its first attempt failed
                    self.case.message = trim_message(_attribute(attrib.get("message")))
        elif tag == "testsuite":
            self.suites.append(_attribute(attrib.get("name")) or "")

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def end(self, tag: str) -> None:
        self.depth -= 1
        case = self.case
        if case is not None:
            if tag == "testcase" and self.depth == self.case_depth - 1:
                self.cases.append(case)
                self.case, self.text, self.result_tag = None, None, None
            elif tag == self.result_tag and self.depth == self.case_depth:
                body = "".join(self.text or ())
                case.message = trim_message(body) or trim_message(self.result_attr)
                self.text, self.result_tag = None, None
        elif tag == "testsuite" and self.suites:
            self.suites.pop()

    def close(self) -> None:
        """lxml calls it even after an error; checks live in ``finish``."""

    def finish(self) -> list[TestCase]:
        if not self.root_ok:
            raise Invalid("the document has no <testsuites> or <testsuite> root")
        return self.cases


def parse_junit(raw: bytes, *, max_cases: int = MAX_TEST_CASES) -> list[TestCase]:
    """Every test case of one JUnit XML document, in document order.

    Raises ``MalformedReport`` (not XML, not JUnit, a ``<testcase>``
    without a name, entities) or ``ReportTooLarge``.
    """
    cases: list[TestCase] = feed(raw, _Target(max_cases), FORMAT)
    return cases
