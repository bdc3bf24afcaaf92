"""A PostgreSQL server of its own, on 127.0.0.1: initdb and pg_ctl as the `postgres` user (PostgreSQL
refuses root), trust authentication for its superuser on loopback. Used by Tests/server and by
bench/server.py."""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

TIMEOUT = 60


class Missing(Exception):
    """A component this needs is not installed."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PG_BIN = Path("/usr/lib/postgresql")
PG_USER = "postgres"


def _pg_tool(name: str) -> str:
    versions = sorted(PG_BIN.glob("*/bin/" + name)) if PG_BIN.exists() else []
    if not versions:
        raise Missing(f"PostgreSQL's {name} is missing (Debian: apt-get install postgresql)")
    return str(versions[-1])


class PostgreSQL:
    """A PostgreSQL cluster in a temporary directory, listening on 127.0.0.1:port only, trust
    authentication for its own superuser (loopback, this test's cluster)."""

    def __init__(self) -> None:
        try:
            self.user = pwd.getpwnam(PG_USER)
        except KeyError:
            raise Missing("no postgres user (Debian's postgresql package creates it)")
        self.dir = Path(tempfile.mkdtemp(prefix="deviceid-pg-"))
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.data = self.dir / "data"
        self.port = free_port()
        self._as_postgres([_pg_tool("initdb"), "-D", str(self.data), "-U", PG_USER, "--auth=trust", "-E", "UTF8",
                           "--no-sync"])
        self._as_postgres([_pg_tool("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-t", "60",
                           "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=on "
                                 f"-c max_connections=200", "start"])
        self.url_base = f"postgresql://{PG_USER}@127.0.0.1:{self.port}"
        self.databases = 0

    def _as_postgres(self, argv):
        result = subprocess.run(["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}",
                                 "--init-groups", *argv], capture_output=True, text=True, timeout=TIMEOUT,
                                cwd=self.dir, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"})
        assert result.returncode == 0, f"{argv[0]} failed:\n{result.stdout}\n{result.stderr}"
        return result

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        import psycopg
        self.databases += 1
        name = f"deviceid{self.databases}"
        with psycopg.connect(self.url_base + "/postgres", autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return f"{self.url_base}/{name}"

    def processes(self) -> list:
        """The pids of every process of this cluster: the postmaster (postmaster.pid's first line)
        and its children (backends, checkpointer, walwriter…)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            if int(fields[1]) == postmaster:
                children.append(int(stat.parent.name))
        return [postmaster, *children]

    def require_password(self, role: str, password: str) -> str:
        """Make a login role that must give `password` (SCRAM-SHA-256 over TCP, pg_hba.conf's first
        line), owning a new database; the URL of that database, with no password in it."""
        import psycopg
        url = self.new_database()
        database = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url_base + "/postgres", autocommit=True) as connection:
            connection.execute("SET password_encryption = 'scram-sha-256'")
            connection.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
            connection.execute(f"ALTER DATABASE {database} OWNER TO {role}")
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        self._as_postgres([_pg_tool("pg_ctl"), "-D", str(self.data), "reload"])
        url = f"postgresql://{role}@127.0.0.1:{self.port}/{database}"
        deadline = time.monotonic() + TIMEOUT
        while True:  # the postmaster reloads on SIGHUP, in its own time
            try:
                psycopg.connect(url, password="").close()
            except psycopg.OperationalError as e:
                if "password" in str(e):
                    return url
            assert time.monotonic() < deadline, "pg_hba.conf was not reloaded"
            time.sleep(0.05)

    def stop(self) -> None:
        subprocess.run(["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups",
                        _pg_tool("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=TIMEOUT, cwd=self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
