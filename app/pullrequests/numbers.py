"""Numbers as Codecov shows them: coverage to 5 decimals, then ``coverage.round``
(``down`` floors, ``up`` ceils, ``nearest`` rounds half to even) to
``coverage.precision`` places, in :class:`~decimal.Decimal` so ``74.285`` never
prints as ``74.28499``.

:func:`rounded` is the one display rounding of covworker: the pages, the
JSON's ``*_display`` figures, the CLI, the webhook, the badge, the statuses
and the comment all show a coverage through it (:func:`shown`), with the
repository's ``codecov.yml`` (``app.figures.display_config``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any, Protocol

from app.coverage.model import Totals

_ROUNDING = {"down": ROUND_FLOOR, "up": ROUND_CEILING, "nearest": ROUND_HALF_EVEN}


def ratio(hits: int, lines: int) -> Decimal | None:
    """``hits / lines`` in percent to 5 decimals (Codecov's stored coverage); None: no lines."""
    if lines == 0:
        return None
    if hits == lines:
        return Decimal(100)
    return Decimal(f"{100.0 * hits / lines:.5f}")


def coverage(totals: Totals | None) -> Decimal | None:
    return None if totals is None else ratio(totals.hits, totals.lines)


class Rounding(Protocol):
    """``coverage.precision`` and ``coverage.round``: a :class:`CodecovConfig`, or
    :class:`DisplayRounding` as the JSON gives them."""

    @property
    def precision(self) -> int: ...

    @property
    def round(self) -> str: ...


@dataclass(frozen=True, slots=True)
class DisplayRounding:
    """Codecov's defaults: two places, rounded down."""

    precision: int = 2
    round: str = "down"

    @classmethod
    def of(cls, config: Rounding) -> DisplayRounding:
        return cls(config.precision, config.round)

    def to_json(self) -> dict[str, Any]:
        """What the JSON says a ``*_display`` figure was rounded with."""
        return {"precision": self.precision, "round": self.round}


def rounded(config: Rounding, value: Decimal | float) -> Decimal:
    """``value`` to the file's precision, rounded its way. A float is taken as
    the digits it prints (``74.29``), not its binary value (``74.2899999...``)."""
    quantum = Decimal(1).scaleb(-config.precision)
    number = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    return number.quantize(quantum, rounding=_ROUNDING[config.round])


def percent(config: Rounding, value: Decimal | float | None) -> str:
    """``74.29`` (no sign, no ``%``); ``value`` must not be None."""
    assert value is not None
    return str(rounded(config, value))


def shown(config: Rounding, value: Decimal | float | None) -> str | None:
    """A coverage as every surface displays it (``99.58``, no ``%``); None: unknown."""
    return None if value is None else percent(config, value)


def signed(config: Rounding, value: Decimal) -> str:
    """``+1.20`` / ``-9.05`` / ``+0.00`` (the sign always shown, as Codecov's ``:+``)."""
    return format(rounded(config, value), "+")


def delta(config: Rounding, value: Decimal | None, *, zero: str = "\xf8") -> str:
    """A change as the comment's tables show it: ``+2.10%``, ``ø`` when exactly 0,
    ``+<0.01%`` when it rounds to 0 but is not, ``∅`` when unknown."""
    if value is None:
        return "\u2205"
    if value == 0:
        return zero
    r = rounded(config, value)
    if r == 0:
        smallest = Decimal(1).scaleb(-config.precision)
        return f"{'+' if value > 0 else '-'}<{smallest}%"
    return f"{'+' if r > 0 else ''}{r}%"
