"""Pages people look at, their JSON under ``/api/v1`` and the coverage badge.

``pages_router(settings)`` is included by ``app.api.create_app``; see
``router.py`` for the routes, ``queries.py`` for what they show,
``compare.py`` for the change against the base (the notifier uses it too),
``access.py`` for private repositories and the operations token.

Nothing is imported here, so the worker (the notifier imports ``delta``)
does not load the web framework.
"""
