"""PostgreSQL (SQLite for the embedded default) through SQLAlchemy 2."""
