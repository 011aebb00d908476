"""One parser module per coverage format; each exposes ``parse(raw, limits, roots)``."""
