"""The app server's verifier of per-app attestation evidence (TPM2_Certify of the app key by the AK)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Optional, Sequence, Tuple, Union

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from . import _akcert, _ca, _chain, _tpm, _wire
from ._crl import revocation_lists
from ._errors import Rejected
from ._store import MemoryStore, NonceState, Store, Tenant
from ._store._base import ATTESTATION, CheckedAssertion
from ._store._memory import NonceRecord

NONCE_BYTES = 32
_NONCE_STATE = "deviceid.verifier-nonces"


@dataclass(frozen=True)
class Attestation:
    """What a verified piece of evidence establishes.

    `hardware_id` is recomputed from the certified Name (never copied from the JSON);
    `app_id` is the app id the CA certified the AK for, which the evidence claims too. What
    binds the app key to that app id is only the device's honesty (see Verifier.verify)."""

    #: the app id of the AK certificate (and of the evidence; checked against the caller's, if given)
    app_id: str
    #: UUIDv8 of the certified app key Name
    hardware_id: str
    #: the app key's Name, 0x000b ‖ SHA-256(TPMT_PUBLIC)
    app_name: bytes
    #: the app key's marshalled TPMT_PUBLIC
    app_public: bytes
    #: the app key, for verifying the app's own TPM2_Sign signatures later
    app_public_key: ec.EllipticCurvePublicKey
    #: the AK's Name (one AK per app id and TPM)
    ak_name: bytes
    #: the AK certificate, issued by one of the trusted CAs for `app_id`
    ak_certificate: x509.Certificate
    #: TPMS_ATTEST.clockInfo.clock: milliseconds the TPM has been powered since its last
    #: TPM2_Clear, roughly. Not obfuscated: the same for every app's evidence at one moment.
    clock: int
    #: TPMS_ATTEST.clockInfo.safe: whether clock may have gone backwards. Not obfuscated either.
    safe: bool
    #: TPMS_ATTEST.firmwareVersion as the TPM reports it to an owner-hierarchy signer:
    #: obfuscated, i.e. offset by a secret value of the owner hierarchy and the AK's Name. Constant
    #: for one AK while the firmware is unchanged; meaningless across AKs.
    firmware_version: int
    #: When the Verifier shares the issuing PrivacyCA's store: how many AK certificates the CA
    #: issued for this app id to this TPM's EK in the last 30 days (1 for a device that enrolled
    #: once; more for one that re-enrols, as App Attest's risk metric counts). None otherwise.
    risk: Optional[int] = None
    #: When the Verifier shares the issuing PrivacyCA's store: the CA's pseudonym of the EK the AK
    #: certificate was issued to, which PrivacyCA.device_check takes (never shown to app servers).
    ek_pseudonym: Optional[bytes] = field(default=None, repr=False, compare=False)


def request_key(operation: str, request_id: Optional[str], *parts: bytes) -> Optional[bytes]:
    """The digest a spending request's receipt is kept under (docs/SERVER-STATE.md, "Retries"):
    SHA-256 of the operation, the caller's request id and the request's parts, each
    length-prefixed; None without a request id (then no receipt is kept)."""
    if request_id is None:
        return None
    digest = hashlib.sha256()
    for part in (operation.encode(), request_id.encode("utf-8", "surrogatepass"), *parts):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.digest()


def _refusal(state: NonceState) -> Rejected:
    """Why a nonce in `state` (not FRESH, and no receipt for the request) was not spent."""
    if state is NonceState.UNKNOWN:
        return Rejected("nonce-unknown", "this verifier did not issue the nonce for this purpose and app id "
                                         "(or forgot it after its lifetime)")
    if state is NonceState.USED:
        return Rejected("nonce-replayed", "the nonce was already used")
    return Rejected("nonce-expired", "the nonce's lifetime is over")


class _NonceBook:
    """The nonces a verifier issued for one purpose, in its store: each lives `lifetime` and is
    spent by the first spend() of a request that passed every check before it (docs/SERVER-STATE.md,
    "Spending"). Used nonces are kept until they expire, to tell a replay."""

    def __init__(self, store: Store, lifetime: datetime.timedelta, purpose: str) -> None:
        self._store = store
        self._lifetime = lifetime
        self._purpose = purpose

    def issue(self, app_id: Optional[str] = None, tenant: Optional[Tenant] = None) -> bytes:
        """A new nonce; with `tenant`, counted against its issue limit (Rejected "rate-limited",
        with the seconds until its window ends, when it is reached: nothing issued)."""
        nonce, now = os.urandom(NONCE_BYTES), _chain.utcnow()
        if tenant is None:
            self._store.add_nonce(nonce, now + self._lifetime, self._purpose, app_id)
            return nonce
        limited = self._store.add_tenant_nonce(nonce, now + self._lifetime, self._purpose, app_id, tenant.name,
                                               tenant.limit, now)
        if limited is not None:
            wait = max((limited.retry_at - now).total_seconds(), 0.0)
            raise Rejected("rate-limited", f"the tenant {tenant.name!r} was issued {tenant.limit.issued} nonces and "
                                           f"challenges in this window of {tenant.limit.window.total_seconds():.0f} s, "
                                           f"as many as its limit allows; the next may be issued in {wait:.0f} s",
                           retry_after=wait)
        return nonce

    def spend(self, nonce: bytes, app_id: str, key: Optional[bytes], act: Callable[[], bytes]) -> bytes:
        """In one transaction (the request's last use of the store): spend `nonce` for evidence of
        `app_id`, run `act` (the writes the answer reports; it returns the answer to keep) and keep
        that answer under `key`. The answer kept under `key` when the nonce was spent by this very
        request before (its retry); Rejected when the nonce cannot be spent."""
        now = _chain.utcnow()
        with self._store.atomic():
            state = self._store.use_nonce(nonce, now, self._purpose, app_id)
            if state is NonceState.USED and key is not None:
                kept = self._store.receipt(key, now)
                if kept is not None:
                    return kept
            if state is NonceState.FRESH:
                answer = act()
                if key is not None:
                    self._store.add_receipt(key, answer, now + self._lifetime)
                return answer
        # after the block: an expired nonce stays used up, as use_nonce left it
        raise _refusal(state)

    def spend_assertion(self, nonce: bytes, app_id: str, key: Optional[bytes], credential_id: bytes,
                        counter: int) -> bytes:
        """spend() of a WebAuthn challenge whose act is the store's credential counter raised to
        `counter`, as the store's one operation (spend_assertion): the answer, COUNTER_ACCEPTED or
        COUNTER_REFUSED, or the one kept under `key` for this request's retry."""
        now = _chain.utcnow()
        return self.answer(self._store.spend_assertion(nonce, now, app_id, credential_id, counter, key,
                                                       now + self._lifetime))

    def checked_spend_assertion(self, credential_id: bytes, app_id: str, cose_key: bytes, anchors: FrozenSet[bytes],
                                nonce: bytes, counter: int, key: Optional[bytes],
                                now: datetime.datetime) -> CheckedAssertion:
        """The store's checked_spend_assertion of a WebAuthn challenge of this book (answer() says
        what its spending answered)."""
        return self._store.checked_spend_assertion(credential_id, app_id, cose_key, anchors, nonce, now, counter, key,
                                                   now + self._lifetime)

    @staticmethod
    def answer(spent: Tuple[NonceState, Optional[bytes]]) -> bytes:
        """The answer of a spending (its own, or the one kept for this request's retry), or why the
        nonce was not spent (Rejected)."""
        state, answer = spent
        if answer is not None:
            return answer
        raise _refusal(state)

    def _memory(self) -> MemoryStore:
        if not isinstance(self._store, MemoryStore):
            raise TypeError(f"nonce export and import are for a Verifier on its own MemoryStore; this one shares "
                            f"{type(self._store).__name__}")
        return self._store

    def export(self) -> str:
        store = self._memory()
        store.purge(_chain.utcnow())
        nonces = {_wire.b64(n): {"expires": e.expires.isoformat() + "Z", "used": e.used, "purpose": e.purpose,
                                 **({} if e.app_id is None else {"app_id": e.app_id})}
                  for n, e in store.nonces().items()}
        return json.dumps({"v": _wire.VERSION, "type": _NONCE_STATE, "nonces": nonces}, separators=(",", ":"))

    def load(self, state: Union[str, bytes]) -> None:
        store = self._memory()
        loaded: Dict[bytes, NonceRecord] = {}
        try:
            entries = _wire.loads(state, _NONCE_STATE).get("nonces")
            if not isinstance(entries, dict):
                raise ValueError("no \"nonces\" object")
            for key, entry in entries.items():
                nonce = base64.b64decode(key.encode("ascii"), validate=True)
                if not isinstance(entry, dict) or not isinstance(entry.get("used"), bool):
                    raise ValueError(f"the nonce {key} has no expiry time or used flag")
                # a state file of 1.0 has neither: its nonces were all for evidence, of any app
                purpose, app_id = entry.get("purpose", ATTESTATION), entry.get("app_id")
                if not isinstance(purpose, str) or app_id is not None and not isinstance(app_id, str):
                    raise ValueError(f"the nonce {key} has a purpose or app id that is not text")
                loaded[nonce] = NonceRecord(_ca.parse_utc(_wire.text_field(entry, "expires")), entry["used"], purpose,
                                            app_id)
        except (Rejected, ValueError) as e:  # binascii.Error and UnicodeEncodeError are ValueErrors
            raise ValueError(f"not a Verifier nonce state: {e}") from None
        store.merge_nonces(loaded)
        store.purge(_chain.utcnow())


class Verifier:
    """Verifies attestation evidence for an app server that trusts the Privacy CAs whose
    certificates are `ca_certificates`.

    Nonces come from new_nonce(), live `nonce_lifetime`, and are used up by the first verify()
    whose evidence passes every check for them (docs/SERVER-STATE.md, "Spending"). Thread-safe.

    `store` keeps the nonces (docs/SERVER-STATE.md): by default a MemoryStore of this process,
    whose export_nonces() / import_nonces() carry them to the next process (the command line
    keeps them in a file); an SQLiteStore or PostgresStore shares them between workers, each
    nonce accepted once across all. When the store is also the issuing PrivacyCA's, verify()
    rejects revoked AK certificates ("revoked") and reports the enrolment risk figure.
    """

    def __init__(self, ca_certificates: Sequence[x509.Certificate], *,
                 nonce_lifetime: datetime.timedelta = datetime.timedelta(minutes=5),
                 max_nonces: int = 1_000_000,
                 store: Optional[Store] = None, crls: Sequence[bytes] = ()) -> None:
        if not ca_certificates:
            raise ValueError("a Verifier needs at least one CA certificate")
        self._anchors = _chain.trusted_set(ca_certificates, "CA certificate")
        self._crls = revocation_lists(self._anchors, crls)
        self._store: Store = store if store is not None else MemoryStore(max_nonces=max_nonces)
        self._nonces = _NonceBook(self._store, nonce_lifetime, ATTESTATION)
        self._nonce_lifetime = nonce_lifetime

    @property
    def nonce_lifetime(self) -> datetime.timedelta:
        """How long a nonce of new_nonce() lives."""
        return self._nonce_lifetime

    def new_nonce(self, app_id: Optional[str] = None, *, tenant: Optional[Tenant] = None) -> bytes:
        """A fresh 32-byte random nonce, to send to the device and to pass to verify() once; with
        `app_id`, only evidence for that app id can spend it; with `tenant`, counted against its
        issue limit (Rejected "rate-limited" beyond it, with retry_after)."""
        return self._nonces.issue(app_id, tenant)

    def load_crl(self, crl: bytes) -> bool:
        """Hold the CRL `crl` (DER or PEM, as `GET /v1/crl` or `python3 -m deviceid_verifier
        crl` give it) of a trusted CA, in place of an older one: verify() then rejects the AK
        certificates it lists ("revoked"), and every AK certificate of that CA once it is past
        its nextUpdate ("revocation-unknown"). For an app server that does not share the CA's
        store; True if it replaced an older CRL, False if one as new is held; ValueError if it
        is not a current CRL signed by a trusted CA."""
        return self._crls.load(crl)

    def export_nonces(self) -> str:
        """The nonces issued and not yet expired (used or not) as JSON text, for import_nonces()."""
        return self._nonces.export()

    def import_nonces(self, state: Union[str, bytes]) -> None:
        """Add the nonces of export_nonces()'s `state` (a nonce used in either stays used; expired
        ones are dropped); ValueError if it is not such a state."""
        self._nonces.load(state)

    def verify(self, evidence: Union[str, bytes], nonce: bytes, *, app_id: Optional[str] = None,
               request_id: Optional[str] = None) -> Attestation:
        """Verify attestation evidence (JSON) produced for `nonce`; return what it proves, or raise
        Rejected with the reason of the first check that failed.

        The checks: the message is
        a version-1 attestation; its nonce and TPMS_ATTEST.extraData are `nonce`; the AK certificate
        chains to a trusted CA, names the AK sent, and names one app id ("ak-app-id-missing"),
        which is the evidence's app_id and, if `app_id` is given, that one ("app-id-mismatch");
        the AK signed SHA-256(TPMS_ATTEST) with ECDSA P-256; TPMS_ATTEST is TPM-generated, a
        certification, signed by an owner-hierarchy primary of the AK's Name ("ak-hierarchy": only
        then are resetCount, restartCount and firmwareVersion obfuscated); it certifies the app key
        sent, an owner-hierarchy primary of the frozen app key template; and the claimed hardware
        ID is the one of its Name. Last, the nonce: issued here for evidence (of this app id, if
        it was issued for one) and unused; it is spent now, and only now: evidence that fails a
        check before spends nothing. `request_id`, the caller's own for this request, keeps
        the spending's receipt: the same call repeated after a StoreUnavailable (whose commit
        may have reached the database) is answered as the first, not "nonce-replayed".

        What it cannot check: that the app key (or the AK) was derived for the app id. A
        template's unique input is replaced by the public point in the created key, so no TPM
        structure carries the app id; the app id is bound to the AK only by the CA's certificate.
        A device can present a TPM-resident app key of any unique, i.e. any number of hardware IDs
        per app, and can enrol several AKs for one app. The server must therefore compare the
        returned hardware_id with the one it enrolled for this app and user (trust on first use);
        it can count the hardware IDs it accepted per AK name, and the CA can limit the AKs it
        certifies per TPM and app.
        """
        if not isinstance(nonce, bytes):
            raise TypeError("nonce must be bytes")
        message = _wire.loads(evidence, _wire.ATTESTATION)
        claimed_app_id = _wire.text_field(message, "app_id")
        claimed_hardware_id = _wire.text_field(message, "hardware_id")
        evidence_nonce = _wire.bytes_field(message, "nonce")
        app_public = _wire.bytes_field(message, "app_public")
        ak_public = _wire.bytes_field(message, "ak_public")
        attest = _wire.bytes_field(message, "attest")
        signature = _wire.bytes_field(message, "signature")
        ak_certificate_der = _wire.optional_bytes_field(message, "ak_certificate")

        if not hmac.compare_digest(evidence_nonce, nonce):
            raise Rejected("nonce-mismatch", "the evidence answers another nonce")

        # The AK: a certificate from a trusted CA, for exactly this AK public area.
        if ak_certificate_der is None:
            raise Rejected("ak-untrusted", "the evidence has no AK certificate")
        ak_certificate, certified_app_id, record, _, _ = _akcert.trusted(ak_certificate_der, self._anchors,
                                                                         self._store, crls=self._crls)

        # The app id: the one the CA certified this AK for, which the evidence (and the caller) names.
        if claimed_app_id != certified_app_id:
            raise Rejected("app-id-mismatch", f"the evidence claims app id {claimed_app_id!r}, but its AK certificate "
                                              f"was issued for {certified_app_id!r}")
        if app_id is not None and certified_app_id != app_id:
            raise Rejected("app-id-mismatch", f"the evidence is for app id {certified_app_id!r}, not {app_id!r}")

        ak_key = _ca.ak_key_from_public(ak_public, "ak-mismatch")
        certified_key = ak_certificate.public_key()
        if not isinstance(certified_key, ec.EllipticCurvePublicKey) or certified_key.public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint) != ak_key.public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint):
            raise Rejected("ak-mismatch", "the AK certificate is for another key than ak_public")
        ak_name = _tpm.name_of(ak_public)
        certified_name = _akcert.ak_name_of(ak_certificate)
        if certified_name is not None and certified_name != ak_name:
            raise Rejected("ak-mismatch", "the AK certificate names another AK public area")

        # The signature, before anything in TPMS_ATTEST is believed.
        r, s = _tpm.parse_ecdsa_signature(signature)
        try:
            ak_key.verify(encode_dss_signature(r, s), attest, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Rejected("signature", "the AK's signature over TPMS_ATTEST does not verify") from None

        info = _tpm.parse_certify_attest(attest)
        _akcert.check_signer(info, ak_name)
        if not hmac.compare_digest(info.extra_data, nonce):
            raise Rejected("nonce-mismatch", "TPMS_ATTEST.extraData is not the nonce")

        # The app key: the frozen template, certified by Name, an owner-hierarchy primary.
        x, y = _tpm.ecc_point_of_template(app_public, _tpm.APP_KEY_PREFIX, "app-key-template", "the app key public area")
        try:
            app_key = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                                    ec.SECP256R1()).public_key()
        except ValueError:
            raise Rejected("app-key-template", "the app key's public point is not on P-256") from None
        app_name = _tpm.name_of(app_public)
        if info.name != app_name:
            raise Rejected("app-key-mismatch", "the certified Name is not the Name of app_public")
        if info.qualified_name != _tpm.qualified_name_of_primary(_tpm.TPM_RH_OWNER, app_name):
            raise Rejected("app-key-mismatch", "the certified key is not a primary of the owner hierarchy")

        hardware_id = _tpm.hardware_id_from_name(app_name)
        if claimed_hardware_id != hardware_id:
            raise Rejected("hardware-id-mismatch",
                           f"the evidence claims hardware ID {claimed_hardware_id!r}; the certified key gives {hardware_id}")
        risk = None if record is None else self._store.enrolments(record.ek_pseudonym, record.app_id,
                                                                  _chain.utcnow() - _ca.RISK_WINDOW)
        key = request_key("verifyAttestation", request_id, evidence if isinstance(evidence, bytes)
                          else evidence.encode("utf-8", "surrogatepass"), nonce, certified_app_id.encode())
        self._nonces.spend(nonce, certified_app_id, key, lambda: b"")
        return Attestation(
            app_id=certified_app_id, hardware_id=hardware_id, app_name=app_name, app_public=app_public,
            app_public_key=app_key, ak_name=ak_name, ak_certificate=ak_certificate, clock=info.clock,
            safe=info.safe, firmware_version=info.firmware_version, risk=risk,
            ek_pseudonym=None if record is None else record.ek_pseudonym)
