"""Bad records a parser skipped, so one broken record never costs a whole report.

Codecov, LCOV's own reader (``lcov --ignore-errors``) and ReportGenerator
skip a record they cannot read (LCOV ``DA:0,skipped``, Cobertura
``<line number="undefined">``, JaCoCo ``<line nr="0">``) and keep the rest
of the report. covworker does the same, and says so on the upload: the
count is complete, the records named are the first few only
(``MAX_NAMED``, each cut to ``MAX_SHOWN`` characters), so what an upload
stores about them is bounded whatever the report holds. A report whose
every record was skipped is still refused (the parser raises, naming them).
"""

from __future__ import annotations

from typing import Any

#: Records named on an upload (the count always covers all of them).
MAX_NAMED = 5
#: Characters of one record shown.
MAX_SHOWN = 60


def shown(record: bytes | str) -> str:
    """``record`` as an upload shows it: decoded, one line, cut to ``MAX_SHOWN``."""
    text = record[: MAX_SHOWN * 4]
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    text = "".join(c if c.isprintable() else " " for c in text)  # no NUL into a JSON column
    text = " ".join(text.split())
    return text[:MAX_SHOWN] + ("..." if len(text) > MAX_SHOWN else "")


class SkippedRecords:
    """How many records were skipped, and the first ``MAX_NAMED`` of them
    (record, where: ``line 12`` of the report or the XML element's place)."""

    __slots__ = ("count", "named")

    def __init__(self) -> None:
        self.count = 0
        self.named: list[tuple[str, str]] = []

    def __bool__(self) -> bool:
        return self.count > 0

    def add(self, record: bytes | str, where: str) -> None:
        self.count += 1
        if len(self.named) < MAX_NAMED:
            self.named.append((shown(record), where))

    def line(self, record: bytes | str, lineno: int) -> None:
        """A skipped record at ``lineno`` of the report."""
        self.add(record, f"line {lineno}")

    def extend(self, other: SkippedRecords, prefix: str = "") -> None:
        """``other``'s records too (``prefix``: the coverage file they came from)."""
        self.count += other.count
        room = MAX_NAMED - len(self.named)
        self.named.extend((r, f"{prefix}{w}") for r, w in other.named[:room])

    def summary(self) -> str:
        """``3 records skipped: `DA:0,skipped` at line 12, ...``."""
        noun = "record" if self.count == 1 else "records"
        named = ", ".join(f"`{record}` at {where}" for record, where in self.named)
        more = ", ..." if self.count > len(self.named) else ""
        return f"{self.count} {noun} skipped: {named}{more}"

    def to_json(self) -> dict[str, Any] | None:
        """The upload's column (``Upload.skipped_records``); None when nothing was skipped."""
        if not self.count:
            return None
        return {"count": self.count, "named": [[r, w] for r, w in self.named]}


def summary_of(stored: dict[str, Any] | None) -> str | None:
    """The summary of an upload's stored column (``to_json``), for its pages and the CLI."""
    if not stored or not isinstance(stored.get("count"), int):
        return None
    skipped = SkippedRecords()
    skipped.count = stored["count"]
    skipped.named = [(str(r), str(w)) for r, w in stored.get("named", [])[:MAX_NAMED]]
    return skipped.summary()
