"""Cobertura XML (coverage.py, gcovr, Istanbul, JaCoCo converters, ...).

Shape::

    <coverage><sources><source>/abs/root</source></sources>
      <packages><package><classes>
        <class filename="pkg/mod.py"><methods><method><lines>..</lines></method></methods>
          <lines><line number="3" hits="2" branch="true" condition-coverage="50% (1/2)"/>

A class's own ``<lines>`` are the truth; the ``<method>`` lines repeat some
of them (Istanbul) and are used only for a class that has no lines of its
own. Several ``<class>`` elements may name one file (inner classes): their
lines add. Branches are counted by ``condition-coverage``; coverage.py also
names the branches a line missed (``missing-branches="731,-1"``, the arcs'
destinations), which become missed identities (``arc:731``, the scheme of
coverage.py's JSON) so that shards merge as ``coverage combine`` does.

Where a relative filename lies in the repository: with one ``<source>``
whose place is known (a relative one, or an absolute one under a root the
caller gives) it is joined with it. Otherwise (coverage.py with
``source = ["pkg"]`` writes ``<source>/ck/pkg</source>`` and
``filename="__init__.py"``; or several sources, any of which may hold it)
the report alone cannot tell: the filename is kept as written and the
sources go with it as the directories it may lie under
(``Report.bases``), which the upload's file list or the coverage file's
own location settle later (``app.ingest.parse``). coverage.py's writer keeps one
``<class>`` per relative filename and package, so two sources that each
hold ``__init__.py`` lose one of them in the XML itself; the root's
``lines-valid`` still counts it, so a report with several sources whose
``lines-valid`` exceeds the line records it holds gets a warning saying so
(other writers count ``lines-valid`` differently, so only there).
"""

from __future__ import annotations

from app.coverage.limits import NO_CODE, ParseLimits
from app.coverage.model import Branches, Report
from app.coverage.paths import clean, is_absolute, join
from app.coverage.safexml import FileTarget, Invalid, feed

FMT = "Cobertura XML"


def whole_number(value: str | None, what: str, *, floats: bool = False) -> int:
    """``value`` as an int, or ``ValueError`` with a readable reason."""
    if value is None:
        raise ValueError(f"{what} is missing")
    try:
        return int(value)
    except ValueError:
        pass
    if floats:  # some tools write hits as "1.0"; accept whole numbers only
        try:
            f = float(value)
            if f.is_integer():
                return int(f)
        except (ValueError, OverflowError):
            pass
    raise ValueError(f"{what} {value[:40]!r} is not a whole number")


def _conditions(text: str) -> tuple[int, int]:
    """``"50% (1/2)"`` -> ``(1, 2)``."""
    open_ = text.find("(")
    close = text.find(")", open_)
    if open_ < 0 or close < 0:
        raise ValueError(f"condition-coverage {text!r} is not like '50% (1/2)'")
    cov, _, tot = text[open_ + 1 : close].partition("/")
    covered = whole_number(cov, "condition-coverage covered")
    total = whole_number(tot, "condition-coverage total")
    if covered < 0 or total < 0 or covered > total:
        raise ValueError(f"condition-coverage {text!r} is not a valid fraction")
    return covered, total


def _missed(covered: int, total: int, missing: str) -> Branches:
    """coverage.py's ``missing-branches="731,exit"``: missed identities, if they
    agree with ``condition-coverage``; count-only branches otherwise (two exits
    of one line are both written ``exit`` and cannot be told apart)."""
    ids = frozenset(f"arc:{d.strip()[:40]}" for d in missing.split(",") if d.strip())
    if not ids or len(ids) != total - covered:
        return Branches(covered, total)
    return Branches.from_missed(total, ids)


class _Target(FileTarget):
    """lxml target: streams elements into a Report; a ``<class>`` is a file
    (its own lines are :attr:`lines`)."""

    fmt = FMT
    root = "coverage"

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.sources: list[str] = []
        self.text: list[str] | None = None
        self.in_method = 0
        self.method_lines: dict[int, int] = {}
        self.float_hits = 0
        self.lines_valid: int | None = None  # the root's own count of lines
        self.class_records = 0  # <line>s of classes (not of methods)
        self.nameless = 0  # open <class> elements without a filename (skipped)

    # -- lxml target protocol ---------------------------------------------

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        lines = self.lines  # the hot path: keep it inline and lean
        if lines is None:
            return
        try:
            ln = int(attrib["number"])
            hits = int(attrib["hits"])
        except (KeyError, ValueError):
            ln, hits = self._slow_numbers(attrib)
        if hits < 0 or ln < 1 or ln > self.max_ln:
            if ln == 0 and hits >= 0:  # generated code without a source line
                return
            self.skip(tag, attrib)  # number="undefined", out of range: skipped, the rest kept
            return
        if self.in_method:
            lines = self.method_lines
            lines[ln] = lines.get(ln, 0) + hits
            return
        self.class_records += 1
        lines[ln] = lines.get(ln, 0) + hits
        cc = attrib.get("condition-coverage")
        if (
            cc is not None
            and attrib.get("branch") != "false"
            and not self._branches(ln, cc, attrib.get("missing-branches"))
        ):
            self.skip(tag, attrib)  # its hits are kept, its unreadable branches not

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if self.depth == 1:
            valid = attrib.get("lines-valid", "")
            self.lines_valid = int(valid) if valid.isdigit() else None
        if tag == "class":
            self._class(attrib)
        elif tag == "method":
            self.in_method += 1
        elif tag == "source":
            self.text = []

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "line":
            return
        if tag == "class":
            if self.nameless:
                self.nameless -= 1
            else:
                self._end_class()
        elif tag == "method":
            self.in_method -= 1
        elif tag == "source" and self.text is not None:
            self.sources.append("".join(self.text).strip())
            self.text = None

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def finish(self) -> Report:
        report = super().finish()
        if self.float_hits:
            report.warnings.append(
                f"{self.float_hits} <line> hits written as decimals (e.g. '1.0') read as integers"
            )
        if self.lines_valid == 0 and not self.records:
            report.warnings.append(NO_CODE)
        if len(self.sources) > 1 and self.class_records < (self.lines_valid or 0):
            report.warnings.append(
                f'the report says lines-valid="{self.lines_valid}" but holds only '
                f"{self.class_records} line records: its writer left some files out "
                "(coverage.py keeps one of two same-named files under different <source>s)"
            )
        return report

    # -- elements ------------------------------------------------------------

    def _class(self, attrib: dict[str, str]) -> None:
        if self.lines is not None:
            raise Invalid("<class> nested in another <class>", self.n)
        filename = attrib.get("filename")
        if not filename or not filename.strip():
            self.skip("class", attrib)  # its lines are read into nothing
            self.nameless += 1
            return
        self.start_file(self._resolve(filename))
        self.method_lines = {}

    def _resolve(self, filename: str) -> str:
        if not self.sources or is_absolute(clean(filename)):
            for src in self.sources:
                self.paths.add_root(src)
            return self.paths(filename)
        # a relative filename is relative to a source root; with one root whose
        # place in the repository is known (relative, or under a caller root) use it
        if len(self.sources) == 1:
            src = clean(self.sources[0])
            prefix = self.paths.relative_to_root(src) if is_absolute(src) else src
            if prefix:
                return join(prefix, filename)
        path = self.paths(filename)
        bases = tuple(dict.fromkeys(s for s in map(clean, self.sources) if s and s != "."))
        if bases:
            self.report.bases[path] = bases
        return path

    def _slow_numbers(self, attrib: dict[str, str]) -> tuple[int, int]:
        """A ``<line>``'s number and hits when not plain integers; -1 hits if unreadable."""
        try:
            ln = whole_number(attrib.get("number"), "line number")
            hits = whole_number(attrib.get("hits"), "hits", floats=True)
        except ValueError:
            return 0, -1
        self.float_hits += 1  # only a decimal "1.0" gets here without raising
        return ln, hits

    def _branches(self, ln: int, cc: str, missing: str | None) -> bool:
        """The line's branches; False if ``condition-coverage`` is unreadable."""
        try:
            covered, total = _conditions(cc)
            br = Branches(covered, total) if missing is None else _missed(covered, total, missing)
        except ValueError:
            return False
        if total:
            old = self.branches.get(ln)
            self.branches[ln] = br if old is None else old.merged(br)
        return True

    def _end_class(self) -> None:
        if not self.lines:  # Istanbul-style reports may only list method lines
            self.lines = dict(self.method_lines)
        self.end_file()


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
