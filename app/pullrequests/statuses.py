"""``codecov/project`` and ``codecov/patch``: states and descriptions as Codecov writes them.

Project: ``74.29% (-9.05%) compared to b11ecec`` against the base, or
``85.65% (target 87.00%)`` against a fixed target; success when head +
threshold reaches the target. A failing ``auto`` status passes when the
removed lines explain the drop (Codecov's default ``removed_code_behavior:
adjust_base``: the base without the removed lines, less the threshold, at most
0.005 points above the head; ``…, passed because coverage increased by 0% when
compared to adjusted base (28.57%)``, the rise unsigned and ``0`` when it
rounds to nothing). Patch: ``61.11% of diff hit (target 74.29%)``, ``… (within
1.00% threshold of …)``, or ``Coverage not affected when comparing
b11ecec...dd78d54`` when the diff adds no coverable line. ``informational``
statuses are always ``success``; ``if_not_found`` decides when there is no
base (``ignore``: the status is not sent). A status filtered to flags waits
for each flag's ``after_n_builds`` uploads (Codecov's ``required_builds``).

``pending`` while uploads are in flight, only for a status whose final one
is sure to follow (:func:`pending_statuses`). At most :data:`MAX_STATUSES`
a commit (:func:`too_many_statuses` is the config error past it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from app.pullrequests.compare import subset
from app.pullrequests.comparison import Comparison
from app.pullrequests.config import CodecovConfig, ConfigError, StatusRule
from app.pullrequests.numbers import coverage, percent, ratio, rounded, signed

#: Most statuses one commit gets. Each is a provider call per report version
#: (and one more while uploads are in flight), on the rate limit every
#: repository shares: a file asking for a status per flag of hundreds of
#: flags would spend it. Past this, the first ones are sent and the comment
#: shows a config error.
MAX_STATUSES = 50
PENDING_DESCRIPTION = "Collecting reports and waiting for CI to complete"
NO_BASE = "No report found to compare against"
CI_FAILED = "CI failed."


@dataclass(frozen=True, slots=True)
class CommitStatus:
    context: str  # codecov/project, codecov/patch, codecov/project/<name>
    state: str  # success | failure | error | pending
    description: str


def status_rules(config: CodecovConfig, flags: list[str] | None = None) -> list[StatusRule]:
    """The status rules sent: the first :data:`MAX_STATUSES` of :func:`all_status_rules`."""
    return all_status_rules(config, flags)[:MAX_STATUSES]


def too_many_statuses(config: CodecovConfig, flags: list[str] | None = None) -> ConfigError | None:
    """The config error shown when the file asks for more than :data:`MAX_STATUSES`."""
    asked = len(all_status_rules(config, flags))
    if asked <= MAX_STATUSES:
        return None
    return ConfigError(
        "coverage.status",
        f"asks for {asked} statuses on a commit; covworker sends at most {MAX_STATUSES} "
        f"(the first {MAX_STATUSES}: project, patch, then the flags' in name order)",
    )


def all_status_rules(config: CodecovConfig, flags: list[str] | None = None) -> list[StatusRule]:
    """Every status rule the file asks for: ``coverage.status`` ones, then each
    flag's (``flag_management`` / ``flags``) for the flags configured or present."""
    rules = [*config.project_statuses, *config.patch_statuses]
    names = sorted(set(config.flags) | set(flags or ()))
    seen = {r.context for r in rules}
    for name in names:
        for rule in config.flag_rule(name).statuses:
            if rule.context not in seen:
                seen.add(rule.context)
                rules.append(rule)
    return rules


def waits_for_builds(
    config: CodecovConfig, rule: StatusRule, flag_builds: Mapping[str, int] | None
) -> bool:
    """Whether ``rule`` is held back by a flag's ``after_n_builds``, as Codecov's
    ``required_builds``: a status filtered to flags is sent once the head has,
    for each of them, as many uploads of the flag as its ``after_n_builds``
    (carried-forward ones count). ``flag_builds``: uploads per flag, None when
    the head has none (Codecov then does not hold the status back)."""
    if not rule.flags or flag_builds is None:
        return False
    return any(flag_builds.get(f, 0) < config.flag_rule(f).after_n_builds for f in rule.flags)


def commit_statuses(
    config: CodecovConfig,
    comparison: Comparison,
    *,
    is_pull: bool,
    ci_failed: bool = False,
    flag_builds: Mapping[str, int] | None = None,
) -> list[CommitStatus]:
    """Every status the config asks for (skipping ``only_pulls`` ones off a pull
    request, ``if_not_found: ignore`` ones without a base, and those whose
    flags wait for ``after_n_builds``: :func:`waits_for_builds`).

    ``ci_failed``: the commit's other CI statuses failed; each status is then
    its ``if_ci_failed`` (``success`` when informational) with "CI failed.",
    as Codecov does under ``require_ci_to_pass``.
    """
    out = []
    for rule in status_rules(config, list(comparison.flags)):
        if rule.only_pulls and not is_pull:
            continue
        if waits_for_builds(config, rule, flag_builds):
            continue
        if ci_failed:
            failed = _final(rule, rule.if_ci_failed, CI_FAILED)
            if failed is not None:
                out.append(failed)
            continue
        scoped = comparison
        if rule.flags is not None or rule.paths is not None:
            scoped = subset(comparison, flags=rule.flags, paths=rule.paths)
        status = (project_status if rule.kind == "project" else patch_status)(rule, scoped, config)
        if status is not None:
            out.append(status)
    return out


def pending_statuses(
    config: CodecovConfig, *, is_pull: bool, flags: list[str] | None = None
) -> list[CommitStatus]:
    """The statuses while uploads of the commit are in flight: only those whose
    final status is sure to follow, so none is left pending for good. Not an
    ``if_not_found: ignore`` one (whether it is sent depends on the reports
    still to come), nor an ``only_pulls`` one unless the commit's pull
    request is known (``is_pull``: read from the provider already)."""
    return [
        CommitStatus(rule.context, "pending", PENDING_DESCRIPTION)
        for rule in status_rules(config, flags)
        if (is_pull or not rule.only_pulls) and rule.if_not_found != "ignore"
    ]


def _final(rule: StatusRule, state: str, description: str) -> CommitStatus | None:
    if state == "ignore":
        return None
    return CommitStatus(rule.context, "success" if rule.informational else state, description)


def project_status(
    rule: StatusRule, comparison: Comparison, config: CodecovConfig
) -> CommitStatus | None:
    head = coverage(comparison.head)
    if head is None:
        return _final(rule, rule.if_not_found, "No coverage information found on head")
    threshold = Decimal(str(rule.threshold))
    if rule.target is not None:
        target = Decimal(str(rule.target))
        state = "success" if head + threshold >= target else "failure"
        return _final(rule, state, f"{percent(config, head)}% (target {percent(config, target)}%)")
    if comparison.base is None or comparison.base_sha is None:
        return _final(rule, rule.if_not_found, NO_BASE)
    base = coverage(comparison.base)
    if base is None:
        return _final(rule, rule.if_not_found, "No coverage information found on base report")
    state = "success" if head + threshold >= base else "failure"
    description = (
        f"{percent(config, head)}% ({signed(config, head - base)}%) "
        f"compared to {comparison.base_sha[:7]}"
    )
    if state == "failure":
        adjusted = _adjusted_base(comparison)
        if adjusted is not None:
            adjusted -= threshold
            if adjusted.quantize(_STORED) - head < _ADJUSTED_SLACK:
                state = "success"
                description += (
                    f", passed because coverage increased by {_rise(config, head - adjusted)}% "
                    f"when compared to adjusted base ({percent(config, adjusted)}%)"
                )
    return _final(rule, state, description)


#: Codecov's stored precision, and how far under the head an adjusted base may
#: be and still pass (its ``quantized_base_adjusted_coverage - head < 0.005``).
_STORED = Decimal("0.00001")
_ADJUSTED_SLACK = Decimal("0.005")


def _rise(config: CodecovConfig, value: Decimal) -> str:
    """Codecov's ``max(0, round_number(...))``: ``0`` when it rounds to nothing or
    below, else the rounded rise without a sign (``3.33``)."""
    shown = rounded(config, value)
    return str(shown) if shown > 0 else "0"


def _adjusted_base(comparison: Comparison) -> Decimal | None:
    """The base's coverage without the lines the diff removed (``adjust_base``)."""
    base, removed = comparison.base, comparison.removed
    if base is None or removed is None or removed.lines == 0:
        return None
    return ratio(base.hits - removed.hits, base.lines - removed.lines)


def patch_status(
    rule: StatusRule, comparison: Comparison, config: CodecovConfig
) -> CommitStatus | None:
    patch = comparison.patch
    if patch is not None and patch.lines > 0:
        covered = coverage(patch)
        assert covered is not None
        if rule.target is not None:
            target: Decimal | None = Decimal(str(rule.target))
        else:
            target = coverage(comparison.base) if comparison.base is not None else None
        if target is None:
            return _final(rule, rule.if_not_found, NO_BASE)
        threshold = Decimal(str(rule.threshold))
        if covered >= target:
            state = "success"
            description = (
                f"{percent(config, covered)}% of diff hit (target {percent(config, target)}%)"
            )
        elif covered >= target - threshold:
            state = "success"
            description = (
                f"{percent(config, covered)}% of diff hit (within {percent(config, threshold)}% "
                f"threshold of {percent(config, target)}%)"
            )
        else:
            state = "failure"
            description = (
                f"{percent(config, covered)}% of diff hit (target {percent(config, target)}%)"
            )
        return _final(rule, state, description)
    if comparison.base_sha:
        description = (
            f"Coverage not affected when comparing "
            f"{comparison.base_sha[:7]}...{comparison.head_sha[:7]}"
        )
    else:
        description = "Coverage not affected"
    return _final(rule, "success", description)
