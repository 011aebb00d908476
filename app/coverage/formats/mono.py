"""Mono's coverage XML (monocov, ``mono --profile=monocov``'s export).

Shape::

    <coverage version="0.3">
      <assembly name="Calc" guid="..." filename="Calc.dll"/>
      <class name="Calc.Core" assembly="Calc">
        <method name="Add" class="Calc.Core" token="100663297"
                filename="/src/Calc/Core.cs">
          <statement line="12" column="9" counter="3"/>

It shares its ``<coverage>`` root with Cobertura and Clover; ``detect.py``
tells it apart by the ``<assembly>`` element (as Codecov's worker does,
``services/report/languages/mono.py``). The rules, Codecov's:

- each ``<statement>`` of a ``<method>`` is ``counter`` hits on its line, in
  the file the method's ``filename`` names;
- a line several statements share keeps the largest count;
- a statement with an unreadable line or counter is skipped and named, and
  the statements of a method without a ``filename`` too.
"""

from __future__ import annotations

from app.coverage.limits import ParseLimits
from app.coverage.model import Report
from app.coverage.safexml import ReportTarget, feed

FMT = "Mono coverage XML"


class _Target(ReportTarget):
    fmt = FMT
    root = "coverage"
    record_tags = frozenset({"statement"})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.files: dict[str, dict[int, int]] = {}
        self.lines: dict[int, int] | None = None
        self.in_method = False

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == "method":
            self.in_method = True
            name = attrib.get("filename", "")
            self.lines = self.files.setdefault(name, {}) if name.strip() else None

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        lines = self.lines
        try:
            ln, hits = int(attrib["line"]), int(attrib["counter"])
        except (KeyError, ValueError):
            ln = hits = -1
        if lines is None or hits < 0 or not 0 < ln <= self.max_ln:
            if self.in_method:
                self.skip(tag, attrib)
            return
        if hits > lines.get(ln, -1):
            lines[ln] = hits

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "method":
            self.in_method, self.lines = False, None

    def data(self, text: str) -> None:
        """Text is never meaningful in monocov's XML."""

    def finish(self) -> Report:
        report = super().finish()
        for name, lines in self.files.items():
            if lines:
                self.add_file(self.paths(name), lines, {})
        return report


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
