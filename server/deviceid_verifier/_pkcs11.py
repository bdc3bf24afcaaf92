"""A CA key in a PKCS #11 token (an HSM, a smart card; SoftHSM2 in the tests), named by an RFC 7512
URI such as `pkcs11:token=deviceid;object=ca?module-path=/usr/lib/softhsm/libsofthsm2.so`, and
reached through PyKCS11 (Debian's python3-pykcs11). The key never leaves the token: TokenKey is an
EllipticCurvePrivateKey whose sign() asks the token, and cryptography's certificate and CRL
builders sign through any such object (they call its sign(); true of cryptography 35 and later,
and tested on Debian's 38). Its public key is the CA certificate's, which a signature made at
load time proves the token's key matches.

No PKCS #11 state crosses a fork: the token is opened in the process that signs, again after a
fork (a gunicorn worker), and closed by the loading process before its workers start. One
session per process, used under a lock (a session is not for two threads at once)."""

from __future__ import annotations

import os
import threading
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

from ._store._sql import StoreUnavailable

#: RFC 7512 §2.3's path attributes that choose the token, and the key's own.
_TOKEN_ATTRIBUTES = {"token": "label", "manufacturer": "manufacturerID", "model": "model", "serial": "serialNumber"}
_KEY_ATTRIBUTES = {"object", "id", "type"}


class TokenUnavailable(StoreUnavailable):
    """The token did not sign (gone, locked, its module failed): the service answers 503, as for a
    database that does not answer."""


def is_uri(text: str) -> bool:
    return text.startswith("pkcs11:")


def parse_uri(text: str) -> Tuple[str, Dict[str, str], Optional[str], Optional[bytes]]:
    """(module path, {CK_TOKEN_INFO field: value}, the key's label, the key's id) of an RFC 7512
    URI; ValueError for what this CA cannot use. The PIN is not taken from the URI (pin-value puts
    it on the command line): it comes as the CA key's passphrase."""
    path, _, query = text[len("pkcs11:"):].partition("?")
    token: Dict[str, str] = {}
    label: Optional[str] = None
    key_id: Optional[bytes] = None
    for part in filter(None, path.split(";")):
        name, equals, raw = part.partition("=")
        if not equals:
            raise ValueError(f"{part!r} in the PKCS #11 URI is not NAME=VALUE")
        if name in _TOKEN_ATTRIBUTES:
            token[_TOKEN_ATTRIBUTES[name]] = urllib.parse.unquote(raw, errors="strict")
        elif name == "object":
            label = urllib.parse.unquote(raw, errors="strict")
        elif name == "id":
            key_id = urllib.parse.unquote_to_bytes(raw)
        elif name == "type":
            if raw != "private":
                raise ValueError(f"the CA key is a private key, not type={raw}")
        else:
            raise ValueError(f"the PKCS #11 URI attribute {name!r} is not one this CA reads "
                             f"({', '.join(sorted([*_TOKEN_ATTRIBUTES, *_KEY_ATTRIBUTES]))})")
    module: Optional[str] = None
    for name, values in urllib.parse.parse_qs(query, keep_blank_values=True, strict_parsing=bool(query)).items():
        if name == "module-path" and len(values) == 1:
            module = values[0]
        elif name in ("pin-value", "pin-source"):
            raise ValueError(f"{name} has no place in the URI: the PIN comes from --ca-key-passphrase-file "
                             "or $DEVICEID_CA_KEY_PASSPHRASE")
        else:
            raise ValueError(f"the PKCS #11 URI query attribute {name!r} is not one this CA reads (module-path)")
    if module is None:
        raise ValueError("the PKCS #11 URI names no module: add ?module-path=/path/to/the/token's/module.so")
    if label is None and key_id is None:
        raise ValueError("the PKCS #11 URI names no key: add object=LABEL or id=%XX…")
    return module, token, label, key_id


class TokenKey(ec.EllipticCurvePrivateKey):
    """The ECDSA key `uri` names, logged in with `pin`, whose public key is `public_key` (the CA
    certificate's). Open it with check(), which proves the two match, then close()."""

    def __init__(self, uri: str, pin: bytes, public_key: ec.EllipticCurvePublicKey) -> None:
        self._module, self._token, self._label, self._id = parse_uri(uri)
        self._uri = uri
        self._pin = pin
        self._public_key = public_key
        self._lock = threading.Lock()
        self._opened: Optional[Tuple[int, Any, Any, Any]] = None  # (pid, library, session, key handle)

    def _open(self) -> Tuple[Any, Any]:
        """(session, key handle) of this process, opening the token after a fork; ValueError saying why not."""
        if self._opened is not None and self._opened[0] == os.getpid():
            return self._opened[2], self._opened[3]
        self._opened = None  # the parent's: its module state is the parent's, never used here
        import PyKCS11  # type: ignore[import]  # PyKCS11 has no type hints
        library = PyKCS11.PyKCS11Lib()
        try:
            library.load(self._module)
            slots = [slot for slot in library.getSlotList(tokenPresent=True) if self._is_ours(library, slot)]
            if len(slots) != 1:
                raise ValueError(f"{len(slots)} tokens match {self._uri} (one must)")
            session = library.openSession(slots[0])
            try:
                session.login(self._pin.decode("utf-8", "surrogateescape"))
            except PyKCS11.PyKCS11Error as e:
                if e.value != PyKCS11.CKR_USER_ALREADY_LOGGED_IN:
                    raise
            template: List[Tuple[int, Any]] = [(PyKCS11.CKA_CLASS, PyKCS11.CKO_PRIVATE_KEY),
                                               (PyKCS11.CKA_KEY_TYPE, PyKCS11.CKK_EC)]
            if self._label is not None:
                template.append((PyKCS11.CKA_LABEL, self._label))
            if self._id is not None:
                template.append((PyKCS11.CKA_ID, tuple(self._id)))
            keys = session.findObjects(template)
            if len(keys) != 1:
                raise ValueError(f"{len(keys)} ECDSA private keys in the token match {self._uri} (one must)")
        except (PyKCS11.PyKCS11Error, ValueError) as e:
            library.lib.Unload()  # now, not when collected: a module loaded anew reads its configuration anew
            if isinstance(e, ValueError):
                raise
            raise ValueError(f"the PKCS #11 token of {self._uri}: {e}") from None
        self._opened = (os.getpid(), library, session, keys[0])
        return session, keys[0]

    def _drop(self) -> None:
        """Close this process's session and unload the module (C_Finalize), if it opened them."""
        if self._opened is not None and self._opened[0] == os.getpid():
            library, session = self._opened[1], self._opened[2]
            try:
                session.closeSession()
            except Exception:  # a token already gone: unloading is all that is left to do
                pass
            library.lib.Unload()
        self._opened = None

    def _is_ours(self, library: Any, slot: Any) -> bool:
        info = library.getTokenInfo(slot)
        return all(str(getattr(info, field)).rstrip(" \0") == value for field, value in self._token.items())

    def check(self) -> None:
        """Open the token and sign once: ValueError unless the token's key is the CA certificate's."""
        probe = b"deviceid-verifier: the CA key in the token is the CA certificate's key"
        with self._lock:
            self._open()
        try:
            self._public_key.verify(self.sign(probe, ec.ECDSA(hashes.SHA256())), probe, ec.ECDSA(hashes.SHA256()))
        except TokenUnavailable as e:
            raise ValueError(str(e)) from None
        except InvalidSignature:
            raise ValueError(f"the key {self._uri} is not the key of the CA certificate") from None

    def close(self) -> None:
        """Log out and unload the module, so that no PKCS #11 state crosses a fork (the next sign() opens again)."""
        with self._lock:
            self._drop()

    # -- ec.EllipticCurvePrivateKey -----------------------------------------------------------

    def sign(self, data: bytes, signature_algorithm: ec.EllipticCurveSignatureAlgorithm) -> bytes:
        """An ECDSA signature (DER) of `data` by the token: hashed here, signed there (CKM_ECDSA,
        which every token with EC keys has)."""
        if not isinstance(signature_algorithm, ec.ECDSA) or not isinstance(signature_algorithm.algorithm,
                                                                            hashes.HashAlgorithm):
            raise ValueError("a CA key in a token signs ECDSA only")
        digest = hashes.Hash(signature_algorithm.algorithm)
        digest.update(data)
        with self._lock:
            try:
                session, key = self._open()
                import PyKCS11
                raw = bytes(session.sign(key, digest.finalize(), PyKCS11.Mechanism(PyKCS11.CKM_ECDSA)))
            except Exception as e:  # the module's errors (PyKCS11Error) and what _open says
                self._drop()  # open again next time: the token may come back
                raise TokenUnavailable(f"the CA key's token did not sign: {e}") from None
        half = len(raw) // 2
        return utils.encode_dss_signature(int.from_bytes(raw[:half], "big"), int.from_bytes(raw[half:], "big"))

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._public_key

    @property
    def curve(self) -> ec.EllipticCurve:
        return self._public_key.curve

    @property
    def key_size(self) -> int:
        return self._public_key.curve.key_size

    def exchange(self, algorithm: ec.ECDH, peer_public_key: ec.EllipticCurvePublicKey) -> bytes:
        raise ValueError("the CA key in the token signs only")

    def private_numbers(self) -> ec.EllipticCurvePrivateNumbers:
        raise ValueError("a key in a PKCS #11 token does not leave it")

    def private_bytes(self, encoding: serialization.Encoding, format: serialization.PrivateFormat,
                      encryption_algorithm: serialization.KeySerializationEncryption) -> bytes:
        raise ValueError("a CA key in a PKCS #11 token does not leave it, so no pseudonym key can be derived "
                         "from it: give serve --pseudonym-key FILE")
