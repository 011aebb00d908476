"""Test results: JUnit XML uploads, per-commit totals and failures, flaky tests.

CI jobs send JUnit files with ``codecovcli upload-process --report-type
test_results`` (the route is :mod:`app.api.test_results`); the upload rides
the coverage pipeline (signed PUT, processor, finisher, notification) and
its parse step stores one row per test outcome (:mod:`app.testresults.store`,
parsing in :mod:`app.testresults.junit`). :mod:`app.testresults.summary`
reads a commit's totals and failures, :mod:`app.testresults.history` a
test's flakiness, fail rate and duration, and
:func:`app.testresults.comment.tests_section` renders the pull-request
comment's test section. This package serves no HTTP: the pages and JSON
that show test results are :mod:`app.web.tests`.
"""
