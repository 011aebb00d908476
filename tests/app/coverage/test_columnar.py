"""The columnar merge gives the model's report, whatever the order; the merged
totals count branch lines as the model does."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.coverage import Branches, FileCoverage, Report, codec, columnar, parse_report
from app.coverage.columnar import Accumulator, Part
from app.coverage.model import file_totals
from app.coverage.serial import dump_v3
from tests.support.coverage_strategies import PROPERTY_SETTINGS, reports
from tests.support.paths import SHARED
from tests.support.services import service_missing

pytestmark = pytest.mark.timeout(300)


CORPUS = SHARED / "coverage-corpus"


def model_merge(parts: list[Report]) -> Report:
    out = Report()
    for part in parts:
        out.merge(part)
    return out


def columnar_merge(blobs: list[bytes]) -> Accumulator:
    out = Accumulator()
    for blob in blobs:
        out.add(codec.load_part(blob))
    return out


def corpus_reports() -> list[Report]:
    manifest = CORPUS / "manifest.json"
    if not manifest.exists():
        service_missing("the public coverage corpus", f"{manifest} does not exist")
    found = []
    for case in json.loads(manifest.read_text())["cases"]:
        try:
            found.append(parse_report((CORPUS / case["file"]).read_bytes()))
        except Exception:  # cases the parsers refuse are the corpus test's business
            continue
    return found


def test_merging_the_public_corpus_column_by_column_gives_the_models_report() -> None:
    corpus = corpus_reports()
    # All of it into one report (different paths and formats), and every report
    # merged with itself and its neighbour (same paths: the vectorised case).
    groups = [corpus, *([a, a, b] for a, b in itertools.pairwise(corpus))]
    for group in groups:
        expected = model_merge(group)
        for blobs in ([codec.dump(r) for r in group], [dump_v3(r) for r in group]):
            merged = columnar_merge(blobs)
            assert merged.to_report() == expected
            assert merged.totals() == expected.totals()
            assert codec.load(codec.dump_columns(merged.files)) == expected


@PROPERTY_SETTINGS
@given(st.lists(reports(), min_size=1, max_size=4))
def test_the_columnar_merge_equals_the_model_merge_in_any_order(parts: list[Report]) -> None:
    expected = model_merge(parts)
    merged = columnar_merge([codec.dump(p) for p in parts])
    assert merged.to_report() == expected
    assert merged.totals() == expected.totals()
    backwards = columnar_merge([codec.dump(p) for p in reversed(parts)])
    assert backwards.to_report() == expected


@PROPERTY_SETTINGS
@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 2)), unique_by=lambda t: t[0]),
    st.lists(st.tuples(st.integers(1, 80), st.booleans()), unique_by=lambda t: t[0]),
)
@example(  # every branch line out of order: the lines are read through a dict
    [(ln, ln % 3) for ln in range(1, 41)], [(ln, ln % 4 == 0) for ln in range(45, 0, -1)]
)
def test_a_files_partial_lines_are_counted_whatever_the_order_of_its_lines(
    lines: list[tuple[int, int]], branch_lines: list[tuple[int, bool]]
) -> None:
    # Lines and branch lines in any order, branch lines on uninstrumented
    # lines too: enough out of order to read the file through a dict.
    fc = FileCoverage(dict(lines), {ln: Branches(2 if full else 1, 2) for ln, full in branch_lines})
    expected = file_totals(fc)
    columns = (list(fc.lines), list(fc.lines.values()), dict(fc.branches))
    counted = columnar.line_counts(columns)
    assert counted == (expected.lines, expected.misses, expected.partials)
    assert columnar.branch_lines(columns) == expected.branches


def test_the_merges_totals_are_the_reports_own_branch_lines_included() -> None:
    report = Report(
        {
            "pkg/__init__.py": FileCoverage({}),
            "pkg/a.py": FileCoverage({1: 1, 2: 1, 3: 0}, {2: Branches(1, 2), 7: Branches(0, 2)}),
        }
    )
    acc = columnar.Accumulator()
    acc.add(Part.from_report(report))
    assert acc.totals() == report.totals()
    assert (acc.totals().files, acc.totals().branches) == (2, 1)


def test_a_part_merged_into_two_reports_is_left_unchanged() -> None:
    a = Report(
        {
            "f.py": FileCoverage(
                {1: 1, 2: 0}, {1: Branches.from_ids(frozenset(), frozenset({"lcov:0,0"}))}
            )
        }
    )
    b = Report(
        {
            "f.py": FileCoverage(
                {1: 2, 2: 3},
                {1: Branches.from_ids(frozenset({"lcov:0,0"}), frozenset({"lcov:0,0"}))},
            )
        }
    )
    part = codec.load_part(codec.dump(b))
    first, second = Accumulator(), Accumulator()
    first.add(codec.load_part(codec.dump(a)))
    first.add(part)
    second.add(part)
    second.add(part)
    assert part.to_report() == b
    assert first.to_report() == model_merge([a, b])
    assert second.to_report() == model_merge([b, b])
