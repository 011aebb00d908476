"""Carryforward: a flag no upload of a commit names, carried from an ancestor (the rule, no I/O).

Codecov's rule: for each flag with ``carryforward: true`` in the commit's
``codecov.yml`` that no coverage upload of the commit names, take the flag's
coverage from the nearest first-parent ancestor (up to :data:`MAX_ANCESTORS`)
whose report is settled and has the flag, only the files of the flag's
``paths`` when it has some (:func:`pick_carried`). The carried coverage
counts in the commit's totals (:func:`with_carried`) until a coverage upload
of the flag replaces it; a test-results (JUnit) upload is not coverage and
replaces nothing.

The merge pass reads the database for it: ``app.merge.carryforward``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.coverage import codec
from app.coverage.columnar import Accumulator, Columns, Part
from app.pullrequests.config import CodecovConfig, path_matches

#: First parents walked looking for a flag's coverage (Codecov's limit).
MAX_ANCESTORS = 10


@dataclass(frozen=True, slots=True)
class CarriedFlag:
    flag: str
    from_sha: str
    report: bytes  # ``codec.dump_columns`` of the flag's coverage at ``from_sha``
    totals: dict[str, float]


def uses_carryforward(config: CodecovConfig) -> bool:
    """Whether any flag may be carried (else the ancestors are never read)."""
    return config.default_flag_rule.carryforward or any(
        rule.carryforward for rule in config.flags.values()
    )


def pick_carried(
    config: CodecovConfig,
    ancestors: Iterable[tuple[str, Iterable[tuple[str, bytes | None]]]],
    exclude: Iterable[str],
) -> list[CarriedFlag]:
    """For each carryforward flag not in ``exclude`` (the commit's own flags),
    its coverage at the first of ``ancestors`` (``(sha, its flag reports)``,
    nearest first, settled ones only) that has some within the flag's paths."""
    found: dict[str, CarriedFlag] = {}
    skip = set(exclude)
    for sha, flag_reports in ancestors:
        for flag, report in flag_reports:
            if flag in found or flag in skip or report is None:
                continue
            if not config.is_carryforward(flag):
                continue
            carried = within_paths(report, config.flag_rule(flag).paths)
            if carried is not None:
                found[flag] = CarriedFlag(flag, sha, *carried)
    return [found[flag] for flag in sorted(found)]


def within_paths(
    report: bytes, paths: tuple[str, ...] | None
) -> tuple[bytes, dict[str, float]] | None:
    """``report`` cut to the files of ``paths`` (all without), and its totals;
    None if nothing is left."""
    part = codec.load_part(report)
    acc = Accumulator()
    if paths:
        part = Part({p: cols for p, cols in part.files.items() if path_matches(paths, p)})
    acc.add(part)
    if not acc.files:
        return None
    return codec.dump_columns(acc.files), dict(acc.totals().to_dict())


def with_carried(own: Mapping[str, Columns], carried: Iterable[bytes | None]) -> Accumulator:
    """The commit's report: its own uploads merged, plus each carried flag's coverage."""
    full = Accumulator()
    full.add(Part(dict(own)))
    for blob in carried:
        if blob:
            full.add(codec.load_part(blob))
    return full
