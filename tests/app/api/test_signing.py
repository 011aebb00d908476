"""Signed, expiring PUT URLs: what ``UrlSigner.check`` accepts and refuses."""

from __future__ import annotations

from app.api.signing import UrlSigner

NOW = 1_700_000_000


def test_a_signature_is_valid_for_its_upload_until_it_expires() -> None:
    signer = UrlSigner(b"secret", ttl_s=600)
    expires, signature = signer.sign(7, now=NOW)
    assert expires == NOW + 600
    assert signer.check(7, expires, signature, now=NOW) == ""
    assert signer.check(7, expires, signature, now=expires) == ""  # the last second counts
    assert signer.check(7, expires, signature, now=expires + 1) == (
        "the upload URL has expired; run the uploader again"
    )


def test_a_signature_does_not_open_another_upload_a_later_expiry_or_another_secret() -> None:
    signer = UrlSigner(b"secret", ttl_s=600)
    expires, signature = signer.sign(7, now=NOW)
    invalid = "the upload URL's signature is not valid"
    assert signer.check(8, expires, signature, now=NOW) == invalid
    assert signer.check(7, expires + 3600, signature, now=NOW) == invalid
    assert UrlSigner(b"other", ttl_s=600).check(7, expires, signature, now=NOW) == invalid
    assert signer.check(7, expires, "", now=NOW) == invalid


def test_a_forged_signature_is_refused_even_once_expired_as_forged() -> None:
    """The signature is checked first: an expired forgery is not told it only expired."""
    signer = UrlSigner(b"secret", ttl_s=600)
    assert signer.check(7, 0, "0" * 64, now=NOW) == "the upload URL's signature is not valid"
