"""Go coverprofiles (``go test -coverprofile``), modes set, count and atomic.

Shape::

    mode: set
    example.com/m/pkg/file.go:12.34,14.2 3 1

Each record is a block (start line.col, end line.col, statements, count).
The same block may be listed more than once (``-coverpkg`` over several
packages, or concatenated profiles, which also repeat the ``mode:`` line):
its counts add in count/atomic mode and are or-ed in set mode, as ``go tool
cover`` does. A block covers every line from its start to its end line.
A line's hits are the largest count of the blocks touching it; a line
touched by several blocks gets one identity-known branch per block
(``go:12.34,14.2``), so ``if err != nil { return err }`` with the return
never run is a partial line.

Paths are import paths; the module path is dropped to make them
repository-relative where the report alone tells where it ends, by go.mod's
rules: ``host/owner/repo`` on github.com / gitlab.com / bitbucket.org, or
any path up to a VCS-qualified element (``gitlab.com/group/sub/repo.git``,
how GitLab subgroups are written when ``go get`` cannot ask the server),
each followed by an optional major-version suffix ``/vN`` (N >= 2), which
is not a directory of the repository. A GitLab subgroup path without the
``.git`` qualifier is ambiguous from the report alone (``group/sub/repo``
or ``group/sub`` with a directory ``repo``) and is read as
``host/owner/repo``. Other module paths are kept.
"""

from __future__ import annotations

import re

from app.coverage.formats import line_chunks
from app.coverage.limits import NO_CODE, ParseLimits
from app.coverage.model import Branches, FileCoverage, Report
from app.coverage.paths import PathNormaliser, clean
from app.errors import MalformedReport, ReportError

FMT = "Go coverprofile"
CHUNK = 4 << 20
_HOSTS = {"github.com", "gitlab.com", "bitbucket.org"}
_MODES = {b"set", b"count", b"atomic"}


def _fail(reason: str, lineno: int | None = None) -> MalformedReport:
    return MalformedReport(FMT, reason, line=lineno)


_VCS_SUFFIXES = (".git", ".hg", ".bzr", ".svn", ".fossil")
_MAJOR = re.compile(r"v[2-9]\d*|v[1-9]\d+")


def import_path_to_repo(path: str) -> str:
    """``github.com/o/r/v2/pkg/f.go`` -> ``pkg/f.go``; other paths unchanged."""
    parts = path.split("/")
    end = None
    for i, part in enumerate(parts[1:-1], start=1):
        if i >= 2 and part.endswith(_VCS_SUFFIXES):  # host/.../repo.git/...
            end = i + 1
            break
    if end is None and parts[0] in _HOSTS and len(parts) > 3:
        end = 3
    if end is None:
        return path
    if len(parts) > end + 1 and _MAJOR.fullmatch(parts[end]):
        end += 1
    return "/".join(parts[end:])


class _BadBlock(Exception):
    """A block found wrong after reading; its line is looked up on the error path."""

    def __init__(self, name: bytes, where: bytes, reason: str) -> None:
        super().__init__(reason)
        self.name, self.where, self.reason = name, where, reason


def _line_of(raw: bytes, name: bytes, where: bytes) -> int | None:
    at = raw.find(b"%s:%s " % (name, where))
    return raw.count(b"\n", 0, at) + 1 if at >= 0 else None


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    try:
        blocks, set_mode = _read_blocks(raw, limits)
        report = _project(blocks, set_mode, limits, roots)
        if not blocks:  # `go test -coverprofile` of packages without statements
            report.warnings.append(NO_CODE)
        return report
    except _BadBlock as exc:
        raise _fail(exc.reason, _line_of(raw, exc.name, exc.where)) from None
    except ReportError:
        raise
    except (ValueError, UnicodeError, TypeError, RecursionError) as exc:  # pragma: no cover
        raise _fail(f"unreadable report: {exc}") from None


def _read_blocks(raw: bytes, limits: ParseLimits) -> tuple[dict[bytes, dict[bytes, int]], bool]:
    """file -> block position -> count, with duplicate blocks combined."""
    blocks: dict[bytes, dict[bytes, int]] = {}
    mode: bytes | None = None
    set_mode = False
    lineno = 0
    records = 0
    current_name = b""
    current: dict[bytes, int] = {}
    for chunk in line_chunks(raw, CHUNK):
        for line in chunk.split(b"\n"):
            lineno += 1
            name, sep, rest = line.rpartition(b":")
            if not sep:
                if line.strip():
                    raise _fail(f"{_show(line)} is not a coverprofile block", lineno)
                continue
            if name == b"mode":
                this = rest.strip()
                if this not in _MODES:
                    raise _fail(f"unknown mode {_show(this)}", lineno)
                if mode is not None and this != mode:
                    raise _fail(f"mode {this.decode()} after mode {mode.decode()}", lineno)
                mode, set_mode = this, this == b"set"
                continue
            if mode is None:
                raise _fail("the profile does not start with a mode: line", lineno)
            fields = rest.split()
            if len(fields) != 3 or not name:
                raise _fail(f"{_show(line)} is not 'file:l.c,l.c statements count'", lineno)
            where, _stmts, count_text = fields
            try:
                count = int(count_text)
                int(_stmts)
            except ValueError:
                raise _fail(f"bad numbers in {_show(line)}", lineno) from None
            if count < 0:
                raise _fail(f"negative count in {_show(line)}", lineno)
            records += 1
            if records > limits.max_lines:
                raise limits.too_many_lines(FMT)
            if name != current_name:
                current_name = name
                current = blocks.setdefault(name, {})
                if len(blocks) > limits.max_files:
                    raise limits.too_many_files(FMT)
            old = current.get(where)
            if old is None:
                current[where] = count
            elif set_mode:
                current[where] = count if count > old else old
            else:
                current[where] = old + count
    if mode is None:
        raise _fail("the profile has no mode: line")
    return blocks, set_mode


_POSITION = re.compile(rb"(\d+)\.\d+,(\d+)\.\d+")


def _span(where: bytes, name: bytes, max_ln: int) -> tuple[int, int]:
    m = _POSITION.fullmatch(where)
    if m is None:
        raise _BadBlock(name, where, f"bad block position {_show(where)}")
    first, last = int(m[1]), int(m[2])
    if first < 1 or last < first or last > max_ln:
        raise _BadBlock(name, where, f"block {_show(where)} has an impossible line range")
    return first, last


def _project(
    blocks: dict[bytes, dict[bytes, int]],
    set_mode: bool,
    limits: ParseLimits,
    roots: tuple[str, ...],
) -> Report:
    report = Report()
    normalise = PathNormaliser(roots)
    budget = limits.max_lines
    max_ln = limits.max_line_number
    for name, file_blocks in blocks.items():
        try:
            text = name.decode("utf-8")
        except UnicodeDecodeError:
            raise _BadBlock(name, next(iter(file_blocks)), "file name is not UTF-8") from None
        path = normalise(import_path_to_repo(clean(text)))
        lines: dict[int, int] = {}
        first_owner: dict[int, bytes] = {}
        owners: dict[int, list[bytes]] = {}  # lines touched by 2+ blocks
        get = lines.get
        for where, count in file_blocks.items():
            first, last = _span(where, name, max_ln)
            budget -= last - first + 1
            if budget < 0:
                raise limits.too_many_lines(FMT)
            if first == last and first not in lines:  # the common one-line block
                lines[first] = count
                first_owner[first] = where
                continue
            for ln in range(first, last + 1):
                old = get(ln)
                if old is None:
                    lines[ln] = count
                    first_owner[ln] = where
                    continue
                if count > old:
                    lines[ln] = count
                more = owners.get(ln)
                if more is None:
                    owners[ln] = [first_owner[ln], where]
                else:
                    more.append(where)
        branches = {
            ln: Branches.of_one_scheme(
                frozenset("go:" + w.decode() for w in owned if file_blocks[w]),
                frozenset("go:" + w.decode() for w in owned),
            )
            for ln, owned in owners.items()
        }
        if set_mode:  # set mode records ran / not run, not counts
            lines = {ln: 1 if hits else 0 for ln, hits in lines.items()}
        fc = FileCoverage(lines, branches)
        if path in report.files:
            report.files[path].merge(fc)
        else:
            report.files[path] = fc
    return report


def _show(text: bytes) -> str:
    shown = text[:80].decode("utf-8", "replace")
    return repr(shown + ("..." if len(text) > 80 else ""))
