"""The CRL at fleet size (issue 51, case 9): for 1,000, 10,000 and 100,000 revoked AK
certificates in a PostgreSQL store of its own on loopback, how long the Privacy CA takes to
build and sign its CRL (the first `GET /v1/crl` after a revocation, at the one worker that
builds it), another worker to read the one kept in the store, a worker to serve the one it
keeps (every other request), an app server to load it (Verifier.load_crl) and to check a
serial against it. Best of three each; prints a Markdown table.

    /usr/bin/python3 bench/crl.py"""
import datetime
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "server"), os.path.join(ROOT, "Tests", "server"), os.path.join(ROOT, "Tests", "tpm")]

from cryptography import x509  # noqa: E402

import deviceid_verifier as dv  # noqa: E402
from deviceid_verifier._store._sql import micros  # noqa: E402
from machines import make_ca_certificate  # noqa: E402
from postgres import PostgreSQL  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
CHECKS = 10_000


def best(run, times=3):
    """The shortest of `times` runs of run(), in seconds, and its last result."""
    took, result = [], None
    for _ in range(times):
        start = time.perf_counter()
        result = run()
        took.append(time.perf_counter() - start)
    return min(took), result


def revoked(store, count):
    """`count` revoked certificates written straight into the store's table (revoke() one by one
    would be the operator's pace, not the CRL's)."""
    now, day = micros(datetime.datetime.utcnow()), 86_400_000_000
    serials = [x509.random_serial_number() for _ in range(count)]
    with store._tx() as cursor:
        for start in range(0, count, 1000):
            batch = serials[start:start + 1000]
            cursor.execute("INSERT INTO certificates (serial, ek_pseudonym, app_id, ak_name, issued, not_after, "
                           "revoked, revocation_reason) VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(batch)),
                           [v for s in batch for v in (format(s, "x"), s.to_bytes(20, "big"), "com.example.bench",
                                                       b"n", now, now + day, now, "superseded")])
    return serials


def row(count, postgresql, key, certificate):
    url = postgresql.new_database()
    store = dv.open_store(url)
    serials = revoked(store, count)

    def build():
        with store._tx() as cursor:  # forget the one kept, as a revocation would make it stale
            cursor.execute("DELETE FROM published_crl")
        return dv.PrivacyCA(key, certificate, [certificate], store=store).published_crl()

    built, der = best(build)
    read, _ = best(lambda: dv.PrivacyCA(key, certificate, [certificate], store=dv.open_store(url)).published_crl())
    worker = dv.PrivacyCA(key, certificate, [certificate], store=store)
    worker.published_crl()
    served, _ = best(worker.published_crl, times=20)
    loaded, verifier = best(lambda: dv.Verifier([certificate], crls=[der]))
    [anchor] = verifier._crls._held
    miss, _ = best(lambda: [verifier._crls.check_issued_by(anchor, serial) for serial in range(1, CHECKS + 1)])
    hit, _ = best(lambda: [_rejected(verifier, anchor, serial) for serial in serials[:CHECKS]])
    return (f"| {count:,} | {len(der) / 1e6:.2f} MB | {built:.3f} s | {read * 1e3:.0f} ms | {served * 1e3:.1f} ms "
            f"| {loaded:.3f} s | {miss / CHECKS * 1e6:.1f} µs | {hit / CHECKS * 1e6:.1f} µs |")


def _rejected(verifier, anchor, serial):
    try:
        verifier._crls.check_issued_by(anchor, serial)
    except dv.Rejected:
        return
    raise AssertionError(f"{serial:x} is on the CRL and was not refused")


def main():
    key, certificate = make_ca_certificate("deviceid bench CRL CA")
    postgresql = PostgreSQL()
    try:
        rows = [row(count, postgresql, key, certificate) for count in SIZES]
    finally:
        postgresql.stop()
    print(f"CRL at fleet size (bench/crl.py, {time.strftime('%Y-%m-%d')}; PostgreSQL on loopback, best of three, "
          f"{os.cpu_count()} cores):")
    print()
    print("| revoked | CRL | build and sign (first GET /v1/crl after a revocation) | read the kept one (another "
          "worker's first GET) | serve the one held (every other GET) | load_crl | check, not listed | "
          "check, listed |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
