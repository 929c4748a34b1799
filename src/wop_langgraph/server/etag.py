"""Strong ETags over canonical JSON, and ``If-None-Match`` matching."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fastapi import Request, Response

__all__ = ["cached_json", "etag_matches"]


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header (a list, weak tags or ``*``) matches ``etag``."""
    if not if_none_match:
        return False
    candidates = [c.strip().removeprefix("W/") for c in if_none_match.split(",")]
    return "*" in candidates or etag in candidates


def cached_json(request: Request, document: Any, headers: dict[str, str] | None = None) -> Response:
    """``document`` as JSON with its ``ETag``, or ``304`` when the client already holds it."""
    body = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    all_headers = {**(headers or {}), "ETag": etag}
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=all_headers)
    return Response(body, media_type="application/json", headers=all_headers)
