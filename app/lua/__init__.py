"""covworker's own Redis scripts, one operation per ``.lua`` file whose header
names its ``KEYS`` and ``ARGV`` (as Dramatiq keeps its broker's scripts).
The gate's scripts live beside its backend in ``middleware/``."""

from __future__ import annotations

from importlib import resources


def read_script(name: str) -> str:
    """The text of script ``name`` (``finisher_entry.lua``), shipped in the package."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
