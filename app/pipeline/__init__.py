"""The pipeline's steps as plain functions of ``Services``.

Actors (``app.actors``) are thin wrappers around these, so the steps can be
tested and benchmarked without a broker.
"""
