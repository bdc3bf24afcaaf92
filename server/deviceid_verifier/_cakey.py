"""The Privacy CA's signing key as an operator keeps it, for every command that signs (`serve`,
`challenge`, `finish`, `crl`) and for `new-ca`, which writes it: a PEM file, unencrypted or an
encrypted PKCS #8 key, or a key in a PKCS #11 token named by an RFC 7512 URI (_pkcs11). The
passphrase (a token's PIN) comes from a file or the environment, never from the command line,
where `ps` and /proc/PID/cmdline show it to every user of the host."""

from __future__ import annotations

import argparse
import os
from typing import Optional

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from . import _pkcs11
from ._ca import CAPrivateKey
from ._inputs import Failure, read

#: The environment variable that may hold the CA key's passphrase (when no file names it). It is
#: removed from the environment once read, so no process the command starts inherits it.
PASSPHRASE_VARIABLE = "DEVICEID_CA_KEY_PASSPHRASE"


def add_options(command: argparse.ArgumentParser) -> None:
    """Add --ca-key (a PEM file or a pkcs11: URI) and --ca-key-passphrase-file to `command`."""
    command.add_argument("--ca-key", required=True,
                         help="the CA's private key: PEM (encrypted PKCS #8 or not), or pkcs11:…?module-path=… "
                              "(RFC 7512) for a key in a token")
    command.add_argument("--ca-key-passphrase-file", metavar="FILE",
                         help=f"a file whose first line is the passphrase of the encrypted CA key or the token's PIN "
                              f"(or ${PASSPHRASE_VARIABLE}; never on the command line)")


def passphrase(args: argparse.Namespace) -> Optional[bytes]:
    """The passphrase (or a token's PIN) --ca-key-passphrase-file or $DEVICEID_CA_KEY_PASSPHRASE gives
    (the file's first line, without its line end), or None when neither does; both is a usage error."""
    variable = os.environ.pop(PASSPHRASE_VARIABLE, None)
    path: Optional[str] = args.ca_key_passphrase_file
    if path is not None and variable is not None:
        raise Failure(f"--ca-key-passphrase-file and ${PASSPHRASE_VARIABLE} both give a passphrase; give one")
    if path is not None:
        text = read(path).split(b"\n", 1)[0]
        text = text[:-1] if text.endswith(b"\r") else text
        if not text:
            raise Failure(f"{path}: the passphrase (its first line) is empty")
        return text
    if variable is not None:
        if not variable:
            raise Failure(f"${PASSPHRASE_VARIABLE} is empty")
        return os.fsencode(variable)
    return None


def load(args: argparse.Namespace, certificate: x509.Certificate) -> CAPrivateKey:
    """The ECDSA or RSA CA key of --ca-key, decrypted with passphrase(args) when it is encrypted;
    for a pkcs11: URI, the token's ECDSA key, logged in with passphrase(args) as the PIN, checked
    to be the key of `certificate`, and closed until it first signs (after gunicorn's fork)."""
    path: str = args.ca_key
    secret = passphrase(args)
    if _pkcs11.is_uri(path):
        return _token_key(path, secret, certificate)
    try:
        key = serialization.load_pem_private_key(read(path), password=secret)
    except TypeError:
        # cryptography's two mismatches: an encrypted key without a passphrase, and the reverse
        if secret is None:
            raise Failure(f"{path} is encrypted: give its passphrase with --ca-key-passphrase-file FILE "
                          f"or ${PASSPHRASE_VARIABLE}") from None
        raise Failure(f"{path} is not encrypted, but a passphrase was given for it") from None
    except (ValueError, UnsupportedAlgorithm):
        raise Failure(f"{path} is not a PEM private key, or the passphrase is not its passphrase") from None
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise Failure(f"{path} is neither an ECDSA nor an RSA key")
    return key


def _token_key(uri: str, pin: Optional[bytes], certificate: x509.Certificate) -> _pkcs11.TokenKey:
    public = certificate.public_key()
    if not isinstance(public, ec.EllipticCurvePublicKey):
        raise Failure("a CA key in a PKCS #11 token must be an ECDSA key (the CA certificate's is not)")
    try:
        _pkcs11.parse_uri(uri)
    except ValueError as e:
        raise Failure(f"--ca-key {uri}: {e}") from None
    if pin is None:
        raise Failure(f"give the PIN of the token of {uri} with --ca-key-passphrase-file FILE or ${PASSPHRASE_VARIABLE}")
    try:
        import PyKCS11  # type: ignore[import]  # noqa: F401  # no type hints; imported to say what is missing
    except ImportError:
        raise Failure("a CA key in a PKCS #11 token needs PyKCS11 (Debian: apt install python3-pykcs11; PyPI: "
                      "pip install 'deviceid-verifier[pkcs11]')") from None
    try:
        key = _pkcs11.TokenKey(uri, pin, public)
        key.check()
    except ValueError as e:
        raise Failure(str(e)) from None
    key.close()
    return key


def pem(key: CAPrivateKey, secret: Optional[bytes]) -> bytes:
    """`key` as PKCS #8 PEM, encrypted under `secret` (OpenSSL's PBES2: AES-256-CBC, PBKDF2) if given."""
    # One class each since cryptography 3.4; the stale stubs that `apt install mypy` brings
    # (types-cryptography 3.3) keep serialization in subclasses. True at run time either way.
    assert isinstance(key, (ec.EllipticCurvePrivateKeyWithSerialization, rsa.RSAPrivateKeyWithSerialization))
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption() if secret is None else serialization.BestAvailableEncryption(secret))
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
