"""The exceptions covworker raises, in one small hierarchy.

Errors are things that went wrong with some input or some service; the
caller can show them to a user. Exceptions that steer the worker are not
errors and do not live here: the gate steers with Dramatiq's
``SkipMessage`` and ``middleware.gate._options.DeferralNotEnqueuedError``.

    CovworkerError                    every error of covworker
    ├── ConfigurationError            settings that cannot work (bad URL, ...)
    ├── InvalidUpload                 the CLI refused an upload (repo, sha, file)
    ├── CommitNotFound                no commit of that repository matches the SHA
    ├── AmbiguousCommit               a SHA prefix matches several commits
    ├── WebhookFailed                 a notification webhook did not answer 2xx
    │                                 (app.notify.notifier; retried)
    ├── ReportError                   a raw report could not be turned into coverage
    │   ├── UnknownFormat             no parser recognises the content
    │   ├── MalformedReport           a parser recognised it, then found it broken
    │   ├── MalformedPayload          an uploader's payload (v1 JSON, legacy text) is broken
    │   └── ReportTooLarge            over a configured size / files / lines limit
    └── MessageError                  a message that can never succeed (dead-lettered)
        └── UnknownEntity             the upload / commit it names does not exist

Messages whose arguments do not fit their actor never reach an actor:
``middleware.ArgumentValidation`` dead-letters them first.
"""

from __future__ import annotations


class CovworkerError(Exception):
    """Base class of every error covworker raises on purpose."""


class ConfigurationError(CovworkerError):
    """The settings cannot work, for example an unsupported database URL."""


class InvalidUpload(CovworkerError):
    """The CLI refused an upload: bad repository name, SHA or file."""


class CommitNotFound(CovworkerError):
    """No commit of the repository matches the SHA (or SHA prefix) asked for."""


class AmbiguousCommit(CovworkerError):
    """A SHA prefix matches several commits; the message lists them."""

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        self.candidates = candidates
        super().__init__(
            f"commit prefix {prefix!r} is ambiguous, it matches: {', '.join(candidates)}"
        )


class ReportError(CovworkerError):
    """A raw report could not be turned into coverage.

    The message is meant for the person who uploaded the report, and is
    stored on the upload row as its readable error.
    """


class UnknownFormat(ReportError):
    """No parser recognises the report's content."""


class MalformedReport(ReportError):
    """A parser recognised the format, then found the report broken.

    ``fmt`` names the format and ``line`` the line of the raw report where
    the problem was found, when it is known.
    """

    def __init__(self, fmt: str, reason: str, *, line: int | None = None) -> None:
        self.fmt = fmt
        self.reason = reason
        self.line = line
        where = f" at line {line}" if line is not None else ""
        super().__init__(f"malformed {fmt} report{where}: {reason}")


class MalformedPayload(ReportError):
    """An uploader's payload (codecov-cli's v1 JSON or the legacy text
    format) cannot be decoded; the message names the field or section."""


class ReportTooLarge(ReportError):
    """The report is over a configured limit (bytes, files or lines)."""


class MessageError(CovworkerError):
    """A message that can never succeed; it is dead-lettered, not retried."""


class UnknownEntity(MessageError):
    """The message names an upload or commit that does not exist."""
