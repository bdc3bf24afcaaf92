"""python3 -m deviceid_verifier: the Privacy CA and the verifier on the command line, for operators
and shell tests. Messages go through standard input and output; state lives in files.

    new-ca    --key KEY.pem --cert CERT.pem --name NAME [--days N] [--ca-key-passphrase-file FILE]
              a new ECDSA P-256 CA key (mode 0600) and self-signed certificate; neither file may exist
    challenge --ca-key K --ca-cert C --ek-anchor PEM [--ek-anchor PEM...] [--ek-intermediate PEM...]
              [--ek-kind KIND...] [--out-of-band-ek-cert PEM...] [--platform-ak-anchor PEM...]
              --state STATE.json  < enrolment-request  > enrolment-challenge
    finish    --ca-key K --ca-cert C --state STATE.json  < enrolment-response  > ak-certificate
    nonce     --state NONCES.json [--lifetime SECONDS]   prints a base64 nonce and remembers it
    verify    --ca-cert C [--ca-cert C...] --state NONCES.json [--app-id APP] [--crl CRL...]  < evidence
              prints {"hardware_id": ..., "app_id": ...}

    serve     --database URL --ca-key K --ca-cert C --ek-anchor PEM [challenge's other trust options]...
              --bind HOST:PORT [--workers N] [--metrics-bind HOST:PORT]
              the HTTP service (gunicorn) on a shared database; Prometheus metrics on their own bind
    migrate   --database URL [--until NAME]    apply the schema's missing migrations
    revoke    --database URL --serial HEX [--reason TEXT]
    set-limit --database URL --enrolments N --window SECONDS
    tenant    add NAME --app APP_ID [--app APP_ID...] [--issued N --window SECONDS] | list | remove NAME |
              set-limit NAME --issued N --window SECONDS   (each with --database URL)
    crl       --database URL --ca-key K --ca-cert C [--days N] [--der]   the CRL, PEM by default

Every command that takes --ca-key takes an encrypted PKCS #8 key too, its passphrase from the first
line of --ca-key-passphrase-file FILE or from $DEVICEID_CA_KEY_PASSPHRASE, never from the command
line (new-ca encrypts the key it writes with the same), and a key in a PKCS #11 token as an RFC 7512
URI, pkcs11:token=…;object=…?module-path=…, the token's PIN given as that passphrase
(docs/SERVER.md, "The CA key").

A state file is created with mode 0600 (the CA's holds the pending challenges' secrets), locked
while in use, and rewritten in place. A PEM file may hold several certificates.

Exit status: 0 on success; 1 when a message is rejected, with {"rejected": REASON, "message":
TEXT} on standard error (REASON is one of deviceid_verifier.REASONS); 2 for a usage error or a
file that cannot be read or written.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import sys
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from . import _cakey, _operator, _verify, _wire
from ._service._serve import add_command as _service_command
from ._ca import PrivacyCA
from ._errors import Rejected
from ._inputs import Failure as _Failure, add_trust_options as _add_trust_options, certificates as _certificates
from ._inputs import read as _read, trust as _trust
from ._store import MemoryStore
from ._store._base import ATTESTATION

PROGRAM = "python3 -m deviceid_verifier"


def _privacy_ca(args: argparse.Namespace, anchors: Sequence[x509.Certificate] = (), **trust: Any) -> PrivacyCA:
    certificate = _certificates([args.ca_cert])[0]
    try:
        return PrivacyCA(_cakey.load(args, certificate), certificate, anchors, **trust)
    except ValueError as e:
        raise _Failure(str(e)) from None


class _State:
    """The text of a locked state file ("" when new); what `text` holds at the end is written back."""

    def __init__(self, text: str) -> None:
        self.text = text


@contextlib.contextmanager
def _state_file(path: str) -> Iterator[_State]:
    """Open (or create, mode 0600) and lock the state file at `path`; write the state back on
    leaving, also when leaving by an exception."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise _Failure(f"cannot open the state file {path}: {e.strerror}") from None
    try:
        os.fchmod(fd, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        try:
            original = b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise _Failure(f"the state file {path} is not UTF-8 text") from None
        state = _State(original)
        try:
            yield state
        finally:
            if state.text != original:
                data = state.text.encode("utf-8")
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                while data:
                    data = data[os.write(fd, data):]
                os.fsync(fd)
    except OSError as e:
        raise _Failure(f"the state file {path}: {e.strerror}") from None
    finally:
        os.close(fd)


def _load_state(load: Callable[[str], None], state: _State, path: str) -> None:
    if state.text.strip():
        try:
            load(state.text)
        except ValueError as e:
            raise _Failure(f"{path}: {e}") from None


def _stdin() -> bytes:
    return sys.stdin.buffer.read()


def _new_ca(args: argparse.Namespace) -> None:
    for path in (args.key, args.cert):
        if os.path.lexists(path):
            raise _Failure(f"{path} exists; new-ca writes new files only")
    secret = _cakey.passphrase(args)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, args.name)])
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=args.days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    files = [
        (args.key, 0o600, _cakey.pem(key, secret)),
        (args.cert, 0o644, certificate.public_bytes(serialization.Encoding.PEM)),
    ]
    for path, mode, data in files:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as e:
            raise _Failure(f"cannot write {path}: {e.strerror}") from None


def _challenge(args: argparse.Namespace) -> None:
    ca = _privacy_ca(args, _certificates(args.ek_anchor), **_trust(args))
    request = _stdin()
    with _state_file(args.state) as state:
        _load_state(ca.import_pending, state, args.state)
        challenge = ca.challenge(request)
        state.text = ca.export_pending()
    print(challenge)


def _finish(args: argparse.Namespace) -> None:
    ca = _privacy_ca(args)
    response = _stdin()
    with _state_file(args.state) as state:
        _load_state(ca.import_pending, state, args.state)
        try:
            certificate = ca.finish(response)
        finally:
            state.text = ca.export_pending()
    print(certificate)


def _nonce(args: argparse.Namespace) -> None:
    book = _verify._NonceBook(MemoryStore(), datetime.timedelta(seconds=args.lifetime), ATTESTATION)
    with _state_file(args.state) as state:
        _load_state(book.load, state, args.state)
        try:
            nonce = book.issue()
        except RuntimeError as e:
            raise _Failure(str(e)) from None
        state.text = book.export()
    print(_wire.b64(nonce))


def _verify_evidence(args: argparse.Namespace) -> None:
    verifier = _verify.Verifier(_certificates(args.ca_cert))
    for path in args.crl or []:
        try:
            verifier.load_crl(_read(path))
        except ValueError as e:
            raise _Failure(f"{path}: {e}") from None
    evidence = _stdin()
    nonce = _wire.bytes_field(_wire.loads(evidence, _wire.ATTESTATION), "nonce")
    with _state_file(args.state) as state:
        _load_state(verifier.import_nonces, state, args.state)
        try:
            result = verifier.verify(evidence, nonce, app_id=args.app_id)
        finally:
            state.text = verifier.export_nonces()
    print(json.dumps({"hardware_id": result.hardware_id, "app_id": result.app_id}))


def _within(kind: Callable[[str], float], low: float, high: float, what: str) -> Callable[[str], float]:
    """An argparse type: a number of `kind` from `low` to `high`, else a usage error (exit 2).
    NaN and infinities are outside every range (a nanosecond lifetime, or one past year 9999,
    ended in a traceback)."""
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, not {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be {low:.12g} to {high:.12g}, not {text}")
        return value
    return parse


#: 100 years: the longest CA certificate new-ca makes (its end stays far before year 9999).
MAX_CA_DAYS = 36_500
#: A year: the longest a nonce may live.
MAX_NONCE_SECONDS = 366 * 86_400


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="DeviceID's TPM attestation: Privacy CA and verifier.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    new_ca = commands.add_parser("new-ca", help="create an ECDSA P-256 CA key and self-signed certificate")
    new_ca.add_argument("--key", required=True,
                        help="the private key to write (PKCS #8 PEM, mode 0600; encrypted when a passphrase is given)")
    new_ca.add_argument("--ca-key-passphrase-file", metavar="FILE",
                        help=f"encrypt the key with the first line of FILE (or ${_cakey.PASSPHRASE_VARIABLE}) as "
                             "its passphrase")
    new_ca.add_argument("--cert", required=True, help="the certificate to write (PEM)")
    new_ca.add_argument("--name", required=True, help="the CA's common name")
    new_ca.add_argument("--days", type=_within(int, 1, MAX_CA_DAYS, "--days"), default=3650,
                        help=f"validity in days, 1 to {MAX_CA_DAYS} (default 3650)")
    new_ca.set_defaults(run=_new_ca)

    def ca_options(command: argparse.ArgumentParser) -> None:
        _cakey.add_options(command)
        command.add_argument("--ca-cert", required=True, help="the CA's certificate (PEM)")
        command.add_argument("--state", required=True, help="the pending challenges (JSON, mode 0600)")

    challenge = commands.add_parser("challenge", help="answer an enrolment request (stdin) with a challenge")
    ca_options(challenge)
    _add_trust_options(challenge)
    challenge.set_defaults(run=_challenge)

    finish = commands.add_parser("finish", help="answer an enrolment response (stdin) with an AK certificate")
    ca_options(finish)
    finish.set_defaults(run=_finish)

    nonce = commands.add_parser("nonce", help="issue a nonce (base64) and remember it")
    nonce.add_argument("--state", required=True, help="the issued nonces (JSON, mode 0600)")
    nonce.add_argument("--lifetime", type=_within(float, 0.001, MAX_NONCE_SECONDS, "--lifetime"), default=300.0,
                       help=f"seconds the nonce lives, 0.001 to {MAX_NONCE_SECONDS} (default 300)")
    nonce.set_defaults(run=_nonce)

    verify = commands.add_parser("verify", help="verify attestation evidence (stdin)")
    verify.add_argument("--ca-cert", action="append", required=True, help="a trusted Privacy CA (PEM; repeatable)")
    verify.add_argument("--state", required=True, help="the issued nonces (JSON, as written by nonce)")
    verify.add_argument("--app-id", help="the app id the evidence must be for")
    verify.add_argument("--crl", action="append",
                        help="a current CRL of a trusted CA (DER or PEM, as `crl` or GET /v1/crl give it; repeatable)")
    verify.set_defaults(run=_verify_evidence)

    _service_command(commands, _within)
    _operator.add_commands(commands, _within)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], None] = args.run
    try:
        run(args)
    except Rejected as e:
        report: Dict[str, str] = {"rejected": e.reason, "message": e.message}
        print(json.dumps(report), file=sys.stderr)
        return 1
    except _Failure as e:
        print(f"{PROGRAM}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
