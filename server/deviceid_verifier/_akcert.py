"""The AK certificate as an app server checks it, for both evidence formats (v1 evidence and
WebAuthn's "tpm" attestation): it chains to a trusted Privacy CA, is an attestation key's
certificate, is not revoked, and names the one app id its AK was enrolled for; and, at each
assertion of a credential it certified, what can change after registration: its expiry, its
CA's trust, its revocation."""

from __future__ import annotations

import datetime
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Set

from cryptography import x509

from . import _ca, _chain, _tpm
from ._crl import RevocationLists, ca_key_id
from ._errors import Rejected
from ._store import Ban, CertificateRecord, Store


class TrustedAK(NamedTuple):
    """An AK certificate that passed trusted()."""
    certificate: x509.Certificate
    #: the app id it names
    app_id: str
    #: the issuing CA's record of it, when the store is that CA's
    record: Optional[CertificateRecord]
    #: ca_key_id of the trusted CA its chain ended at
    anchor: bytes
    #: the earliest notAfter on its chain below that CA: when it stops being valid
    not_after: datetime.datetime


def trusted(der: bytes, anchors: Sequence[x509.Certificate], store: Store,
            intermediates: Sequence[x509.Certificate] = (), crls: Optional[RevocationLists] = None) -> TrustedAK:
    """The AK certificate in `der`, checked. Rejected "malformed", "ak-untrusted", "revoked" (by
    the store's record or a CRL held in `crls`), "revocation-unknown" or "ak-app-id-missing"."""
    try:
        certificate = _chain.load_der(der)
    except _chain.ChainError as e:
        raise Rejected("malformed", f"ak_certificate: {e}") from None
    try:
        path = _chain.verify_chain(certificate, anchors, intermediates)
        usages = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except _chain.ChainError as e:
        raise Rejected("ak-untrusted", f"the AK certificate does not chain to a trusted CA: {e}") from None
    except x509.ExtensionNotFound:
        raise Rejected("ak-untrusted", "the AK certificate has no extendedKeyUsage tcg-kp-AIKCertificate") from None
    if _ca.TCG_KP_AIK_CERTIFICATE not in usages:
        raise Rejected("ak-untrusted", "the AK certificate is not for an attestation key (tcg-kp-AIKCertificate)")
    record = store.certificate(certificate.serial_number)
    if record is not None:
        check_record(record, store.banned)
    if crls is not None:
        crls.check(certificate)
    try:
        if not certificate.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature:
            raise Rejected("ak-untrusted", "the AK certificate's keyUsage lacks digitalSignature")
    except x509.ExtensionNotFound:
        pass
    return TrustedAK(certificate, certified_app_id(certificate), record, ca_key_id(path[-1]),
                     min(_chain.not_after(c) for c in path[:-1] or path))


def anchors_by_key(anchors: Sequence[x509.Certificate]) -> Dict[bytes, List[x509.Certificate]]:
    """The trusted CA certificates by ca_key_id (a CA re-issued with its key has several)."""
    by_key: Dict[bytes, List[x509.Certificate]] = {}
    for anchor in anchors:
        by_key.setdefault(ca_key_id(anchor), []).append(anchor)
    return by_key


def trusted_anchors(anchors: Dict[bytes, List[x509.Certificate]], now: datetime.datetime) -> Set[bytes]:
    """The key ids of the CAs in `anchors` valid at `now` (one of their certificates is)."""
    return {key for key, certificates in anchors.items()
            if any(_chain.not_before(a) <= now <= _chain.not_after(a) for a in certificates)}


def still_trusted(serial: int, anchor: bytes, not_after: datetime.datetime,
                  anchors: Dict[bytes, List[x509.Certificate]], record: Optional[CertificateRecord],
                  banned: Callable[[bytes, str], Optional[Ban]], crls: RevocationLists, now: datetime.datetime) -> None:
    """Whether the AK certificate `serial`, which chained to the CA `anchor` (ca_key_id) and is
    valid until `not_after` (what trusted() found at registration), and whose record in the
    store is `record` (None: the store is not its CA's) and `banned` its device's ban, still passes at `now`:
    Rejected "ak-untrusted" once that CA is no longer among `anchors` (a rotation finished) or
    no longer valid, or once the certificate expired; "revoked" by the store's record or that
    CA's CRL held in `crls`; "revocation-unknown" if that CRL is past its nextUpdate. The expiry
    is what keeps a revoked certificate out after its CA's CRL dropped it (RFC 5280 §3.3
    allows that once it expired)."""
    if anchor not in trusted_anchors(anchors, now):
        raise Rejected("ak-untrusted", f"the CA that issued the AK certificate {serial:x} is no longer one this "
                                       "verifier trusts (or its certificate expired): the device enrols with a "
                                       "trusted CA and registers again")
    if now > not_after:
        raise Rejected("ak-untrusted", f"the AK certificate {serial:x} that certified the credential expired at "
                                       f"{not_after.isoformat()}Z: the device enrols and registers again")
    if record is not None:  # the issuing CA's record of it, when the store is that CA's
        check_record(record, banned)
    crls.check_issued_by(anchor, serial)


def check_record(record: CertificateRecord, banned: Callable[[bytes, str], Optional[Ban]]) -> None:
    """Rejected("revoked") if the issuing CA's store revoked this certificate, or its device for
    its app id (a certificate of the same TPM, docs/SERVER-STATE.md invariant 6): `banned`, the
    store's banned() or what was read with the record."""
    if record.revoked is not None:
        raise Rejected("revoked", f"the AK certificate {record.serial:x} was revoked "
                                  f"({record.revocation_reason or 'no reason given'})")
    ban = banned(record.ek_pseudonym, record.app_id)
    if ban is not None:
        raise Rejected("revoked", f"the device of the AK certificate {record.serial:x} was revoked for this app id "
                                  f"(with the AK certificate {ban.serial:x}: {ban.reason or 'no reason given'})")


def certified_app_id(certificate: x509.Certificate) -> str:
    """The app id the AK certificate names; Rejected("ak-app-id-missing") unless it names
    exactly one, by a canonical app-id URI."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        raise Rejected("ak-app-id-missing", "the AK certificate has no subjectAltName, so it names no app id") from None
    uris = [uri for uri in names.get_values_for_type(x509.UniformResourceIdentifier)
            if uri.startswith(_ca.APP_ID_URI_PREFIX)]
    if len(uris) != 1:
        raise Rejected("ak-app-id-missing", f"the AK certificate has {len(uris)} {_ca.APP_ID_URI_PREFIX} URIs, not one")
    app_id = _ca.app_id_of_uri(uris[0])
    if app_id is None:
        raise Rejected("ak-app-id-missing", f"the AK certificate's URI {uris[0]!r} does not name a valid app id "
                                            "in canonical percent-encoding")
    return app_id


def ak_name_of(certificate: x509.Certificate) -> Optional[bytes]:
    """The AK Name the certificate's urn:deviceid:ak-name: URI gives; None without one."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    for uri in names.get_values_for_type(x509.UniformResourceIdentifier):
        if uri.startswith(_ca.AK_NAME_URI_PREFIX):
            try:
                return bytes.fromhex(uri[len(_ca.AK_NAME_URI_PREFIX):])
            except ValueError:
                return None
    return None


def check_signer(info: _tpm.CertifyInfo, ak_name: bytes) -> None:
    """Rejected("ak-hierarchy") unless TPMS_ATTEST.qualifiedSigner is the AK of `ak_name` as a
    primary of the owner hierarchy: only then are resetCount, restartCount and firmwareVersion
    obfuscated, so that they cannot link a device's apps."""
    if info.qualified_signer == _tpm.qualified_name_of_primary(_tpm.TPM_RH_OWNER, ak_name):
        return
    where = "another hierarchy or no primary"
    for handle, hierarchy in ((_tpm.TPM_RH_ENDORSEMENT, "the endorsement hierarchy"),
                              (_tpm.TPM_RH_PLATFORM, "the platform hierarchy")):
        if info.qualified_signer == _tpm.qualified_name_of_primary(handle, ak_name):
            where = f"a primary of {hierarchy}, whose attestations are not obfuscated"
    raise Rejected("ak-hierarchy", f"TPMS_ATTEST.qualifiedSigner is not the AK as a primary of the owner "
                                   f"hierarchy: it is {where}")
