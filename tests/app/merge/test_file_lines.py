"""Each file's lines stored in windows by the merge (``app.merge.file_lines``): the
file page's windows read from them equal those decoded from the report, on
fakeredis + SQLite and on real Redis + PostgreSQL; only the current
version's rows are kept."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from app.coverage import Branches, codec
from app.coverage.codec import file_columns
from app.coverage.columnar import Columns
from app.db.models import CommitReport, ReportFileLines
from app.merge import file_lines as file_lines_module
from app.merge.file_lines import (
    Window,
    decode_window,
    encode_window,
    path_key,
    read_window,
    store_file_lines,
    window_rows,
)
from app.web import reports as reports_module
from app.web.reports import FileLines, ReportCache
from tests.app.web.conftest import lcov
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.timeout(120)

SHA = "f" * 40


def random_lcov(rng: random.Random, path: str, lines: int) -> bytes:
    """Most lines of ``path`` (a different subset per upload, so the merge
    appends new lines after the merged ones: out of order), some branch lines."""
    hits = {ln: rng.choice((0, 0, 1, 5)) for ln in range(1, lines + 1) if rng.random() < 0.8}
    branches = {ln: (rng.randint(0, 2), 2) for ln in hits if rng.random() < 0.1}
    return lcov(path, hits, branches).encode()


def merge(pipeline: Pipeline, reports: list[tuple[str, bytes]]) -> int:
    accepted = pipeline.upload(reports, sha=SHA)
    for upload_id in accepted.upload_ids:
        pipeline.process(upload_id)
    pipeline.finish(accepted.repoid, accepted.commitid)
    return accepted.commitid


def decoded(pipeline: Pipeline, commit_id: int, path: str) -> FileLines | None:
    """The file as the page decodes it from the report (versions without rows)."""
    with pipeline.services.sessions() as session:
        blob = session.scalar(
            sa.select(CommitReport.report).where(CommitReport.commit_id == commit_id)
        )
    assert blob is not None
    columns = file_columns(blob, path)
    return None if columns is None else FileLines.of(*columns)


def page_window(pipeline: Pipeline, commit_id: int, path: str, start: int, limit: int) -> Window:
    """As the page reads it, on a new cache."""
    with pipeline.services.sessions() as session:
        window = ReportCache(pipeline.services.limits).file_window(
            session, commit_id, path, start, limit
        )
    assert window is not None
    return window


def as_tuple(w: Window) -> tuple[object, ...]:
    return (
        list(w.lines),
        list(w.hits),
        dict(w.branches),
        w.instrumented_lines,
        w.previous_from,
        w.next_from,
        w.totals,
    )


def test_windows_read_from_the_stored_rows_equal_those_decoded_from_the_report(
    pipeline: Pipeline,
) -> None:
    rng = random.Random(11)
    reports = [
        (f"u{i}.info", random_lcov(rng, "big.py", 1700) + random_lcov(rng, "small.py", 30))
        for i in range(3)
    ]
    commit_id = merge(pipeline, reports)
    with pipeline.services.sessions() as session:
        row = session.scalar(sa.select(CommitReport).where(CommitReport.commit_id == commit_id))
        assert row is not None and row.lines_version == row.version == 1
        stored = session.execute(
            sa.select(ReportFileLines.path_key, sa.func.count()).group_by(ReportFileLines.path_key)
        ).all()
    windows = {
        path: n for key, n in stored for path in ("big.py", "small.py") if key == path_key(path)
    }
    assert windows == {"big.py": 4, "small.py": 1} and len(stored) == 2  # 500 lines a window

    for path in ("big.py", "small.py"):
        whole = decoded(pipeline, commit_id, path)
        assert whole is not None
        starts = [1, 0, 10**12, *rng.sample(range(1, 1800), 25), *whole.lines[::500]]
        with pipeline.services.sessions() as session:
            cache = ReportCache(pipeline.services.limits)
            for start in starts:
                for limit in (500, 1, 37, 900):
                    got = cache.file_window(session, commit_id, path, start, limit)
                    assert got is not None
                    expected = whole.window(start, limit)
                    assert as_tuple(got) == as_tuple(expected), (path, start, limit)
            assert cache.file_window(session, commit_id, "none.py", 1, 500) is None


def test_a_new_version_replaces_the_stored_rows_of_the_one_before(pipeline: Pipeline) -> None:
    rng = random.Random(12)
    commit_id = merge(pipeline, [("a.info", random_lcov(rng, "a.py", 1200))])
    merge(pipeline, [("b.info", random_lcov(rng, "a.py", 1300) + random_lcov(rng, "b.py", 9))])
    with pipeline.services.sessions() as session:
        versions = session.execute(
            sa.select(ReportFileLines.version, ReportFileLines.path_key).distinct()
        ).all()
        version = session.scalar(
            sa.select(CommitReport.version).where(CommitReport.commit_id == commit_id)
        )
    assert version == 2 and sorted(versions) == sorted(
        [(2, path_key("a.py")), (2, path_key("b.py"))]
    )
    whole = decoded(pipeline, commit_id, "a.py")
    assert whole is not None and len(whole.lines) > 1000
    got = page_window(pipeline, commit_id, "a.py", 600, 500)
    assert as_tuple(got) == as_tuple(whole.window(600, 500))


def test_a_trickle_re_encodes_only_the_windows_of_the_files_its_next_upload_touched(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(13)
    first = random_lcov(rng, "a.py", 1200) + random_lcov(rng, "b.py", 700)
    commit_id = merge(pipeline, [("a.info", first)])  # settles: version 1, a burst
    merge(pipeline, [("b.info", random_lcov(rng, "b.py", 700))])  # settles again: a trickle
    encoded: list[int] = []
    encode = file_lines_module.encode_window
    monkeypatch.setattr(
        file_lines_module,
        "encode_window",
        lambda lines, hits, branches: encoded.append(len(lines)) or encode(lines, hits, branches),
    )

    merge(pipeline, [("c.info", random_lcov(rng, "b.py", 700))])  # version 3 touches b.py only

    touched = decoded(pipeline, commit_id, "b.py")
    assert touched is not None and sum(encoded) == len(touched.lines)  # a.py's reused
    for path in ("a.py", "b.py"):
        whole = decoded(pipeline, commit_id, path)
        assert whole is not None
        for start in (1, 250, 700, 1100):
            got = page_window(pipeline, commit_id, path, start, 500)
            assert as_tuple(got) == as_tuple(whole.window(start, 500)), (path, start)
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.min(ReportFileLines.version))) == 3


def test_windows_are_reused_for_equal_columns_decoded_anew_and_hold_the_new_ones() -> None:
    # Another process merged the version before: this one decoded the report,
    # so every file's columns are new objects with the same lines.
    columns: Columns = ([1, 2, 3], [1, 0, 4], {2: Branches(1, 2)})
    decoded_again: Columns = ([1, 2, 3], [1, 0, 4], {2: Branches(1, 2)})
    other_branch: Columns = ([1, 2, 3], [1, 0, 4], {2: Branches(2, 2)})
    encoded: dict[str, tuple[Columns, list[tuple[object, ...]]]] = {}
    first = window_rows(1, 1, {"a.py": columns}, encoded=encoded)
    calls: list[int] = []
    real = file_lines_module.encode_window

    def counting(*args: Any) -> bytes:
        calls.append(1)
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(file_lines_module, "encode_window", counting)
        again = window_rows(1, 2, {"a.py": decoded_again}, encoded=encoded)
        assert not calls and encoded["a.py"][0] is decoded_again
        changed = window_rows(1, 3, {"a.py": other_branch}, encoded=encoded)
        assert calls == [1]

    assert [row[2:] for row in again] == [row[2:] for row in first]
    assert changed == window_rows(1, 3, {"a.py": other_branch})
    assert changed[0][5] != first[0][5]


def test_windows_are_encoded_anew_for_columns_whose_lines_changed() -> None:
    columns: Columns = ([1, 2, 3], [1, 0, 4], {})
    same_numbers: Columns = ([1, 2, 3], [1, 0, 5], {})
    encoded: dict[str, tuple[Columns, list[tuple[object, ...]]]] = {}
    first = window_rows(1, 1, {"a.py": columns, "gone.py": columns}, encoded=encoded)

    again = window_rows(1, 2, {"a.py": columns}, encoded=encoded)
    changed = window_rows(1, 3, {"a.py": same_numbers}, encoded=encoded)

    assert [row[2:] for row in again] == [row[2:] for row in first[:1]]
    assert [row[1] for row in again] == [2] and set(encoded) == {"a.py"}
    assert changed == window_rows(1, 3, {"a.py": same_numbers})
    assert changed[0][5] != first[0][5]  # the hits changed: not the stored window


def test_a_page_that_read_a_version_a_merge_then_replaced_reads_the_new_one(
    real_pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL only: a SQLite session holds the database's write lock from
    its first statement, so no merge commits while a page reads."""
    pipeline = real_pipeline
    rng = random.Random(13)
    commit_id = merge(pipeline, [("a.info", random_lcov(rng, "a.py", 700))])
    late = [("b.info", random_lcov(rng, "a.py", 900))]
    real_read: Callable[..., Window | None] = read_window
    asked: list[int] = []

    def merged_meanwhile(session: object, cid: int, version: int, *args: object) -> Window | None:
        if not asked:
            merge(pipeline, late)  # its own transaction, committed before the rows are read
        asked.append(version)
        return real_read(session, cid, version, *args)

    monkeypatch.setattr(reports_module, "read_window", merged_meanwhile)
    got = page_window(pipeline, commit_id, "a.py", 1, 500)
    assert asked == [1, 2], "version 1's rows were gone; the page read version 2's"
    whole = decoded(pipeline, commit_id, "a.py")
    assert whole is not None and as_tuple(got) == as_tuple(whole.window(1, 500))


def random_columns(rng: random.Random) -> Columns:
    numbers = rng.sample(range(1, 400), rng.randint(0, 120))  # in no particular order
    hits = [rng.choice((0, 0, 1, 3)) for _ in numbers]
    branches = {n: Branches(rng.randint(0, 2), 2) for n in rng.sample(numbers, len(numbers) // 4)}
    return numbers, hits, branches


def test_small_windows_give_every_window_a_whole_file_gives(pipeline: Pipeline) -> None:
    """Windows of 7 lines read for windows of 1 to 30 lines from every start:
    the neighbours' first lines come from the right stored rows."""
    rng = random.Random(14)
    commit_id = merge(pipeline, [("a.info", lcov("x.py", {1: 1}).encode())])
    files = {f"f{i}.py": random_columns(rng) for i in range(12)}
    files["empty.py"] = ([], [], {})
    with pipeline.services.sessions.begin() as session:
        row = session.scalar(sa.select(CommitReport).where(CommitReport.commit_id == commit_id))
        assert row is not None
        row.version += 1
        store_file_lines(session, row, files, size=7)
        row.report = codec.dump_columns(files)
    blob = codec.dump_columns(files)
    with pipeline.services.sessions() as session:
        for path, (numbers, _, _) in files.items():
            whole = FileLines.of(*(codec.file_columns(blob, path) or ()))
            for start in [0, 1, 401, *rng.sample(range(1, 400), 10), *numbers[:3]]:
                for limit in (1, 6, 7, 8, 30):
                    got = read_window(session, commit_id, 2, path, start, limit, size=7)
                    assert got is not None
                    expected = whole.window(start, limit)
                    assert as_tuple(got) == as_tuple(expected), (path, start, limit)


def test_a_stored_window_survives_its_stored_form_and_anything_else_is_refused() -> None:
    data = encode_window([3, 5, 9], [1, 0, 2], [(3, Branches(1, 2))])
    lines, hits, branches = decode_window(data)
    assert (list(lines), list(hits), branches) == ([3, 5, 9], [1, 0, 2], {3: (1, 2)})
    for bad in (b"nope", data[:-3], encode_window([1], [1], [])[:-1] + b"x"):
        with pytest.raises(ValueError, match="corrupt stored file lines"):
            decode_window(bad)
    with pytest.raises(OverflowError):
        encode_window([1], [2**64], [])


def test_a_version_with_a_count_past_64_bits_stores_no_windows_and_keeps_none_older(
    pipeline: Pipeline,
) -> None:
    """Its page reads the report (written as version 3, JSON), as for a
    version merged before the windows existed."""
    commit_id = merge(pipeline, [("a.info", lcov("x.py", {1: 1, 2: 0}).encode())])
    files: dict[str, Columns] = {"x.py": ([1, 2], [2**64, 0], {})}
    with pipeline.services.sessions.begin() as session:
        row = session.scalar(sa.select(CommitReport).where(CommitReport.commit_id == commit_id))
        assert row is not None and row.lines_version == 1
        row.version += 1
        store_file_lines(session, row, files)
        row.report = codec.dump_columns(files)
        assert row.lines_version is None
    with pipeline.services.sessions() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(ReportFileLines)) == 0
        version, lines_version = session.execute(
            sa.select(CommitReport.version, CommitReport.lines_version)
        ).one()
    assert (version, lines_version) == (2, None)


def test_paths_of_any_length_or_with_a_nul_are_stored_and_read(pipeline: Pipeline) -> None:
    """The key is a digest: a 5,000-character path does not overflow
    PostgreSQL's B-tree entry, and a NUL never reaches a text column."""
    commit_id = merge(pipeline, [("a.info", lcov("x.py", {1: 1}).encode())])
    files: dict[str, Columns] = {
        "d/" * 2500 + "a.py": ([1, 2], [1, 0], {}),
        "b\x00.py": ([3], [4], {}),
    }
    with pipeline.services.sessions.begin() as session:
        row = session.scalar(sa.select(CommitReport).where(CommitReport.commit_id == commit_id))
        assert row is not None
        row.version += 1
        store_file_lines(session, row, files)
    with pipeline.services.sessions() as session:
        for path, (numbers, hits, _) in files.items():
            got = read_window(session, commit_id, 2, path, 1, 500)
            assert got is not None and (list(got.lines), list(got.hits)) == (numbers, hits)
