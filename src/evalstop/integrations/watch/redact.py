"""Credentials never shown: whatever text a library's error holds, the secrets of a URI
(``http://user:password@host``) are cut out before any message is written."""

from __future__ import annotations

import base64
import urllib.parse

MASK = "***"


class Redactor:
    """Removes the password of ``uri`` (as given, URL-decoded and URL-encoded), its whole
    ``user:password@`` part, and the Basic-auth token made of them, from any text."""

    def __init__(self, uri: str) -> None:
        parts = urllib.parse.urlsplit(uri)
        secrets: set[str] = set()
        if parts.password:
            raw_user, _, raw_password = parts.netloc.rpartition("@")[0].partition(":")
            user, password = urllib.parse.unquote(raw_user), urllib.parse.unquote(raw_password)
            secrets |= {raw_password, password, urllib.parse.quote(password, safe=""),
                        f"{raw_user}:{raw_password}@", f"{user}:{password}@"}
            secrets |= {base64.b64encode(f"{u}:{p}".encode()).decode()
                        for u, p in ((user, password), (raw_user, raw_password))}
        # Longest first: the whole user:password@ goes before the password inside it.
        self._secrets = sorted((s for s in secrets if s), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, MASK)
        return text
