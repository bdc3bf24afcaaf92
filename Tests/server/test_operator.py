"""The operator's commands on a database: what they change, and that every bad operator input is
a usage error (exit 2) with words, never a traceback."""
import pytest

from deviceid_verifier._store._migrations import LATEST, MIGRATIONS
from postgres import free_port
from verifier_command import cli

from deviceid_verifier._store._migrations import LATEST, MIGRATIONS


run = cli


def test_migrate_names_what_it_applied(database_url):
    first = run("migrate", "--database", database_url, "--until", "0001_nonces_and_challenges")
    assert (first.returncode, first.stdout) == (0, "applied 0001_nonces_and_challenges\nat 0001_nonces_and_challenges\n")
    rest = run("migrate", "--database", database_url)
    applied = "".join(f"applied {name}\n" for name, _ in MIGRATIONS[1:])
    assert (rest.returncode, rest.stdout) == (0, f"{applied}at {LATEST}\n")
    again = run("migrate", "--database", database_url)
    assert (again.returncode, again.stdout) == (0, f"at {LATEST}\n")


def test_set_limit_is_kept_in_the_database(database_url):
    result = run("set-limit", "--database", database_url, "--enrolments", "3", "--window", "600")
    assert (result.returncode, result.stdout) == (0, "at most 3 enrolments per TPM and app id in 600 s\n")


def bad_inputs(database_url, postgresql):
    closed = f"postgresql://postgres@127.0.0.1:{free_port()}/deviceid"
    return [
        ("set-limit", "--database", database_url, "--enrolments", "0", "--window", "60"),
        ("set-limit", "--database", database_url, "--enrolments", "nan", "--window", "60"),
        ("set-limit", "--database", database_url, "--enrolments", "1", "--window", "1e400"),
        ("revoke", "--database", database_url, "--serial", "xyz"),
        ("revoke", "--database", database_url, "--serial", "0"),
        ("revoke", "--database", database_url, "--serial", "1" * 41),
        ("revoke", "--database", database_url, "--serial", "abc"),          # never issued
        ("migrate", "--database", database_url, "--until", "0003_no_such"),
        ("migrate", "--database", "mysql://localhost/x"),
        ("migrate", "--database", "sqlite:///nonexistent-directory/x.sqlite3"),
        ("migrate", "--database", closed),
        ("tenant", "add", "a b", "--app", "com.example.a", "--database", database_url),
        ("tenant", "add", "x" * 65, "--app", "com.example.a", "--database", database_url),
        ("tenant", "add", "t", "--app", "bad\u0007id", "--database", database_url),
        ("tenant", "add", "t", "--database", database_url),
        ("tenant", "remove", "nobody", "--database", database_url),
        ("tenant", "--database", database_url),
        ("lift", "--database", database_url, "--serial", "abc"),
        ("crl", "--database", database_url, "--ca-key", "/nonexistent", "--ca-cert", "/nonexistent"),
        ("serve", "--database", database_url, "--ca-key", "/nonexistent", "--ca-cert", "/x", "--ek-anchor", "/x",
         "--bind", "127.0.0.1:1"),
        ("serve", "--database", database_url, "--ca-key", "/x", "--ca-cert", "/x", "--ek-anchor", "/x",
         "--bind", "127.0.0.1:1", "--workers", "0"),
    ]


def test_every_bad_operator_input_is_a_usage_error(database_url, postgresql):
    for argv in bad_inputs(database_url, postgresql):
        result = run(*argv)
        assert result.returncode == 2, (argv, result.returncode, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.strip(), (argv, result.stderr)


@pytest.mark.parametrize("serial", ["ABC", "abc"])
def test_revoking_twice_says_so(database_url, serial):
    from deviceid_verifier import CertificateRecord, Limit, open_store
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    open_store(database_url).add_certificate(
        CertificateRecord(0xABC, b"p" * 32, "com.example.a", b"name", now, now + datetime.timedelta(days=1)),
        Limit(5, datetime.timedelta(days=1)))
    first = run("revoke", "--database", database_url, "--serial", serial, "--reason", "key-compromise")
    assert (first.returncode, first.stdout) == (0, "revoked abc\n")
    second = run("revoke", "--database", database_url, "--serial", serial)
    assert second.returncode == 2 and "already revoked" in second.stderr
