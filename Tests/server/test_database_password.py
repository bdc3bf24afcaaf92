"""`serve` takes the database's password as libpq does — a password file, a service file, the
environment — and never on its command line, where `ps` shows it to every user of the host (issue
51, "Run as production runs it"; docs/SERVER.md, "The database's password"). The role here must
give its password (SCRAM-SHA-256): without one, nothing starts."""
import os
from pathlib import Path

import pytest

from conftest import Service
from verifier_command import cli

PASSWORD = "s3cret-Ohm6ahl1"


@pytest.fixture(scope="module")
def password_database(postgresql):
    """(URL with no password, host, port, database name) of a database only `deviceid_pw` with PASSWORD reaches."""
    url = postgresql.require_password("deviceid_pw", PASSWORD)
    return url, "127.0.0.1", postgresql.port, url.rsplit("/", 1)[1]


def serve_argv(database: str, ca_files, ek_anchors):
    return ["serve", "--database", database, "--ca-key", ca_files[0], "--ca-cert", ca_files[1],
            "--ek-anchor", ek_anchors[0], "--bind", "127.0.0.1:1"]


def command_lines(service: Service) -> str:
    """The command lines of the service's processes (gunicorn's master and its workers), as ps shows them."""
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if os.getpgid(int(cmdline.parent.name)) == service.process.pid:
                lines.append(cmdline.read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue  # ended meanwhile
    assert len(lines) >= 2, lines  # the master and a worker at least
    return "\n".join(lines)


def test_without_a_password_serve_does_not_start(password_database, ca_files, ek_anchors, monkeypatch):
    monkeypatch.setenv("PGPASSFILE", os.devnull)
    refused = cli(*serve_argv(password_database[0], ca_files, ek_anchors))
    assert refused.returncode == 2 and "password" in refused.stderr, refused


def test_a_password_in_the_url_is_refused_without_being_repeated(password_database, ca_files, ek_anchors):
    url, host, port, name = password_database
    refused = cli(*serve_argv(f"postgresql://deviceid_pw:{PASSWORD}@{host}:{port}/{name}", ca_files, ek_anchors))
    assert refused.returncode == 2, refused
    assert "--database holds a password, which ps shows to every user of this host" in refused.stderr
    assert "PGPASSFILE" in refused.stderr and PASSWORD not in refused.stderr + refused.stdout


@pytest.mark.parametrize("way", ["PGPASSFILE", "PGSERVICEFILE", "PGPASSWORD"])
def test_serve_takes_the_password_as_libpq_does_and_ps_never_shows_it(way, password_database, ca_files,
                                                                     ek_anchors, monkeypatch, tmp_path):
    url, host, port, name = password_database
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{host}:{port}:{name}:deviceid_pw:{PASSWORD}\n")
    passfile.chmod(0o600)  # libpq ignores a password file others can read
    monkeypatch.setenv("PGPASSFILE", os.devnull)  # no other way than the one under test
    if way == "PGPASSFILE":
        monkeypatch.setenv("PGPASSFILE", str(passfile))
    elif way == "PGSERVICEFILE":
        services = tmp_path / "pg_service.conf"
        services.write_text(f"[deviceid]\nhost={host}\nport={port}\ndbname={name}\nuser=deviceid_pw\n"
                            f"passfile={passfile}\n")
        monkeypatch.setenv("PGSERVICEFILE", str(services))
        url = "postgresql://?service=deviceid"
    else:
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
    service = Service(url, ca_files, ek_anchors, workers=2)
    try:
        assert service.post("/v1/nonce")[0] == 200
        assert service.get("/v1/health")[0] == 200
        assert PASSWORD not in command_lines(service)
    finally:
        service.stop()
