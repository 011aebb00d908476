"""The error hierarchy: what a caller catches, and the messages users read."""

from __future__ import annotations

import pytest

from app.errors import (
    AmbiguousCommit,
    CommitNotFound,
    ConfigurationError,
    CovworkerError,
    InvalidUpload,
    MalformedPayload,
    MalformedReport,
    MessageError,
    ReportError,
    ReportTooLarge,
    UnknownEntity,
    UnknownFormat,
)
from app.notify.webhooks import WebhookFailed  # in the hierarchy, declared by its sender


@pytest.mark.parametrize(
    ("error", "parent"),
    [
        (ConfigurationError, CovworkerError),
        (InvalidUpload, CovworkerError),
        (CommitNotFound, CovworkerError),
        (AmbiguousCommit, CovworkerError),
        (WebhookFailed, CovworkerError),
        (UnknownFormat, ReportError),
        (MalformedReport, ReportError),
        (MalformedPayload, ReportError),
        (ReportTooLarge, ReportError),
        (ReportError, CovworkerError),
        (UnknownEntity, MessageError),
        (MessageError, CovworkerError),
    ],
)
def test_each_error_is_caught_as_the_kind_the_hierarchy_names(
    error: type[Exception], parent: type[Exception]
) -> None:
    assert issubclass(error, parent)


def test_a_report_error_is_not_a_message_error_so_it_is_not_dead_lettered_as_one() -> None:
    assert not issubclass(ReportError, MessageError)
    assert not issubclass(MessageError, ReportError)


def test_an_ambiguous_prefix_lists_the_commits_it_matches() -> None:
    error = AmbiguousCommit("abc1234", ["abc1234aa", "abc1234bb"])
    assert error.candidates == ["abc1234aa", "abc1234bb"]
    assert str(error) == "commit prefix 'abc1234' is ambiguous, it matches: abc1234aa, abc1234bb"


def test_a_malformed_report_names_its_format_and_line_when_known() -> None:
    error = MalformedReport("lcov", "DA line without a count", line=12)
    assert (error.fmt, error.reason, error.line) == ("lcov", "DA line without a count", 12)
    assert str(error) == "malformed lcov report at line 12: DA line without a count"
    assert str(MalformedReport("cobertura", "no <coverage>")) == (
        "malformed cobertura report: no <coverage>"
    )
    assert MalformedReport("cobertura", "no <coverage>").line is None
