"""The Privacy CA and verifier as an HTTP service: a WSGI application (make_app) on a shared
Store, run by gunicorn (serve). JSON over HTTP, described by the OpenAPI document it serves at
GET /openapi.json (openapi_document)."""

from __future__ import annotations

from ._app import MAX_BODY_BYTES, make_app
from ._openapi import openapi_document

__all__ = ["make_app", "openapi_document", "MAX_BODY_BYTES"]
