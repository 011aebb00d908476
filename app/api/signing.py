"""HMAC-signed, expiring PUT URLs for upload payloads.

The uploaders PUT the payload to whatever URL the create-upload reply
names, without an Authorization header (Codecov hands out presigned
storage URLs). Ours names the upload and an expiry, signed with the
server's secret; single use is enforced by the upload's state (a PUT
moves it out of ``awaiting``).
"""

from __future__ import annotations

import hashlib
import hmac
import time


class UrlSigner:
    def __init__(self, secret: bytes, ttl_s: int) -> None:
        self._secret = secret
        self.ttl_s = ttl_s

    def _mac(self, upload_id: int, expires: int) -> str:
        message = f"put:{upload_id}:{expires}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def sign(self, upload_id: int, now: float | None = None) -> tuple[int, str]:
        """``(expires, signature)`` for a PUT of ``upload_id``."""
        expires = int(now if now is not None else time.time()) + self.ttl_s
        return expires, self._mac(upload_id, expires)

    def check(self, upload_id: int, expires: int, signature: str, now: float | None = None) -> str:
        """Empty if the signature is valid and unexpired, else why not."""
        if not hmac.compare_digest(self._mac(upload_id, expires), signature):
            return "the upload URL's signature is not valid"
        if (now if now is not None else time.time()) > expires:
            return "the upload URL has expired; run the uploader again"
        return ""
