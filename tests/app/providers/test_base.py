"""The provider interface's values: the diff as ``git diff`` writes it,
statuses that refuse unknown states, typed failures that carry what the
caller needs."""

from __future__ import annotations

import pytest

from app.errors import CovworkerError
from app.providers.base import (
    STATUS_STATES,
    AccessDenied,
    CallCounter,
    Diff,
    DiffFile,
    ProviderError,
    ProviderRejected,
    ProviderResponseInvalid,
    ProviderUnavailable,
    RateLimited,
    Status,
)


def test_a_unified_diff_has_a_header_per_file_in_git_diff_form() -> None:
    diff = Diff(
        "b" * 40,
        "h" * 40,
        (
            DiffFile("src/new.py", "added", patch="@@ -0,0 +1 @@\n+x = 1"),
            DiffFile("src/mod.py", "modified", patch="@@ -1 +1 @@\n-a\n+b\n"),
            DiffFile("src/gone.py", "removed", patch="@@ -1 +0,0 @@\n-y"),
            DiffFile("src/to.py", "renamed", previous_path="src/from.py"),
        ),
    )
    assert diff.unified() == (
        "diff --git a/src/new.py b/src/new.py\n"
        "new file mode 100644\n--- /dev/null\n+++ b/src/new.py\n"
        "@@ -0,0 +1 @@\n+x = 1\n"
        "diff --git a/src/mod.py b/src/mod.py\n"
        "--- a/src/mod.py\n+++ b/src/mod.py\n"
        "@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/src/gone.py b/src/gone.py\n"
        "--- a/src/gone.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-y\n"
        "diff --git a/src/from.py b/src/to.py\n"
        "rename from src/from.py\nrename to src/to.py\n--- a/src/from.py\n+++ b/src/to.py\n"
    )


def test_a_file_whose_patch_was_left_out_still_appears_with_its_header() -> None:
    diff = Diff("b" * 40, "h" * 40, (DiffFile("assets/logo.png", "modified"),), truncated=True)
    assert diff.unified() == (
        "diff --git a/assets/logo.png b/assets/logo.png\n"
        "--- a/assets/logo.png\n+++ b/assets/logo.png\n"
    )
    assert Diff("b" * 40, "h" * 40).unified() == ""


def test_a_status_refuses_a_state_the_providers_do_not_know() -> None:
    for state in STATUS_STATES:
        assert Status("codecov/project", state, "75.00%").state == state
    with pytest.raises(ValueError, match="status state 'passed' is not one of"):
        Status("codecov/project", "passed", "75.00%")


def test_the_call_counter_counts_each_kind_of_call() -> None:
    counter = CallCounter()
    for kind in ("compare", "set_status", "set_status"):
        counter.add(kind)
    assert counter.counts == {"compare": 1, "set_status": 2}


def test_failures_are_provider_errors_that_carry_what_the_caller_acts_on() -> None:
    limited = RateLimited("secondary rate limit", retry_in_s=42.5)
    denied = AccessDenied("github refused access to acme/web (404)", status_code=404)
    assert (limited.retry_in_s, str(limited)) == (42.5, "secondary rate limit")
    assert (denied.status_code, str(denied)) == (404, "github refused access to acme/web (404)")
    for kind in (ProviderUnavailable, RateLimited, AccessDenied, ProviderRejected):
        assert issubclass(kind, ProviderError)
    assert issubclass(ProviderResponseInvalid, ProviderError)
    assert issubclass(ProviderError, CovworkerError)
