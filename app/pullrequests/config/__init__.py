"""``codecov.yml``: Codecov's schema for the keys covworker acts on.

An invalid file is never fatal: every key that breaks the schema becomes a
:class:`ConfigError` naming the key and why, that key falls back to its
default, and the rest of the file still applies (the comment's footer and
the commit show the errors, as Codecov shows them).

One module per part of the file: :mod:`.status` (``coverage.status``),
:mod:`.comment` (``comment``), :mod:`.flags` (``flags`` and
``flag_management``), :mod:`.paths` (the pattern match of ``ignore`` and
every ``paths`` key); :mod:`.document` reads the whole file with them, the
top-level keys included; :mod:`.fields` holds the value checks they share
and :mod:`.schema` the typed settings. The names below are the package's
interface.
"""

from app.pullrequests.config.document import (
    CodecovConfig,
    default_config,
    parse_codecov_yaml,
)
from app.pullrequests.config.paths import path_matches
from app.pullrequests.config.schema import (
    CODECOV_YAML_PATHS,
    MAX_YAML_BYTES,
    OVERSIZED_YAML,
    CommentConfig,
    ConfigError,
    FlagRule,
    StatusRule,
)

__all__ = [
    "CODECOV_YAML_PATHS",
    "MAX_YAML_BYTES",
    "OVERSIZED_YAML",
    "CodecovConfig",
    "CommentConfig",
    "ConfigError",
    "FlagRule",
    "StatusRule",
    "default_config",
    "parse_codecov_yaml",
    "path_matches",
]
