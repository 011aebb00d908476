"""The worker's entry point: ``dramatiq app.actors``.

Importing this module is the worker's start-up: it reads the settings from
the environment (``REDIS_URL``, ``DATABASE_URL``, ``COVWORKER_*``) once,
sets Dramatiq's broker and declares the actors on it.
"""

from __future__ import annotations

from app.settings import Settings
from app.worker import build_app

covworker = build_app(Settings())
broker = covworker.broker
upload_processor = covworker.upload_processor
upload_finisher = covworker.upload_finisher
notify = covworker.notify
sweep = covworker.sweep
deliver_webhook = covworker.deliver_webhook
