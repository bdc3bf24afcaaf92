"""A trust anchor held by a verifier is read by every thread of a worker at once (serve's 2
threads a worker): with Debian 12's cryptography 38, whose certificate objects read their
extensions under an exclusive borrow, two threads on one anchor failed with RuntimeError
("Already borrowed"), which the service answered 500. The chain's checks of held certificates
read what trusted_set() read once."""
import datetime
import sys
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from verifier_command import SERVER  # noqa: F401  (server/ on sys.path)
from deviceid_verifier import _chain


def _certificate(subject, issuer, key, signer, ca):
    now = datetime.datetime.utcnow()
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)])).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                        critical=True)
    der = builder.sign(signer, hashes.SHA256()).public_bytes(serialization.Encoding.DER)
    return x509.load_der_x509_certificate(der)  # as a verifier loads it: nothing read yet


def test_threads_verify_chains_to_one_held_anchor_at_once():
    root_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    anchors = _chain.trusted_set([_certificate("root", "root", root_key, root_key, True)], "anchor")
    leaves = [_certificate(f"leaf {n}", "root", leaf_key, root_key, False) for n in range(8)]
    failures, start = [], threading.Barrier(len(leaves))

    def verify(leaf):
        start.wait()
        try:
            for _ in range(300):
                assert _chain.verify_chain(leaf, anchors)[-1] is anchors[0]
        except Exception as e:  # noqa: BLE001  (what a request would have answered 500 for)
            failures.append(repr(e))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as the interpreter lets them
    try:
        threads = [threading.Thread(target=verify, args=(leaf,)) for leaf in leaves]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
