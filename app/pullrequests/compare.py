"""The one comparison of a commit's report with its base.

The comment, the statuses, the pages and the webhook all read a
:class:`Comparison`; nothing else computes a change. Inputs are the
columnar reports the finisher stores (:class:`app.coverage.columnar.Part`,
``codec.load_part(row.report)``), so a 20,000-file report is compared
without a Python object per line.

Codecov's semantics:

- coverage is hits / lines in percent; a line is a hit, a miss (0 hits) or a
  partial (hit, some branch missed);
- patch coverage counts the added lines (head numbering) of added or
  modified files that have a coverage entry in the head: hits / (hits +
  misses + partials); no such line: ``None`` ("not affected");
- files the provider listed without a patch are ``not_measured``, never
  dropped silently;
- an indirect change is a line outside the diff whose state (hit, miss,
  partial, absent) differs between base (shifted by the diff) and head.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.coverage.columnar import Accumulator, Columns, Part
from app.coverage.model import Totals, summed
from app.pullrequests.comparison import (
    Comparison,
    FileComparison,
    FlagComparison,
    FlagInput,
    Inputs,
)
from app.pullrequests.config import CodecovConfig, path_matches
from app.pullrequests.diff import ADDED, REMOVED, Diff
from app.pullrequests.file_compare import (
    columns_totals,
    indirect_lines,
    part_totals,
    patch_lines,
    patch_totals,
    removed_totals,
    same_states,
)


def apply_fixes_and_ignore(config: CodecovConfig, part: Part) -> Part:
    """``part`` with its paths rewritten by ``fixes`` and ``ignore``d files left out
    (two files that one fix maps to the same path are merged)."""
    if not config.ignore and not config.fixes:
        return part
    files: dict[str, Columns] = {}
    for path, cols in part.files.items():
        fixed = config.fix_path(path) if config.fixes else path
        if config.ignore and path_matches(config.ignore, fixed):
            continue
        found = files.get(fixed)
        if found is None:
            files[fixed] = cols
        else:
            acc = Accumulator()
            acc.add(Part({fixed: found}))
            acc.add(Part({fixed: cols}))
            files[fixed] = acc.files[fixed]
    return Part(files)


def _configured(
    config: CodecovConfig,
    head: Part,
    base: Part | None,
    diff: Diff | None,
    head_flags: Mapping[str, FlagInput],
    base_flags: Mapping[str, FlagInput],
) -> tuple[Part, Part | None, Diff | None, dict[str, FlagInput], dict[str, FlagInput]]:
    def fix(part: Part) -> Part:
        return apply_fixes_and_ignore(config, part)

    def flags(given: Mapping[str, FlagInput]) -> dict[str, FlagInput]:
        return {name: FlagInput(fix(f.report), f.carried_from) for name, f in given.items()}

    if diff is not None and config.ignore:
        diff = Diff(
            files={p: fd for p, fd in diff.files.items() if not path_matches(config.ignore, p)},
            omitted=[p for p in diff.omitted if not path_matches(config.ignore, p)],
            truncated=diff.truncated,
        )
    return (
        fix(head),
        fix(base) if base is not None else None,
        diff,
        flags(head_flags),
        flags(base_flags),
    )


def compare(
    head: Part,
    base: Part | None,
    diff: Diff | None,
    *,
    head_sha: str,
    base_sha: str | None,
    head_flags: Mapping[str, FlagInput] | None = None,
    base_flags: Mapping[str, FlagInput] | None = None,
    paths: tuple[str, ...] | None = None,
    config: CodecovConfig | None = None,
) -> Comparison:
    """Compare ``head`` with ``base`` through ``diff`` (None: no diff known).

    ``paths`` restricts every number to the files those patterns match
    (a status's ``paths``). ``config`` applies the file's ``fixes`` (report
    paths rewritten) and ``ignore`` (files left out) to both sides and the
    diff, as Codecov applies them when it processes a report. Without a diff
    there is no patch and no indirect change (nothing says what the change
    touched).
    """
    head_flags = head_flags or {}
    base_flags = base_flags or {}
    if config is not None and (config.ignore or config.fixes):
        head, base, diff, head_flags, base_flags = _configured(
            config, head, base, diff, head_flags, base_flags
        )

    def keep_all(path: str) -> bool:
        return True

    keep = (lambda path: path_matches(paths, path)) if paths else keep_all
    head_files = head.files
    base_files = base.files if base is not None else {}
    diff_files = diff.files if diff is not None else {}
    omitted = set(diff.omitted) if diff is not None else set()
    files: dict[str, FileComparison] = {}
    head_total = base_total = Totals()
    patch_total: Totals | None = Totals() if diff is not None else None
    head_per_file: list[Totals] = []
    matched_base: set[str] = set()

    for path, cols in head_files.items():
        if paths and not keep(path):
            continue
        ht = columns_totals(cols)
        head_per_file.append(ht)
        fd = diff_files.get(path)
        if fd is not None and fd.status == ADDED:
            base_path = None
        else:
            base_path = fd.base_path if fd is not None else path
        bcols = base_files.get(base_path) if base_path is not None else None
        if bcols is not None and base_path is not None:
            matched_base.add(base_path)
        if base is None:
            if fd is None:
                continue
            bt = None
        else:
            bt = columns_totals(bcols) if bcols is not None else None
        patch: Totals | None = None
        misses: list[int] = []
        partials: list[int] = []
        if fd is not None and fd.status != REMOVED:
            patch, misses, partials = patch_lines(cols, fd.added)
            if patch_total is not None:
                patch_total = patch_total + patch
        indirect = 0
        if diff is not None and base is not None and path not in omitted:
            if bcols is None:
                if fd is None and not diff.truncated:
                    indirect = ht.lines  # appeared without the diff adding it
            elif fd is None or fd.status != ADDED:
                indirect = indirect_lines(cols, bcols, fd)
        if (
            fd is None
            and bcols is not None
            and bt == ht
            and path not in omitted
            and (indirect == 0 if diff is not None else same_states(cols, bcols))
        ):
            continue  # unchanged: not listed
        files[path] = FileComparison(
            path=path,
            base_path=base_path if bcols is not None else None,
            head=ht,
            base=bt,
            patch=patch,
            patch_misses=tuple(misses),
            patch_partials=tuple(partials),
            in_diff=fd is not None,
            indirect_lines=indirect,
            diff_status=fd.status if fd is not None else None,
        )
    head_total = summed(head_per_file)

    if base is not None:
        base_per_file: list[Totals] = []
        renamed_away = {fd.base_path for fd in diff_files.values() if fd.previous_path is not None}
        for path, bcols in base_files.items():
            if paths and not keep(path):
                continue
            bt = columns_totals(bcols)
            base_per_file.append(bt)
            if path in matched_base or path in renamed_away:
                continue
            fd = diff_files.get(path)
            indirect = 0
            if diff is not None and fd is None and path not in omitted and not diff.truncated:
                indirect = bt.lines  # disappeared without the diff removing it
            files[path] = FileComparison(
                path=path,
                base_path=path,
                head=None,
                base=bt,
                in_diff=fd is not None,
                indirect_lines=indirect,
                diff_status=fd.status if fd is not None else None,
            )
        base_total = summed(base_per_file)

    removed: Totals | None = None
    if diff is not None and base is not None:
        removed = Totals()
        for fd in diff_files.values():
            if fd.status == ADDED or (paths and not keep(fd.base_path)):
                continue
            bcols = base_files.get(fd.base_path)
            if bcols is not None:
                removed = removed + removed_totals(bcols, fd)

    flags: dict[str, FlagComparison] = {}
    for name in sorted(head_flags.keys() | base_flags.keys()):
        hf, bf = head_flags.get(name), base_flags.get(name)
        flags[name] = FlagComparison(
            name=name,
            head=part_totals(hf.report, paths) if hf is not None else None,
            base=part_totals(bf.report, paths) if bf is not None and base is not None else None,
            patch=(
                patch_totals(hf.report, diff, keep if paths else None)
                if hf is not None and diff is not None
                else None
            ),
            carried_from=hf.carried_from if hf is not None else None,
        )

    return Comparison(
        head_sha=head_sha,
        base_sha=base_sha,
        head=head_total,
        base=base_total if base is not None else None,
        patch=patch_total,
        files=files,
        flags=flags,
        not_measured=sorted(p for p in omitted if keep(p)),
        diff_truncated=bool(diff is not None and diff.truncated),
        removed=removed,
        inputs=Inputs(head, base, diff, head_flags, base_flags),
    )


def subset(
    comparison: Comparison,
    *,
    flags: Iterable[str] | None = None,
    paths: tuple[str, ...] | None = None,
) -> Comparison:
    """``comparison`` restricted to ``flags`` (their merged reports) and
    ``paths`` (a status's filters)."""
    if comparison.inputs is None:
        raise ValueError("this comparison keeps no inputs to restrict")
    inp = comparison.inputs
    head, base = inp.head, inp.base
    head_flags, base_flags = inp.head_flags, inp.base_flags
    if flags is not None:
        wanted = list(flags)
        head = _merged(inp.head_flags, wanted)
        base = _merged(inp.base_flags, wanted) if inp.base is not None else None
        head_flags = {f: v for f, v in inp.head_flags.items() if f in wanted}
        base_flags = {f: v for f, v in inp.base_flags.items() if f in wanted}
    return compare(
        head,
        base,
        inp.diff,
        head_sha=comparison.head_sha,
        base_sha=comparison.base_sha,
        head_flags=head_flags,
        base_flags=base_flags,
        paths=paths,
    )


def _merged(flags: Mapping[str, FlagInput], wanted: list[str]) -> Part:
    acc = Accumulator()
    for name in wanted:
        found = flags.get(name)
        if found is not None:
            acc.add(found.report)
    return Part(acc.files)
