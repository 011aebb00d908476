"""Uploads that arrive over HTTP: the uploaders' payloads and their bookkeeping.

``payload`` decodes what codecov-cli and the legacy uploader PUT (several
coverage files, the network file list, report fixes); ``parse`` turns one
payload into one report; ``store`` creates commits and uploads and stores
payloads. The HTTP layer (``app.api``) only translates.
"""
