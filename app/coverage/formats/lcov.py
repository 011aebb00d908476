"""LCOV tracefiles (geninfo, lcov 1.x / 2.x, coverage.py, Istanbul, c8, grcov, ...).

One record per line; ``SF:`` opens a file section and ``end_of_record``
closes it. ``DA:line,hits[,checksum]`` gives line hits;
``BRDA:line,block,branch,taken`` gives identity-known branches (``taken`` is
``-`` when the block never ran); ``FN`` / ``FNDA`` / ``FNL`` / ``FNA``
function records and the ``LF/LH/BRF/BRH/FNF/FNH`` summaries are checked
for shape but add nothing to line coverage (every function's lines have DA
records of their own). The same file in several sections (several test
names) adds up, as ``lcov -a`` does.

The report is read in chunks of whole lines straight from the bytes, so no
decoded copy of the whole report is ever made, and each file section is
handed on as it ends (``parse_into``): into the intermediate's writer, a
report of a million lines is never held as Python objects at once.
"""

from __future__ import annotations

from app.coverage.formats import line_chunks
from app.coverage.limits import ParseLimits
from app.coverage.model import Branches, FileCoverage, FileSink, Report
from app.coverage.paths import PathNormaliser
from app.errors import MalformedReport, ReportError

FMT = "LCOV"
CHUNK = 1 << 20
_SUMMARY = {b"LF", b"LH", b"BRF", b"BRH", b"FNF", b"FNH"}


class _Section:
    """The file section being read: its lines, and branch ids per line."""

    __slots__ = ("all_ids", "covered_ids", "lines", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: dict[int, int] = {}
        self.all_ids: dict[int, set[str]] = {}
        self.covered_ids: dict[int, set[str]] = {}

    def coverage(self, shared: dict[frozenset[str], frozenset[str]]) -> FileCoverage:
        """The section as a FileCoverage; equal id sets become one shared object
        (most branch lines have the same few ids), saving memory and merge work."""
        branches = {}
        for ln, ids in self.all_ids.items():
            all_ids = frozenset(ids)
            all_ids = shared.setdefault(all_ids, all_ids)
            covered = frozenset(self.covered_ids.get(ln, ()))
            covered = shared.setdefault(covered, covered)
            branches[ln] = Branches.of_one_scheme(covered, all_ids)
        return FileCoverage(self.lines, branches)


def _fail(reason: str, lineno: int) -> MalformedReport:
    return MalformedReport(FMT, reason, line=lineno)


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report = Report()
    parse_into(raw, report, limits, roots)
    return report


def parse_into(
    raw: bytes, sink: FileSink, limits: ParseLimits, roots: tuple[str, ...] = ()
) -> None:
    """Hand each file section to ``sink`` as it ends (a path in several sections
    is added once per section; the sink merges them)."""
    try:
        _parse(raw, sink, limits, roots)
    except ReportError:
        raise
    except (ValueError, UnicodeError, TypeError, RecursionError) as exc:  # pragma: no cover
        raise MalformedReport(FMT, f"unreadable report: {exc}") from None


def _parse(raw: bytes, sink: FileSink, limits: ParseLimits, roots: tuple[str, ...]) -> None:
    sections = 0
    normalise = PathNormaliser(roots)
    max_ln = limits.max_line_number
    max_records = limits.max_lines
    records = 0
    odd = _Odd()
    skipped = sink.skipped
    shared: dict[frozenset[str], frozenset[str]] = {}
    section: _Section | None = None
    lines: dict[int, int] = {}
    lineno = 0
    for chunk in line_chunks(raw, CHUNK):
        for line in chunk.split(b"\n"):
            lineno += 1
            if line[:3] == b"DA:":
                if section is None:
                    raise _fail("DA record outside a file section (no SF: before it)", lineno)
                try:
                    fields = line[3:].split(b",")  # line, hits[, checksum]
                    ln = int(fields[0])
                    hits = int(fields[1])
                except (ValueError, IndexError):
                    ln, hits = _odd_da(line, lineno, odd)
                    if ln < 0:
                        skipped.line(line, lineno)
                        continue
                if ln < 1 or ln > max_ln or hits < 0:
                    if ln < 1 or ln > max_ln:
                        if ln == 0:
                            continue  # line 0: synthetic code with no source line
                        skipped.line(line, lineno)
                        continue
                    odd.negative(lineno)
                    hits = 0
                records += 1
                if records > max_records:
                    raise limits.too_many_lines(FMT)
                lines[ln] = lines.get(ln, 0) + hits
                continue
            line = line.rstrip(b"\r")
            if not line.strip():
                continue
            if line == b"end_of_record":
                if section is None:
                    raise _fail("end_of_record without a file section", lineno)
                _flush(sink, section, limits, shared)
                sections += 1
                section = None
                continue
            key, sep, value = line.partition(b":")
            if not sep or not key.isupper() or not key.isalpha():
                raise _fail(f"{_show(line)} is not an LCOV record", lineno)
            if key == b"SF":
                if section is not None:
                    raise _fail(f"SF record inside the section of {section.path!r}", lineno)
                try:
                    path = value.decode("utf-8").strip()
                except UnicodeDecodeError:
                    raise _fail("SF path is not UTF-8", lineno) from None
                if not path:
                    raise _fail("SF record with an empty path", lineno)
                section = _Section(normalise(path))
                lines = section.lines
            elif key == b"BRDA":
                if section is None:
                    raise _fail("BRDA record outside a file section", lineno)
                if not _branch(section, value, lineno, max_ln, odd):
                    skipped.line(line, lineno)
            elif (key == b"FNDA" or key in _SUMMARY) and not _check_counts(key, value, lineno, odd):
                skipped.line(line, lineno)
            # other keys (TN, VER, FN, FNL, FNA and future ones) carry no line coverage
    if section is not None:
        raise _fail(f"the section of {section.path!r} has no end_of_record (truncated?)", lineno)
    if not sections:
        raise MalformedReport(FMT, "the report has no file sections (SF: ... end_of_record)")
    if not records and skipped:
        raise MalformedReport(FMT, f"no record could be read; {skipped.summary()}")
    sink.warnings.extend(odd.warnings())


class _Odd:
    """What was forgiven, for the report's warnings: counts and first lines."""

    def __init__(self) -> None:
        self.negatives = self.decimals = 0
        self.first_negative = self.first_decimal = 0

    def negative(self, lineno: int) -> None:
        self.negatives += 1
        self.first_negative = self.first_negative or lineno

    def decimal(self, lineno: int) -> None:
        self.decimals += 1
        self.first_decimal = self.first_decimal or lineno

    def warnings(self) -> list[str]:
        out = []
        if self.negatives:
            out.append(
                f"{FMT}: {self.negatives} negative counts read as 0 "
                f"(first at line {self.first_negative})"
            )
        if self.decimals:
            out.append(
                f"{FMT}: {self.decimals} counts that are not integers (like 1e+0) rounded down "
                f"(first at line {self.first_decimal})"
            )
        return out


def _count(text: bytes, lineno: int, odd: _Odd) -> int:
    """A count written as ``1e+0`` or ``2.0``: rounded down; ``ValueError`` if no number."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    odd.decimal(lineno)
    return int(value)


def _odd_da(line: bytes, lineno: int, odd: _Odd) -> tuple[int, int]:
    """The slow path of a DA record whose numbers are not plain integers;
    line -1 if it is unreadable (``DA:0,skipped``, ``DA:DA:130,0``)."""
    fields = line[3:].split(b",")
    try:
        ln = int(fields[0])
        return ln, _count(fields[1], lineno, odd)
    except (ValueError, IndexError, OverflowError):
        return -1, 0


def _branch(section: _Section, value: bytes, lineno: int, max_ln: int, odd: _Odd) -> bool:
    """Add a BRDA record's branch; False if it is unreadable (skipped)."""
    first, _, rest = value.partition(b",")
    ident_bytes, comma, taken_text = rest.rpartition(b",")
    if not comma or b"," not in ident_bytes:  # line, block, branch[, ...], taken
        return False
    try:
        ln = int(first)
        ident = "lcov:" + ident_bytes.decode("utf-8")
        if taken_text.strip() == b"-":
            taken = 0
        else:
            try:
                taken = int(taken_text)
            except ValueError:
                taken = _count(taken_text, lineno, odd)
    except (ValueError, UnicodeDecodeError, OverflowError):
        return False
    if ln < 0 or ln > max_ln:
        return False
    if taken < 0:
        odd.negative(lineno)
        taken = 0
    if ln == 0:
        return True
    section.all_ids.setdefault(ln, set()).add(ident)
    if taken:
        section.covered_ids.setdefault(ln, set()).add(ident)
    return True


def _check_counts(key: bytes, value: bytes, lineno: int, odd: _Odd) -> bool:
    """Whether a FNDA or summary record's count is readable (it adds nothing)."""
    text = value.partition(b",")[0] if key == b"FNDA" else value
    try:
        count = int(text)
    except ValueError:
        try:
            count = _count(text, lineno, odd)
        except (ValueError, OverflowError):
            return False
    if count < 0:
        if key != b"FNDA":  # a summary is written by the tool, never by a racing counter
            return False
        odd.negative(lineno)
    return True


def _flush(
    sink: FileSink,
    section: _Section,
    limits: ParseLimits,
    shared: dict[frozenset[str], frozenset[str]],
) -> None:
    if section.path not in sink and sink.file_count() >= limits.max_files:
        raise limits.too_many_files(FMT)
    sink.add_file(section.path, section.coverage(shared))


def _show(line: bytes) -> str:
    text = line[:80].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > 80 else ""))
