"""gcov's text output: the ``*.gcov`` files ``gcov -pb`` writes (and Codecov's
uploaders upload, one per source file).

Shape (``count:line:source``, then the line's branch and call records)::

            -:    0:Source:src/calc.c
    function sign called 1 returned 100% blocks executed 50%
            1:   12:    if (x > 0)
    branch  0 taken 100% (fallthrough)
    branch  1 taken 0%
        #####:   14:    else if (x < 0)
    branch  0 never executed
           1*:   15:static inline int twice(int x) { ... }
            -:   17:}

The rules (Codecov's ``services/report/languages/gcov.py``, and gcov's own
meaning where Codecov's differs; ``docs/formats.md`` lists them):

- ``0:Source:<path>`` opens a file (several in one report are read one after
  another); the other ``0:`` header records are not lines.
- ``-`` is not a line; ``#####`` and ``=====`` (unexecuted, only an
  exception path reaches it) are misses; ``N`` is N hits and ``N*`` (gcov's
  mark of a line with a block that did not run) N hits too.
- ``branch N taken C`` / ``taken P%`` is a branch of the line above it,
  covered when C or P is not 0; ``never executed`` is a missed branch.
  Branches are named by their position among the line's branches
  (``gcov:<n>``), as the gcov JSON parser names them, so the two merge.
- ``function``, ``call`` and ``unconditional`` records and ``-a``'s
  ``N-block`` records add nothing. A template's per-instance listings
  (between ``------------------`` rules, after the instance's name) repeat
  the summed lines above them, so their counts are not read again; their
  branch records are the only ones of those lines, and are all the line's
  (numbered on from one instance to the next, as in gcov's JSON).
- ``LCOV_EXCL_LINE`` excludes its line, ``LCOV_EXCL_START`` ...
  ``LCOV_EXCL_STOP`` (or ``_END``) the lines between, as Codecov and lcov do.
- A record that is none of these (an unreadable count, a line number out of
  range, a torn branch record) is skipped and named on the upload
  (``app.coverage.skipped``); a report whose every record was skipped is
  refused.
"""

from __future__ import annotations

from app.coverage.formats import line_chunks
from app.coverage.limits import ParseLimits
from app.coverage.model import FileByIds, FileSink, Report
from app.coverage.paths import PathNormaliser
from app.errors import MalformedReport

FMT = "gcov text"
CHUNK = 1 << 20
_IDS = tuple(f"gcov:{n}" for n in range(64))  # the ids of a line's first branches
_MISSES = (b"#####", b"=====")
_NOT_LINES = (b"call", b"func", b"unco")  # call, function, unconditional
_RULE = b"------------------"
_EXCL = b"LCOV_EXCL_"


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report = Report()
    parse_into(raw, report, limits, roots)
    return report


def parse_into(
    raw: bytes, sink: FileSink, limits: ParseLimits, roots: tuple[str, ...] = ()
) -> None:
    """Hand each source file's listing to ``sink`` as the next one opens."""
    normalise = PathNormaliser(roots)
    max_ln, max_records = limits.max_line_number, limits.max_lines
    skipped = sink.skipped
    current: FileByIds | None = None
    lines: dict[int, int] = {}
    records = kept = 0
    at = 0  # the line the branch records below belong to (0: none)
    branch_no = 0
    after_rule = in_instance = excluding = False
    lineno = 0
    for chunk in line_chunks(raw, CHUNK):
        for line in chunk.split(b"\n"):
            lineno += 1
            if after_rule:  # a template instance's listing starts with its name
                after_rule = False
                in_instance = _is_instance_name(line)
                if in_instance:
                    continue
            parts = line.split(b":", 2)
            if len(parts) == 3:
                try:  # the hot path: "        5:   12:source"
                    ln = int(parts[1])
                    hits = int(parts[0])
                    if hits < 0:
                        hits = _BAD
                except ValueError:
                    ln, hits = _odd_count(parts)
                if in_instance:  # its lines are summed above; its branches are the line's too
                    at = ln if 0 < ln <= max_ln and hits >= 0 and ln in lines else 0
                    branch_no = len(current.all_ids.get(at, ())) if at else 0  # type: ignore[union-attr]
                    continue
                if ln > 0 and hits >= 0:
                    if ln > max_ln:
                        skipped.line(line, lineno)
                        at = 0
                        continue
                    if excluding or _EXCL in parts[2]:
                        excluding, at = _exclusion(parts[2], excluding), 0
                        continue
                    if current is None:
                        raise MalformedReport(FMT, "a line before any 0:Source:", line=lineno)
                    records += 1
                    if records > max_records:
                        raise limits.too_many_lines(FMT)
                    lines[ln] = lines.get(ln, 0) + hits
                    at, branch_no = ln, 0
                    continue
                at = 0
                if hits == _NOT_A_LINE:
                    if ln == 0 and parts[2][:7] == b"Source:":
                        if current is not None:
                            kept += _flush(sink, current, limits)
                        path = parts[2][7:].decode("utf-8", "replace").strip()
                        if not path:
                            raise MalformedReport(FMT, "0:Source: without a path", line=lineno)
                        current = FileByIds(normalise(path))
                        lines = current.lines
                        excluding = False
                    elif excluding or _EXCL in parts[2]:
                        excluding = _exclusion(parts[2], excluding)
                    continue
                if hits != _BLOCK and ln != 0:
                    skipped.line(line, lineno)
                continue
            head = line[:4]
            if head == b"bran":
                if at:
                    taken = _taken(line)
                    if taken is None:
                        skipped.line(line, lineno)
                        continue
                    ident = _IDS[branch_no] if branch_no < len(_IDS) else f"gcov:{branch_no}"
                    branch_no += 1
                    current.all_ids.setdefault(at, set()).add(ident)  # type: ignore[union-attr]
                    if taken:
                        current.covered.setdefault(at, set()).add(ident)  # type: ignore[union-attr]
                continue
            if head in _NOT_LINES:
                continue
            stripped = line.strip()
            if stripped.startswith(_RULE):
                after_rule, in_instance, at = True, False, 0
                continue
            if in_instance or not stripped:
                continue
            skipped.line(line, lineno)
    if current is None:
        raise MalformedReport(FMT, "the report has no 0:Source: record")
    kept += _flush(sink, current, limits)
    if not kept and skipped:
        raise MalformedReport(FMT, f"no record could be read; {skipped.summary()}")


_NOT_A_LINE = -1
_BLOCK = -2
_BAD = -3


def _odd_count(parts: list[bytes]) -> tuple[int, int]:
    """The line number and hits of a count record that is not two plain
    integers: ``#####`` / ``=====`` (0), ``N*`` (N), ``-`` (not a line),
    ``-a``'s ``12-block 0`` (a block record); ``_BAD`` hits if unreadable."""
    number = parts[1].strip()
    try:
        ln = int(number)
    except ValueError:
        return 0, _BLOCK if b"-block" in number else _BAD
    hit = parts[0].strip()
    if hit == b"-":
        return ln, _NOT_A_LINE
    if hit in _MISSES:
        return ln, 0
    if hit.endswith(b"*"):
        try:
            return ln, max(int(hit[:-1]), 0)
        except ValueError:
            return ln, _BAD
    return ln, _BAD


def _is_instance_name(line: bytes) -> bool:
    """Whether ``line`` (after a ``------`` rule) names a template instance
    (``_Z1fIiET_S0_:``, ``int f<int>(int):``) rather than being a count record."""
    stripped = line.strip()
    if not stripped.endswith(b":"):
        return False
    parts = stripped.split(b":", 2)
    return len(parts) < 3 or not parts[1].strip().isdigit()


def _taken(line: bytes) -> bool | None:
    """Whether ``branch N taken C`` / ``taken P%`` was taken; None if unreadable."""
    at = line.find(b" taken ")
    if at < 0:
        return False if line.rstrip().endswith(b"never executed") else None
    value = line[at + 7 :].split(None, 1)
    if not value or not value[0][:1].isdigit():
        return None
    return value[0].strip(b"0.%") != b""


def _exclusion(source: bytes, excluding: bool) -> bool:
    """Whether lines after this one are excluded (LCOV_EXCL_START ... _STOP / _END)."""
    if b"LCOV_EXCL_STOP" in source or b"LCOV_EXCL_END" in source:
        return False
    return excluding or b"LCOV_EXCL_START" in source


def _flush(sink: FileSink, current: FileByIds, limits: ParseLimits) -> int:
    if current.path not in sink and sink.file_count() >= limits.max_files:
        raise limits.too_many_files(FMT)
    sink.add_file(current.path, current.coverage())
    return len(current.lines)
