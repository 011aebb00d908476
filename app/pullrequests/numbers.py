"""Numbers as Codecov shows them: coverage to 5 decimals, then ``coverage.round``
(``down`` floors, ``up`` ceils, ``nearest`` rounds half to even) to
``coverage.precision`` places, in :class:`~decimal.Decimal` so ``74.285`` never
prints as ``74.28499``."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from app.coverage.model import Totals
from app.pullrequests.config import CodecovConfig

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


def rounded(config: CodecovConfig, value: Decimal | float) -> Decimal:
    """``value`` to the file's precision, rounded its way."""
    quantum = Decimal(1).scaleb(-config.precision)
    return Decimal(value).quantize(quantum, rounding=_ROUNDING[config.round])


def percent(config: CodecovConfig, value: Decimal | None) -> str:
    """``74.29`` (no sign, no ``%``); ``value`` must not be None."""
    assert value is not None
    return str(rounded(config, value))


def signed(config: CodecovConfig, value: Decimal) -> str:
    """``+1.20`` / ``-9.05`` / ``+0.00`` (the sign always shown, as Codecov's ``:+``)."""
    return format(rounded(config, value), "+")


def delta(config: CodecovConfig, value: Decimal | None, *, zero: str = "\xf8") -> str:
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
