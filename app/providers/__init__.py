"""Git providers (GitHub, GitLab): the seam pull-request feedback goes through.

:class:`Providers` holds one client per service that has credentials,
built once from the settings. A repository's provider is its ``service``;
a service without credentials has none, and covworker then works as
without pull-request feedback (and says so once at start-up).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from app.errors import ConfigurationError
from app.providers.base import (
    AccessDenied,
    CallCounter,
    ContentTooLarge,
    Diff,
    DiffFile,
    OverBudget,
    Provider,
    ProviderError,
    ProviderRejected,
    ProviderResponseInvalid,
    ProviderUnavailable,
    PullRequest,
    RateLimited,
    RepositoryFacts,
    Status,
    UnknownCommit,
)
from app.providers.budget import CallBudget
from app.settings import Settings

logger = logging.getLogger(__name__)
#: httpx logs every request at INFO; covworker logs the failures that matter itself.
logging.getLogger("httpx").setLevel(logging.WARNING)

__all__ = [
    "AccessDenied",
    "CallCounter",
    "ContentTooLarge",
    "Diff",
    "DiffFile",
    "OverBudget",
    "Provider",
    "ProviderError",
    "ProviderRejected",
    "ProviderResponseInvalid",
    "ProviderUnavailable",
    "Providers",
    "PullRequest",
    "RateLimited",
    "RepositoryFacts",
    "Status",
    "UnknownCommit",
]


class Providers:
    """The configured providers by service (``github``, ``gitlab``)."""

    def __init__(self, by_service: dict[str, Provider], counter: CallCounter) -> None:
        self.by_service = by_service
        self.counter = counter

    @classmethod
    def none(cls) -> Providers:
        """No provider: pull-request feedback off."""
        return cls({}, CallCounter())

    @classmethod
    def from_settings(
        cls, settings: Settings, counter: CallCounter | None = None, *, redis: Any = None
    ) -> Providers:
        """The providers with credentials; with ``redis``, each repository's calls
        are budgeted and unknown commits remembered (:mod:`app.providers.budget`)."""
        counter = counter or CallCounter()
        github_app = settings.github_app_id or settings.github_app_private_key_path
        if not (github_app or settings.github_token or settings.gitlab_token):
            # No client is built, so none is imported, nor httpx under them:
            # a worker without pull-request feedback never loads them (about
            # 25 MiB of its resident memory).
            return cls({}, counter)
        from app.providers.github import AppAuth, GitHub, TokenAuth
        from app.providers.gitlab import GitLab
        from app.providers.http import ProviderHttp

        found: dict[str, Provider] = {}
        timeout = settings.provider_timeout_s
        budget = (
            CallBudget(
                redis,
                settings.namespace,
                per_hour=settings.provider_calls_per_repository_hour,
                burst=settings.provider_calls_burst,
                unknown_commit_ttl_s=settings.provider_unknown_commit_ttl_s,
            )
            if redis is not None
            else None
        )
        if github_app:
            if not (settings.github_app_id and settings.github_app_private_key_path):
                raise ConfigurationError(
                    "a GitHub App needs both COVWORKER_GITHUB_APP_ID and "
                    "COVWORKER_GITHUB_APP_PRIVATE_KEY_PATH"
                )
            try:
                key = Path(settings.github_app_private_key_path).read_text()
            except OSError as exc:
                raise ConfigurationError(
                    f"COVWORKER_GITHUB_APP_PRIVATE_KEY_PATH="
                    f"{settings.github_app_private_key_path}: cannot read it ({exc.strerror})"
                ) from exc
            http = ProviderHttp(settings.github_api_url, timeout_s=timeout, counter=counter)
            found["github"] = GitHub(http, AppAuth(settings.github_app_id, key), budget)
        elif settings.github_token:
            http = ProviderHttp(settings.github_api_url, timeout_s=timeout, counter=counter)
            found["github"] = GitHub(http, TokenAuth(settings.github_token), budget)
        if settings.gitlab_token:
            http = ProviderHttp(settings.gitlab_api_url, timeout_s=timeout, counter=counter)
            found["gitlab"] = GitLab(http, settings.gitlab_token, budget)
        return cls(found, counter)

    def for_service(self, service: str) -> Provider | None:
        return self.by_service.get(service)

    def announce(self) -> None:
        """Say once, at start-up, which services get pull-request feedback."""
        missing = [s for s in ("github", "gitlab") if s not in self.by_service]
        if not self.by_service:
            logger.warning(
                "Pull-request feedback is off: no GitHub or GitLab credentials "
                "(COVWORKER_GITHUB_TOKEN or COVWORKER_GITHUB_APP_ID, COVWORKER_GITLAB_TOKEN)."
            )
        elif missing:
            logger.info(
                "Pull-request feedback is on for %s, off for %s (no credentials).",
                ", ".join(sorted(self.by_service)),
                ", ".join(missing),
            )
        else:
            logger.info("Pull-request feedback is on for github and gitlab.")

    def close(self) -> None:
        for provider in self.by_service.values():
            provider.close()
