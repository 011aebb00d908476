"""Uploads coming in: the uploaders' payloads and their bookkeeping.

``admit`` is the one door into processing (the fence, the processing
set, the processor) that every way in passes; ``accept`` takes uploads
handed over directly (``covworker upload``, the demo) and holds the
validators every way in shares; ``payload`` decodes what codecov-cli and
the legacy uploader PUT (several coverage files, the network file list,
report fixes); ``parse`` turns one payload into one report; ``store``
creates commits (one way, ``upsert_commit``) and uploads and stores
payloads; ``arrival`` finds a payload an uploader PUT straight to the object
store and admits it. The HTTP layer (``app.api``) only translates.
"""
