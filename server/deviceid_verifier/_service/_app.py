"""The WSGI application: the device- and app-server-facing operations (nonces, enrolment,
attestation; App Attest challenges, registration and assertions), the CA's certificate and CRL,
and the OpenAPI document. Operator actions (revoke, limits) have no route here: they are
the command line's, on the database (docs/SERVER.md)."""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from cryptography.hazmat.primitives import serialization

from .. import _chain, _wire
from .._ca import PrivacyCA, check_app_id
from .._errors import Rejected
from .._store import Tenant
from .._store._sql import StoreUnavailable
from .._verify import Verifier
from .._webauthn import WebAuthnCredential, WebAuthnVerifier
from ._openapi import openapi_document
from ._tenants import CHALLENGE, Gate, Unauthenticated

#: The largest request body read; a larger one is refused (413) unread.
MAX_BODY_BYTES = 64 * 1024

NONCE = "deviceid.nonce"
VERIFICATION_REQUEST = "deviceid.verification-request"
VERIFICATION = "deviceid.verification"
WEBAUTHN_CHALLENGE = "deviceid.webauthn-challenge"
WEBAUTHN_REGISTRATION = "deviceid.webauthn-registration"
WEBAUTHN_CREDENTIAL = "deviceid.webauthn-credential"
ASSERTION_REQUEST = "deviceid.assertion-request"
ASSERTION_VERIFICATION = "deviceid.assertion-verification"

#: Rejections that say the request itself is not a message of this step.
_BAD_REQUEST = frozenset({"malformed", "version", "message-type"})
#: Rejections that say what the request names is gone (a receipt past its retention).
_NOT_FOUND = frozenset({"receipt-expired"})

_log = logging.getLogger("deviceid_verifier.service")

StartResponse = Callable[[str, List[Tuple[str, str]]], Any]
Response = Tuple[int, List[Tuple[str, str]], bytes]

_STATUS = {200: "200 OK", 400: "400 Bad Request", 401: "401 Unauthorized", 403: "403 Forbidden", 404: "404 Not Found",
           405: "405 Method Not Allowed", 411: "411 Length Required", 413: "413 Content Too Large",
           429: "429 Too Many Requests", 500: "500 Internal Server Error", 503: "503 Service Unavailable"}


class _Refused(Exception):
    """An HTTP-level refusal (no route, wrong method, body too large): a 4xx rejection."""

    def __init__(self, status: int, message: str, headers: Optional[List[Tuple[str, str]]] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


def _json(status: int, body: Mapping[str, Any], headers: Optional[List[Tuple[str, str]]] = None) -> Response:
    data = json.dumps(body, separators=(",", ":")).encode("utf-8")
    return status, [("Content-Type", "application/json"), *(headers or [])], data


def _message(status: int, text: str) -> Response:
    return status, [("Content-Type", "application/json")], text.encode("utf-8")


def _rejection(status: int, reason: str, message: str, headers: Optional[List[Tuple[str, str]]] = None,
               retry_after: Optional[float] = None) -> Response:
    body: Dict[str, Any] = {"rejected": reason, "message": message}
    if retry_after is not None:
        body["retry_after"] = retry_after
    return _json(status, body, headers)


def _body(environ: Mapping[str, Any]) -> bytes:
    length_text = environ.get("CONTENT_LENGTH") or ""
    try:
        length = int(length_text) if length_text.strip() else 0
    except ValueError:
        raise _Refused(400, f"Content-Length {length_text!r} is not a number") from None
    if length < 0:
        raise _Refused(400, "Content-Length is negative")
    if length > MAX_BODY_BYTES:
        raise _Refused(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} are read")
    data: bytes = environ["wsgi.input"].read(length) if length else b""
    return data


def _device_message(request: Mapping[str, Any], key: str) -> str:
    """The device's message inside an app server's request, as the JSON text it was."""
    inner = request.get(key)
    if not isinstance(inner, dict):
        raise Rejected("malformed", f"the field {key!r} is missing or not a message object")
    return json.dumps(inner)


def _for_tenant(tenant: Optional[Tenant], body: bytes) -> None:
    """A tenant's nonces and challenges are issued bound to one of its app ids, which its request
    names (`{"app_id": …}`); refused ("app-id-mismatch") before anything is issued otherwise.
    Nothing for the open service (no tenants)."""
    if tenant is None:
        return
    app_id = _issued_for(body)
    if app_id is None:
        raise Rejected("app-id-mismatch", f"a nonce or challenge of the tenant {tenant.name!r} is for one of its app ids, "
                                          f"named in the request ({{\"app_id\": …}}): {', '.join(tenant.app_ids)}")
    if app_id not in tenant.app_ids:
        raise Rejected("app-id-mismatch", f"the app id {app_id!r} is not one of the tenant {tenant.name!r}'s")


def _json_object(body: bytes) -> Dict[str, Any]:
    """A request body that is a JSON object (of a tenant's operation, outside wire format v1)."""
    try:
        request = json.loads(body, object_pairs_hook=_wire.no_duplicates)
    except (ValueError, RecursionError):
        raise Rejected("malformed", "the body is not JSON") from None
    if not isinstance(request, dict):
        raise Rejected("malformed", "the body is not a JSON object")
    return request


def _expected_app_id(request: Mapping[str, Any]) -> Optional[str]:
    app_id = request.get("app_id")
    return None if app_id is None else check_app_id(app_id)


#: The longest request_id taken, in characters.
MAX_REQUEST_ID = 255


def _request_id(request: Mapping[str, Any]) -> Optional[str]:
    """The app server's own id of a request, which keeps its answer for a retry (docs/SERVER-STATE.md,
    "Retries"): none, or a string of 1 to MAX_REQUEST_ID characters."""
    request_id = request.get("request_id")
    if request_id is not None and not (isinstance(request_id, str) and 1 <= len(request_id) <= MAX_REQUEST_ID):
        raise Rejected("malformed", f"request_id is not a string of 1 to {MAX_REQUEST_ID} characters")
    return request_id


def _issued_for(body: bytes) -> Optional[str]:
    """The app id a nonce or challenge request names: an empty body names none; otherwise a JSON
    object with an optional "app_id" (other keys are ignored, as in every message of wire format v1)."""
    if not body.strip():
        return None
    try:
        request = json.loads(body, object_pairs_hook=_wire.no_duplicates)
    except (ValueError, RecursionError):
        raise Rejected("malformed", "the body is neither empty nor JSON") from None
    if not isinstance(request, dict):
        raise Rejected("malformed", "the body is not a JSON object")
    return check_app_id(request["app_id"]) if "app_id" in request else None


#: Seconds between two purges of expired nonces and challenges by one process of the service.
PURGE_INTERVAL = 60.0


def _credential_answer(message_type: str, credential: WebAuthnCredential) -> Dict[str, Any]:
    answer: Dict[str, Any] = {
        "v": _wire.VERSION, "type": message_type, "app_id": credential.app_id,
        "credential_id": _wire.b64url(credential.credential_id), "counter": credential.counter,
        "ak_certificate_serial": format(credential.ak_serial, "x"),
    }
    if credential.counter_failed is not None:
        answer["counter_failed"] = credential.counter_failed.isoformat() + "Z"
    return answer


class _Service:
    def __init__(self, ca: PrivacyCA, verifier: Verifier, webauthn: WebAuthnVerifier,
                 purge_interval: float = PURGE_INTERVAL) -> None:
        self.ca = ca
        self.verifier = verifier
        self.webauthn = webauthn
        self.purge_interval = purge_interval
        self._purged_at: Optional[float] = None
        self._purge_lock = threading.Lock()
        self.gate = Gate(ca.store)
        self.openapi = json.dumps(openapi_document(), separators=(",", ":")).encode("utf-8")
        # the handlers of ISSUING_PATHS take the request's tenant too, those of TENANT_PATHS its caller
        self.routes: Dict[str, Tuple[str, Callable[..., Response]]] = {
            "/v1/nonce": ("POST", self.new_nonce),
            "/v1/enrolment/challenge": ("POST", self.enrolment_challenge),
            "/v1/enrolment/finish": ("POST", self.enrolment_finish),
            "/v1/attestation/verify": ("POST", self.verify_attestation),
            "/v1/webauthn/challenge": ("POST", self.webauthn_challenge),
            "/v1/webauthn/register": ("POST", self.register_credential),
            "/v1/assertion/verify": ("POST", self.verify_assertion),
            "/v1/device/bits": ("POST", self.write_device_bits),
            "/v1/receipt/refresh": ("POST", self.refresh_receipt),
            "/v1/ca-certificate": ("GET", self.ca_certificate),
            "/v1/crl": ("GET", self.crl),
            "/v1/health": ("GET", self.health),
            "/openapi.json": ("GET", lambda _: (200, [("Content-Type", "application/json")], self.openapi)),
        }

    #: Where nonces and challenges are issued: to app servers, which need a tenant's key once the
    #: service has tenants, and count against that tenant's issue limit. Verifications need none
    #: (a device may post its own evidence).
    ISSUING_PATHS = frozenset({"/v1/nonce", "/v1/webauthn/challenge"})
    #: Where a tenant's key, when sent, adds the tenant's part of the answer (the device object,
    #: the receipt) or is needed (the device bits, receipts): the handler takes the caller's tenant.
    TENANT_PATHS = frozenset({"/v1/attestation/verify", "/v1/assertion/verify", "/v1/device/bits",
                              "/v1/receipt/refresh"})

    # -- operations ---------------------------------------------------------------------------

    def _purge_if_due(self) -> None:
        """Bounded state (issue 51, case 5): every process that issues nonces and challenges
        removes the expired ones, at most once per purge_interval (docs/SERVER-STATE.md, invariant 5:
        an expired one then reads as unknown, never as fresh). One thread of a process does it;
        the others go on."""
        if not self._purge_lock.acquire(blocking=False):
            return
        try:
            now = time.monotonic()
            if self._purged_at is not None and now - self._purged_at < self.purge_interval:
                return
            self._purged_at = now
            self.ca.store.purge(_chain.utcnow())
        finally:
            self._purge_lock.release()

    def new_nonce(self, body: bytes, tenant: Optional[Tenant]) -> Response:
        app_id = _issued_for(body)
        self._purge_if_due()
        nonce = self.verifier.new_nonce(app_id, tenant=tenant)
        expires = _chain.utcnow() + self.verifier.nonce_lifetime
        fields = {"nonce": _wire.b64(nonce), "expires": expires.isoformat() + "Z"}
        return _message(200, _wire.dumps(NONCE, fields if app_id is None else {**fields, "app_id": app_id}))

    def enrolment_challenge(self, body: bytes) -> Response:
        self._purge_if_due()
        return _message(200, self.ca.challenge(body))

    def enrolment_finish(self, body: bytes) -> Response:
        return _message(200, self.ca.finish(body))

    def _device(self, tenant: Optional[Tenant], app_id: str, ek_pseudonym: Optional[bytes], *,
                assertion: bool) -> Optional[Dict[str, Any]]:
        """The "device" object of an answer to the owning tenant of `app_id` (docs/SERVER.md,
        "Device bits"); None for anyone else, or a credential this CA did not certify."""
        if tenant is None or app_id not in tenant.app_ids or ek_pseudonym is None:
            return None
        return self.ca.device_check.seen(tenant.name, ek_pseudonym, assertion=assertion).to_json()

    def verify_attestation(self, body: bytes, tenant: Optional[Tenant] = None) -> Response:
        request = _wire.loads(body, VERIFICATION_REQUEST)
        evidence = request.get("evidence")
        if not isinstance(evidence, dict):
            raise Rejected("malformed", "the field 'evidence' is missing or not an attestation object")
        nonce = _wire.bytes_field(request, "nonce")
        app_id = request.get("app_id")
        if app_id is not None:
            check_app_id(app_id)
        result = self.verifier.verify(json.dumps(evidence), nonce, app_id=app_id, request_id=_request_id(request))
        answer: Dict[str, Any] = {
            "v": _wire.VERSION, "type": VERIFICATION, "app_id": result.app_id, "hardware_id": result.hardware_id,
            "ak_name": result.ak_name.hex(), "ak_certificate_serial": format(result.ak_certificate.serial_number, "x"),
            "clock": result.clock, "safe": result.safe, "firmware_version": result.firmware_version,
        }
        if result.risk is not None:
            answer["risk"] = result.risk
        device = self._device(tenant, result.app_id, result.ek_pseudonym, assertion=False)
        if device is not None:
            answer["device"] = device
            if result.risk is not None:
                answer["receipt"] = self.ca.risk_receipt(result.app_id, result.risk, result.ak_name,
                                                         result.ak_certificate.serial_number)
        return _json(200, answer)

    def webauthn_challenge(self, body: bytes, tenant: Optional[Tenant]) -> Response:
        app_id = _issued_for(body)
        self._purge_if_due()
        challenge = self.webauthn.new_challenge(app_id, tenant=tenant)
        expires = _chain.utcnow() + self.webauthn.challenge_lifetime
        fields = {"challenge": _wire.b64url(challenge), "expires": expires.isoformat() + "Z"}
        return _message(200, _wire.dumps(WEBAUTHN_CHALLENGE, fields if app_id is None else {**fields, "app_id": app_id}))

    def register_credential(self, body: bytes) -> Response:
        request = _wire.loads(body, WEBAUTHN_REGISTRATION)
        attestation = _device_message(request, "attestation")
        client_data = _wire.b64url_field(request, "client_data_json")
        credential = self.webauthn.register(attestation, client_data, app_id=_expected_app_id(request),
                                            request_id=_request_id(request))
        return _json(200, _credential_answer(WEBAUTHN_CREDENTIAL, credential))

    def verify_assertion(self, body: bytes, tenant: Optional[Tenant] = None) -> Response:
        request = _wire.loads(body, ASSERTION_REQUEST)
        assertion = _device_message(request, "assertion")
        client_data = _wire.b64url_field(request, "client_data_json")
        credential = self.webauthn.verify_assertion(assertion, client_data, app_id=_expected_app_id(request),
                                                    request_id=_request_id(request))
        answer = _credential_answer(ASSERTION_VERIFICATION, credential)
        device = self._device(tenant, credential.app_id, credential.ek_pseudonym, assertion=True)
        if device is not None:
            answer["device"] = device
        return _json(200, answer)

    @staticmethod
    def _owner(tenant: Optional[Tenant]) -> Tenant:
        if tenant is None:
            raise Unauthenticated("device bits and receipts are a tenant's: the request carries its API key "
                                  "(Authorization: Bearer KEY)")
        return tenant

    def write_device_bits(self, body: bytes, tenant: Optional[Tenant] = None) -> Response:
        owner = self._owner(tenant)
        request = _json_object(body)
        token, bits = request.get("token"), request.get("bits")
        if not isinstance(token, str) or not isinstance(bits, list):
            raise Rejected("malformed", "the body is {\"token\": T, \"bits\": [b0, b1, b2]}")
        return _json(200, self.ca.device_check.write(owner.name, token, bits).to_json())

    def refresh_receipt(self, body: bytes, tenant: Optional[Tenant] = None) -> Response:
        owner = self._owner(tenant)
        receipt = _json_object(body).get("receipt")
        if not isinstance(receipt, str):
            raise Rejected("malformed", "the body is {\"receipt\": R}")
        return _json(200, {"receipt": self.ca.refresh_receipt(receipt, owner.app_ids)})

    def ca_certificate(self, _: bytes) -> Response:
        pem = self.ca.certificate.public_bytes(serialization.Encoding.PEM)
        return 200, [("Content-Type", "application/x-pem-file")], pem

    def crl(self, _: bytes) -> Response:
        return 200, [("Content-Type", "application/pkix-crl")], self.ca.published_crl()

    def health(self, _: bytes) -> Response:
        self.ca.store.limit()  # the database answers
        self.ca.store.check_writable()  # and takes writes (a standby answers reads only)
        return _json(200, {"status": "ok"})

    # -- dispatch -----------------------------------------------------------------------------

    def respond(self, environ: Mapping[str, Any]) -> Response:
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD") or "GET"
        try:
            route = self.routes.get(path)
            if route is None:
                raise _Refused(404, f"no operation at {path!r} (GET /openapi.json lists them)")
            allowed, handler = route
            if method == "HEAD" and allowed == "GET":
                method = "GET"
            if method != allowed:
                raise _Refused(405, f"{path} takes {allowed}, not {method}", [("Allow", allowed)])
            body = _body(environ) if allowed == "POST" else b""
            if path in self.ISSUING_PATHS:
                tenant = self.gate.tenant(environ)
                _for_tenant(tenant, body)
                return handler(body, tenant)
            if path in self.TENANT_PATHS:
                return handler(body, self.gate.caller(environ))
            return handler(body)
        except Unauthenticated as e:
            return _rejection(401, "unauthenticated", str(e), [("WWW-Authenticate", CHALLENGE)])
        except Rejected as e:
            if e.reason == "rate-limited":
                wait = e.retry_after or 0.0
                return _rejection(429, e.reason, e.message, [("Retry-After", str(max(1, math.ceil(wait))))],
                                  retry_after=round(wait, 3))
            return _rejection(400 if e.reason in _BAD_REQUEST else 404 if e.reason in _NOT_FOUND else 403,
                              e.reason, e.message)
        except _Refused as e:
            return _rejection(e.status, "malformed", e.message, e.headers)
        except StoreUnavailable as e:
            _log.error("%s %s: %s", method, path, e)
            return _json(503, {"error": "unavailable", "message": "the service's database does not answer"},
                         [("Retry-After", "1")])
        except Exception:  # a bug: logged with its traceback, answered without it
            _log.exception("%s %s", method, path)
            return _json(500, {"error": "internal", "message": "the service failed; its log has the details"})

    def __call__(self, environ: Mapping[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        status, headers, body = self.respond(environ)
        headers.append(("Content-Length", str(len(body))))
        headers.append(("Cache-Control", "no-store"))
        start_response(_STATUS[status], headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]


def make_app(ca: PrivacyCA, verifier: Verifier, webauthn: Optional[WebAuthnVerifier] = None, *,
             purge_interval: float = PURGE_INTERVAL) -> Callable[[Mapping[str, Any], StartResponse], Iterable[bytes]]:
    """The WSGI application of `ca`, `verifier` and `webauthn`, which should share one Store (then
    a nonce, a challenge, a revocation and a counter hold across every worker and host on it). By
    default `webauthn` trusts `ca` alone and keeps its challenges and credentials in ca.store.
    Each process removes expired nonces and challenges at most once per `purge_interval` seconds,
    when it issues one."""
    if webauthn is None:
        webauthn = WebAuthnVerifier([ca.certificate], challenge_lifetime=verifier.nonce_lifetime, store=ca.store)
    return _Service(ca, verifier, webauthn, purge_interval)
