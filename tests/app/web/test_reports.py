"""The file page's columns give the model's lines, order and totals."""

from __future__ import annotations

import random

from app.coverage import Branches, FileCoverage, Report, codec
from app.coverage.codec import file_columns
from app.coverage.model import file_totals
from app.web.reports import FileLines


def test_file_lines_from_the_serialised_columns_match_the_model() -> None:
    rng = random.Random(7)
    for case in range(30):
        numbers = rng.sample(range(1, 5000), rng.randint(0, 400))  # in no particular order
        hits = {n: rng.choice((0, 0, 1, 3)) for n in numbers}
        branches = {
            n: Branches(rng.randint(0, 2), 2) for n in rng.sample(numbers, len(numbers) // 4)
        }
        before = FileCoverage({1: 1, 9: 0}, {1: Branches(1, 2)})  # read past, not decoded
        report = Report({"other.py": before, "a.py": FileCoverage(hits, branches)})
        columns = file_columns(codec.dump(report), "a.py")
        assert columns is not None and file_columns(codec.dump(report), "none.py") is None

        found = FileLines.of(*columns)

        assert list(found.lines) == sorted(hits), case
        assert list(found.hits) == [hits[n] for n in sorted(hits)], case
        assert found.totals == file_totals(report.files["a.py"]), case
        assert {n: (b.covered, b.total) for n, b in found.branches.items()} == {
            n: (b.covered, b.total) for n, b in branches.items()
        }
