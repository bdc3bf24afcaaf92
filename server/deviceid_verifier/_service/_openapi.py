"""The OpenAPI 3.0 document of the service, built from the wire messages' JSON Schemas
(deviceid_verifier/schemas/*.schema.json, which docs/schemas links to): one owner per message."""

from __future__ import annotations

import copy
import importlib.resources
import json
from typing import Any, Dict

from .. import _errors

#: The version of the HTTP interface (its paths are under /v1).
API_VERSION = "1.0.0"


def schema(name: str) -> Dict[str, Any]:
    """The JSON Schema of the wire message `name` (e.g. "attestation"), as shipped."""
    text = importlib.resources.files("deviceid_verifier").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")
    loaded: Dict[str, Any] = json.loads(text)
    return loaded


SCHEMAS = ("enrolment-request", "enrolment-challenge", "enrolment-response", "ak-certificate", "attestation",
           "nonce-request", "nonce", "verification-request", "verification", "webauthn-challenge", "webauthn-attestation",
           "webauthn-registration", "webauthn-credential", "webauthn-assertion", "assertion-request",
           "assertion-verification", "device", "device-bits-request", "receipt-request", "receipt", "rejection")


def _component(name: str) -> Dict[str, Any]:
    """A schema as an OpenAPI 3.0 Schema Object: without $schema and $id, references to other
    message files turned into references to components."""
    def convert(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key in ("$schema", "$id"):
                    continue
                if key == "$ref" and isinstance(value, str) and value.endswith(".schema.json"):
                    value = "#/components/schemas/" + value[:-len(".schema.json")]
                if key == "type" and isinstance(value, list) and "null" in value:  # 3.0 says "nullable"
                    (value,), out["nullable"] = [t for t in value if t != "null"], True
                out[key] = convert(value)
            return out
        if isinstance(node, list):
            return [convert(item) for item in node]
        return node
    component: Dict[str, Any] = convert(copy.deepcopy(schema(name)))
    if name == "rejection":
        component["properties"]["rejected"]["enum"] = sorted(_errors.REASONS)
    return component


def _json_body(name: str) -> Dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def _rejections(*statuses: int) -> Dict[str, Any]:
    words = {400: "not a message of this step (malformed, version, message-type)",
             401: "unauthenticated: the service has tenants and the request carries no tenant's API key",
             403: "the message is well formed but its proof fails (the reason says which check)",
             404: "no such operation, or (refreshReceipt) a receipt past its retention (receipt-expired)", 405: "another method", 413: "the body is over 64 KiB",
             429: "rate-limited: the EK is at its enrolment limit for this app id, or has as many enrolment challenges "
                  "pending as one EK may, or (issuing to app servers) the tenant was issued as many nonces and "
                  "challenges in this window as its issue limit allows (Retry-After says when to retry)"}
    out: Dict[str, Any] = {}
    for status in statuses:
        out[str(status)] = {"description": words[status], **_json_body("rejection")}
        if status == 429:
            out[str(status)]["headers"] = {"Retry-After": {"schema": {"type": "integer", "minimum": 1},
                                                          "description": "seconds"}}
    out["503"] = {"description": "the service's database does not answer (an operator's problem; retry)"}
    return out


def _post(operation_id: str, summary: str, request: str, response: str, *rejections: int,
          app_server: bool = False, body_required: bool = True, tenant: bool = False,
          tenant_optional: bool = False) -> Dict[str, Any]:
    """An operation; one that issues to app servers (`app_server`) takes a tenant's API key once
    the service has tenants, and none while it has none (the empty security requirement), and may
    be refused for the tenant's issue limit (429); a tenant's own (`tenant`) always needs one; a
    verification (`tenant_optional`) takes one or none, and answers the key's tenant more."""
    statuses = ((400, 401, 413, *rejections, 429) if app_server else
                (400, 401, 413, *rejections) if tenant or tenant_optional else (400, 413, *rejections))
    operation: Dict[str, Any] = {
        "operationId": operation_id, "summary": summary,
        "responses": {"200": {"description": response, **_json_body(response)}, **_rejections(*statuses)},
        "requestBody": {"required": body_required, **_json_body(request)},
    }
    if app_server or tenant_optional:
        operation["security"] = [{"tenantKey": []}, {}]
    if tenant:
        operation["security"] = [{"tenantKey": []}]
    return {"post": operation}


def openapi_document() -> Dict[str, Any]:
    """The service's OpenAPI 3.0.3 document (what GET /openapi.json answers)."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "DeviceID Privacy CA and verifier", "version": API_VERSION,
                 "description": "Enrols a device's per-app TPM attestation key (Privacy CA) and verifies its "
                                "attestation evidence, on a database shared by every worker. Messages are DeviceID's "
                                "wire format v1 (docs/HARDWARE-ID.md). Operator actions are not in this interface."},
        "paths": {
            "/v1/nonce": _post("newNonce", "A fresh single-use nonce for a device's evidence (of one app, if the "
                               "body names it)", "nonce-request", "nonce", 403, body_required=False, app_server=True),
            "/v1/enrolment/challenge": _post("enrolmentChallenge", "Answer an enrolment request with a challenge",
                                             "enrolment-request", "enrolment-challenge", 403, 429),
            "/v1/enrolment/finish": _post("enrolmentFinish", "Answer an activated challenge with an AK certificate",
                                          "enrolment-response", "ak-certificate", 403, 429),
            "/v1/attestation/verify": _post("verifyAttestation", "Verify a device's evidence for a nonce",
                                            "verification-request", "verification", 403, tenant_optional=True),
            "/v1/webauthn/challenge": _post("newWebAuthnChallenge",
                                            "A fresh single-use challenge for App Attest client data (of one app, "
                                            "if the body names it)", "nonce-request", "webauthn-challenge", 403,
                                            body_required=False, app_server=True),
            "/v1/webauthn/register": _post("registerCredential",
                                           "Register a device's App Attest credential (WebAuthn \"tpm\" attestation)",
                                           "webauthn-registration", "webauthn-credential", 403),
            "/v1/assertion/verify": _post("verifyAssertion",
                                          "Verify a device's App Attest assertion and raise its credential's counter",
                                          "assertion-request", "assertion-verification", 403,
                                          tenant_optional=True),
            "/v1/device/bits": _post("writeDeviceBits", "Write the tenant's bits of the device a verification's token "
                                     "names (all false removes them)", "device-bits-request", "device", 403,
                                     tenant=True),
            "/v1/receipt/refresh": _post("refreshReceipt", "Refresh a risk receipt: itself before its nbf, a new one "
                                         "with the figure now after it", "receipt-request", "receipt", 403, 404,
                                         tenant=True),
            "/v1/ca-certificate": {"get": {"operationId": "caCertificate", "summary": "The CA certificate (PEM)",
                                           "responses": {"200": {"description": "PEM", "content": {
                                               "application/x-pem-file": {"schema": {"type": "string"}}}}}}},
            "/v1/crl": {"get": {"operationId": "certificateRevocationList",
                                "summary": "The CRL of revoked AK certificates (DER, RFC 5280)",
                                "responses": {"200": {"description": "DER", "content": {
                                    "application/pkix-crl": {"schema": {"type": "string", "format": "binary"}}}},
                                    "503": {"description": "the database does not answer"}}}},
            "/v1/health": {"get": {"operationId": "health", "summary": "Whether the service and its database answer",
                                   "responses": {"200": {"description": "ok", "content": {"application/json": {
                                       "schema": {"type": "object", "properties": {"status": {"type": "string"}}}}}},
                                       "503": {"description": "the database does not answer"}}}},
        },
        "components": {"schemas": {name: _component(name) for name in SCHEMAS},
                       "securitySchemes": {"tenantKey": {
                           "type": "http", "scheme": "bearer",
                           "description": "a tenant's API key (add-tenant); needed once the service has tenants"}}},
    }
