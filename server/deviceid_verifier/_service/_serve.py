"""`python3 -m deviceid_verifier serve`: the WSGI application under gunicorn (Debian's
`gunicorn`), one process per worker, each with its own database connection. Files are read and
the database migrated before any worker starts, so a bad option is a usage error (exit 2)."""

from __future__ import annotations

import argparse
import datetime
from typing import Any, Callable, Dict, Optional

from .. import _cakey, _inputs
from .._ca import PrivacyCA
from .._store import open_store
from .._store._sql import StoreUnavailable
from .._verify import Verifier
from .._webauthn import WebAuthnVerifier
from ._app import make_app


def add_command(commands: Any, within: Callable[..., Callable[[str], float]]) -> None:
    """Add `serve` to the command line's subcommands."""
    serve = commands.add_parser("serve", help="run the Privacy CA and verifier as an HTTP service (gunicorn)")
    serve.add_argument("--database", required=True, help="sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
    _cakey.add_options(serve)
    serve.add_argument("--ca-cert", required=True, help="the CA's certificate (PEM)")
    _inputs.add_trust_options(serve)
    serve.add_argument("--bind", required=True, action="append",
                       help="HOST:PORT to listen on (repeatable; unix:PATH for a socket)")
    serve.add_argument("--workers", type=within(int, 1, 256, "--workers"), default=2,
                       help="worker processes, 1 to 256 (default 2)")
    serve.add_argument("--threads", type=within(int, 1, 64, "--threads"), default=2,
                       help="threads per worker answering whole requests, each with its own database connection, "
                            "1 to 64 (default 2: one answers while another waits on the database)")
    serve.add_argument("--tls-cert", help="serve HTTPS with this certificate chain (PEM)")
    serve.add_argument("--tls-key", help="the private key of --tls-cert (PEM)")
    serve.add_argument("--trust-ca", action="append", default=[],
                       help="another Privacy CA certificate whose AK certificates to accept (repeatable: "
                            "the previous CA while rotating)")
    serve.add_argument("--pseudonym-key", help="a file of at least 32 bytes keying the EK pseudonyms (default: "
                                               "derived from the CA key)")
    serve.add_argument("--nonce-lifetime", type=within(float, 1, 86_400, "--nonce-lifetime"), default=300.0,
                       help="seconds a nonce lives, 1 to 86400 (default 300)")
    serve.add_argument("--challenge-lifetime", type=within(float, 1, 86_400, "--challenge-lifetime"), default=300.0,
                       help="seconds an enrolment challenge lives, 1 to 86400 (default 300)")
    serve.add_argument("--webauthn-origin", action="append",
                       help="a client data origin App Attest registrations and assertions may carry (repeatable; "
                            "default: any)")
    serve.add_argument("--metrics-bind", metavar="HOST:PORT",
                       help="serve Prometheus metrics on this address of their own (never on --bind)")
    serve.add_argument("--access-log", default=None, help="a file for gunicorn's access log ('-': standard error)")
    serve.set_defaults(run=run)


def _application(args: argparse.Namespace) -> Callable[..., Any]:
    if (args.tls_cert is None) != (args.tls_key is None):
        raise _inputs.Failure("--tls-cert and --tls-key go together")
    # Each gunicorn worker is a process of its own: memory: would be one store per worker, and a
    # nonce or challenge one worker issued unknown to the next (issue 51, case 11).
    if args.database == "memory:" and args.workers > 1:
        raise _inputs.Failure(f"--database memory: keeps state in each worker's own memory: with --workers "
                              f"{args.workers} a nonce one worker issued is unknown to the others; use --workers 1, "
                              "or a database every worker shares (sqlite:///PATH, postgresql://…)")
    certificate = _inputs.certificates([args.ca_cert])[0]
    key = _cakey.load(args, certificate)
    pseudonym_key = None
    if args.pseudonym_key is not None:
        pseudonym_key = _inputs.read(args.pseudonym_key)
        if len(pseudonym_key) < 32:
            raise _inputs.Failure(f"{args.pseudonym_key} holds {len(pseudonym_key)} bytes; a pseudonym key needs 32")
    _refuse_inline_password(args.database)
    try:
        store = open_store(args.database)
    except ValueError as e:
        raise _inputs.Failure(str(e)) from None
    except StoreUnavailable as e:
        raise _inputs.Failure(f"{args.database}: {e}") from None
    store.close()  # no connection crosses the fork into the workers
    try:
        ca = PrivacyCA(key, certificate, _inputs.certificates(args.ek_anchor), **_inputs.trust(args),
                       challenge_lifetime=datetime.timedelta(seconds=args.challenge_lifetime),
                       store=store, pseudonym_key=pseudonym_key)
        trusted = [certificate, *_inputs.certificates(args.trust_ca)]
        lifetime = datetime.timedelta(seconds=args.nonce_lifetime)
        verifier = Verifier(trusted, nonce_lifetime=lifetime, store=store)
        webauthn = WebAuthnVerifier(trusted, origins=args.webauthn_origin, challenge_lifetime=lifetime, store=store)
    except ValueError as e:
        raise _inputs.Failure(str(e)) from None
    return make_app(ca, verifier, webauthn)


def _refuse_inline_password(url: str) -> None:
    """A password in --database is in the command line of a process that runs for months, which
    `ps` shows every user of the host: refused, naming libpq's ways, which psycopg reads as libpq
    does (docs/SERVER.md, "The database's password")."""
    if url.split(":", 1)[0].lower() not in ("postgresql", "postgres"):
        return
    try:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict
        given = conninfo_to_dict(url)
    except (ImportError, ProgrammingError):
        return  # opening it says what is wrong
    if "password" in given:
        raise _inputs.Failure("--database holds a password, which ps shows to every user of this host: give it in a "
                              "password file (PGPASSFILE, by default ~/.pgpass), a service file (PGSERVICEFILE, and "
                              "service=NAME in the URL) or PGPASSWORD in serve's environment")


def database_driver(url: str) -> Optional[str]:
    """What the workers reach a PostgreSQL `url` through, for the log's first lines: psycopg's
    version and implementation ("binary" or "c": compiled; "python": Debian 12's python3-psycopg,
    which costs a worker 2–3 times the CPU per statement: docs/SERVER.md, "Which install, and its
    speed"). None for another database."""
    if url.split(":", 1)[0].lower() not in ("postgresql", "postgres"):
        return None
    import psycopg  # opening the store imported it
    driver = f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__})"
    if psycopg.pq.__impl__ == "python":
        driver += (": the pure-Python implementation, 2–3 times a compiled one's CPU per statement "
                   "(pip install 'deviceid-verifier[postgresql]' brings psycopg[binary])")
    return driver


def run(args: argparse.Namespace) -> None:
    try:
        from gunicorn.app.base import BaseApplication  # type: ignore[import]  # gunicorn has no type hints
    except ImportError:
        raise _inputs.Failure("serve needs gunicorn (Debian: apt install gunicorn; PyPI: pip install "
                              "'deviceid-verifier[service]')") from None
    application = _application(args)
    options: Dict[str, Any] = {
        "bind": args.bind, "workers": args.workers, "threads": args.threads,
        # a thread is given a request once all of it has arrived: slow clients hold no worker
        "worker_class": "deviceid_verifier._service._worker.BufferingWorker",
        "timeout": 30, "graceful_timeout": 10, "keepalive": 5, "proc_name": "deviceid-verifier",
        "accesslog": args.access_log, "errorlog": "-", "loglevel": "info",
        # bodies are bounded by the application (64 KiB); these bound the request line and headers
        "limit_request_line": 4094, "limit_request_fields": 100,
    }
    driver = database_driver(args.database)
    if driver is not None:
        options["when_ready"] = lambda server: server.log.info("PostgreSQL through %s", driver)
    if args.metrics_bind is not None:
        from ._metrics import Exporter  # imports prometheus_client once it knows where workers count
        exporter = Exporter(args.metrics_bind)
        application, options = exporter.wrap(application), exporter.gunicorn_options(options)
    if args.tls_cert is not None:
        options["certfile"] = args.tls_cert
        options["keyfile"] = args.tls_key

    class Service(BaseApplication):  # type: ignore[misc]  # a base class of unknown type
        def load_config(self) -> None:
            for name, value in options.items():
                if value is not None:
                    self.cfg.set(name, value)

        def load(self) -> Callable[..., Any]:
            return application

    Service().run()
