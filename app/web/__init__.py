"""Pages people look at, their JSON under ``/api/v1`` and the coverage badge.

``pages_router(settings)`` is included by ``app.api.create_app``; see
``router.py`` for the routes, ``queries.py`` for what they show,
``compare.py`` for the change against the base, ``access.py`` for private
repositories and the operations token.

Nothing below this package imports it (``tests/test_import_graph.py``): the
notifier's comparison is ``app.queries.commit_delta``.
"""
