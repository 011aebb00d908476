"""BullseyeCoverage XML (``covxml``, with ``-b`` for blocks).

Shape::

    <BullseyeCoverage xmlns="https://www.bullseye.com/covxml" buildId="..." ...>
      <folder name="calc"><src name="CalcCore.cpp">
        <fn name="CalcCore::apply()">
          <probe line="47" column="4" kind="function" event="full"/>
          <probe line="49" kind="decision" event="true"/>
          <block line="48" entered="1"/>

Bullseye records what ran, not how often: a probe's ``event`` is ``full``
(every outcome), ``none``, or for a decision or condition ``true`` /
``false`` (only that outcome). The rules (Codecov's worker,
``services/report/languages/bullseye.py``, and Bullseye's own meaning where
Codecov's differs; ``docs/formats.md`` lists them):

- the file is its folders' names and the ``src`` name joined with ``/``;
- a probe's line ran (1 hit) unless its event is ``none`` (0);
- a ``decision`` or ``condition`` probe is two branches, its true and its
  false outcome, covered as the event says (``full`` both, ``true`` /
  ``false`` one); a ``switch-label`` is one branch, covered when ``full``.
  Branches are named by the probe's place among its line's probes and the
  outcome, so runs that took different outcomes merge to covered (Codecov
  reads every event but ``full`` / ``none`` as a half-covered line);
- a ``block`` (``covxml -b``) is a line, run when ``entered`` is not 0
  (Codecov does not read blocks);
- ``buildId``'s date is not read (Codecov refuses a report older than its
  ``max_report_age``; covworker keeps reports whatever their age);
- a probe or block with an unreadable line or event is skipped and named.
"""

from __future__ import annotations

from app.coverage.limits import ParseLimits
from app.coverage.model import Report, branches_of_ids
from app.coverage.safexml import FileTarget, Invalid, feed

FMT = "Bullseye XML"
NS = "{https://www.bullseye.com/covxml}"
_BLOCK, _PROBE, _FOLDER, _SRC = (f"{NS}{t}" for t in ("block", "probe", "folder", "src"))
_TWO_WAY = {"decision", "condition"}
_COVERED = {"full": "tf", "true": "t", "false": "f", "none": ""}


class _Target(FileTarget):
    fmt = FMT
    root = f"{NS}BullseyeCoverage"
    record_tags = frozenset({_PROBE, _BLOCK})

    def __init__(self, limits: ParseLimits, roots: tuple[str, ...]) -> None:
        super().__init__(limits, roots)
        self.folders: list[str] = []
        self.all_ids: dict[int, set[str]] = {}
        self.covered: dict[int, set[str]] = {}
        self.probes: dict[int, int] = {}  # branch probes met so far on each line

    def element(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _FOLDER:
            self.folders.append(attrib.get("name", ""))
        elif tag == _SRC:
            if self.lines is not None:
                raise Invalid("<src> nested in another <src>", self.n)
            name = attrib.get("name", "")
            if not name.strip():
                raise Invalid("<src> without a name", self.n)
            parts = [f.strip("/\\") for f in self.folders if f.strip("/\\")]
            self.start_file(self.paths("/".join([*parts, name])))
            self.all_ids, self.covered, self.probes = {}, {}, {}

    def record(self, tag: str, attrib: dict[str, str]) -> None:
        lines = self.lines
        if lines is None:
            return
        try:
            ln = int(attrib["line"])
        except (KeyError, ValueError):
            ln = 0
        if tag == _BLOCK:
            entered = attrib.get("entered", "")
            if not 0 < ln <= self.max_ln or not entered.isdigit():
                self.skip("block", attrib)
                return
            hits = 0 if not entered.strip("0") else 1  # entered at all
        else:
            event, kind = attrib.get("event"), attrib.get("kind", "")
            if not 0 < ln <= self.max_ln or event not in _COVERED:
                self.skip("probe", attrib)
                return
            hits = 0 if event == "none" else 1
            if kind in _TWO_WAY or kind == "switch-label":
                self._branches(ln, kind, _COVERED[event])
        if hits > lines.get(ln, -1):
            lines[ln] = hits

    def _branches(self, ln: int, kind: str, covered: str) -> None:
        nth = self.probes.get(ln, 0)
        self.probes[ln] = nth + 1
        outcomes = "tf" if kind in _TWO_WAY else "t"
        ids = self.all_ids.setdefault(ln, set())
        taken = self.covered.setdefault(ln, set())
        for outcome in outcomes:
            ident = f"bullseye:{nth}{outcome}"
            ids.add(ident)
            if outcome in covered:
                taken.add(ident)

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == _FOLDER and self.folders:
            self.folders.pop()
        elif tag == _SRC and self.lines is not None:
            self.branches = branches_of_ids(self.all_ids, self.covered)
            self.end_file()

    def data(self, text: str) -> None:
        """Text is never meaningful in Bullseye's XML."""


def parse(raw: bytes, limits: ParseLimits, roots: tuple[str, ...] = ()) -> Report:
    report: Report = feed(raw, _Target(limits, roots), FMT)
    return report
