"""The exit codes a CI step or a script tests: distinct, and the ones the help names."""

from __future__ import annotations

from app.cli import exits
from app.cli.main import FORMATS, RUN_LOCAL_EPILOG

CODES = {
    "EXIT_OK": exits.EXIT_OK,
    "EXIT_FAILED": exits.EXIT_FAILED,
    "EXIT_USAGE": exits.EXIT_USAGE,
    "EXIT_UNAVAILABLE": exits.EXIT_UNAVAILABLE,
    "EXIT_TIMEOUT": exits.EXIT_TIMEOUT,
}


def test_each_outcome_has_its_own_code_and_only_success_is_zero() -> None:
    assert len(set(CODES.values())) == len(CODES)
    assert exits.EXIT_OK == 0 and all(0 < code < 126 for n, code in CODES.items() if n != "EXIT_OK")
    assert {n for n in vars(exits) if n.startswith("EXIT_")} == set(CODES)


def test_the_help_names_each_code_by_the_number_the_cli_returns() -> None:
    shown = " ".join(FORMATS.split())
    assert f"{exits.EXIT_OK} done;" in shown
    assert f"{exits.EXIT_FAILED} an upload failed" in shown
    assert f"{exits.EXIT_USAGE} bad arguments or configuration" in shown
    assert f"{exits.EXIT_UNAVAILABLE} Redis or PostgreSQL unreachable" in shown
    assert f"{exits.EXIT_TIMEOUT} --wait gave up" in shown
    local = " ".join(RUN_LOCAL_EPILOG.split())
    assert f"{exits.EXIT_FAILED} a report could not be merged" in local
    assert f"{exits.EXIT_USAGE} bad arguments" in local
