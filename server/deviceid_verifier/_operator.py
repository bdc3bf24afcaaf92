"""The operator's commands on a service's database: migrate, revoke, lift, tenant (add, list,
remove, set-limit), set-limit, crl. They are reachable only here, by whoever can reach the database,
never through the HTTP service."""

from __future__ import annotations

import argparse
import base64
import functools
import datetime
import json
import os
import re
import sys
from typing import Any, Callable, Optional

from cryptography.hazmat.primitives import serialization

from . import _cakey, _inputs
from ._ca import PrivacyCA, check_app_id
from ._errors import Rejected
from ._service._tenants import key_digest
from ._store import IssueLimit, Limit, Tenant, open_store
from ._store._base import DEFAULT_ISSUE_LIMIT
from ._store._sql import SQLStore, StoreUnavailable


def _store(url: str, *, migrate: bool = True) -> SQLStore:
    try:
        store = open_store(url, migrate=migrate)
    except ValueError as e:
        raise _inputs.Failure(str(e)) from None
    except StoreUnavailable as e:
        raise _inputs.Failure(f"{url}: {e}") from None
    if not isinstance(store, SQLStore):
        raise _inputs.Failure(f"{url} is not a database (sqlite:///PATH or postgresql://…)")
    return store


def _on_database(command: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
    """An operator command whose database stops answering fails with the store's words (exit 2)."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> None:
        try:
            command(args)
        except StoreUnavailable as e:
            raise _inputs.Failure(str(e)) from None
    return run


def _migrate(args: argparse.Namespace) -> None:
    store = _store(args.database, migrate=False)
    try:
        applied = store.migrate(until=args.until)
        current = store.applied_migrations()[-1]
    except (ValueError, StoreUnavailable) as e:
        raise _inputs.Failure(f"{args.database}: {e}") from None
    for name in applied:
        print(f"applied {name}")
    print(f"at {current}")


def _serial(text: str) -> int:
    try:
        value = int(text, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a serial number is hexadecimal, not {text!r}") from None
    if not 0 < value < 1 << 160:
        raise argparse.ArgumentTypeError("a serial number is 1 to 20 bytes")
    return value


def _tenant_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", text):
        raise argparse.ArgumentTypeError(f"a tenant's name is 1 to 64 characters of A-Z a-z 0-9 . _ -, not {text!r}")
    return text


@_on_database
def _revoke(args: argparse.Namespace) -> None:
    store = _store(args.database)
    if not store.revoke(args.serial, args.reason, datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)):
        record = store.certificate(args.serial)
        raise _inputs.Failure(f"no certificate {args.serial:x} was issued on this database" if record is None
                              else f"the certificate {args.serial:x} is already revoked, and its device for "
                                   f"{record.app_id!r} with it")
    print(f"revoked {args.serial:x}")


@_on_database
def _lift(args: argparse.Namespace) -> None:
    store = _store(args.database)
    record = store.certificate(args.serial)
    if record is None:
        raise _inputs.Failure(f"no certificate {args.serial:x} was issued on this database")
    if store.lift(args.serial) == 0:
        raise _inputs.Failure(f"the device of the certificate {args.serial:x} is not revoked for {record.app_id!r}")
    print(f"lifted {args.serial:x}")


@_on_database
def _tenant_add(args: argparse.Namespace) -> None:
    store = _store(args.database)
    try:
        app_ids = [check_app_id(app_id) for app_id in args.app]
    except Rejected as e:
        raise _inputs.Failure(f"--app: {e.message}") from None
    key = "dvt_" + base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    tenant = Tenant(args.name, tuple(sorted(set(app_ids))), key_digest(key),
                    datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None), _issue_limit(args))
    refusal = store.add_tenant(tenant)
    if refusal is not None:
        raise _inputs.Failure(refusal)
    print(json.dumps({"tenant": tenant.name, "api_key": key}))  # shown once: the database keeps its digest


@_on_database
def _tenant_list(args: argparse.Namespace) -> None:
    store = _store(args.database)
    tenants = store.tenants()
    for tenant in tenants:
        print(json.dumps({"tenant": tenant.name, "apps": list(tenant.app_ids),
                          "created": tenant.created.isoformat() + "Z", "issued": tenant.limit.issued,
                          "window": int(tenant.limit.window.total_seconds())}))


def _issue_limit(args: argparse.Namespace) -> IssueLimit:
    return IssueLimit(args.issued, datetime.timedelta(seconds=args.window))


@_on_database
def _tenant_set_limit(args: argparse.Namespace) -> None:
    store = _store(args.database)
    limit = _issue_limit(args)
    if not store.set_tenant_limit(args.name, limit):
        raise _inputs.Failure(f"no tenant is named {args.name!r}")
    print(json.dumps({"tenant": args.name, "issued": limit.issued, "window": int(limit.window.total_seconds())}))


@_on_database
def _tenant_remove(args: argparse.Namespace) -> None:
    store = _store(args.database)
    if not store.remove_tenant(args.name):
        raise _inputs.Failure(f"no tenant is named {args.name!r}")
    print(json.dumps({"removed": args.name}))


@_on_database
def _set_limit(args: argparse.Namespace) -> None:
    store = _store(args.database)
    store.set_limit(Limit(args.enrolments, datetime.timedelta(seconds=args.window)))
    limit = store.limit()
    print(f"at most {limit.enrolments} enrolments per TPM and app id in {int(limit.window.total_seconds())} s")


@_on_database
def _forget_bits(args: argparse.Namespace) -> None:
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(days=args.older_than)
    print(json.dumps({"forgotten": _store(args.database).forget_bits(before)}))


@_on_database
def _crl(args: argparse.Namespace) -> None:
    store = _store(args.database)
    certificate = _inputs.certificates([args.ca_cert])[0]
    try:
        # a CRL needs no EK pseudonyms, and a key in a token has no bytes to derive their key from
        ca = PrivacyCA(_cakey.load(args, certificate), certificate, [certificate], store=store, pseudonym_key=bytes(32))
        crl = ca.crl(next_update=datetime.timedelta(days=args.days))
    except ValueError as e:
        raise _inputs.Failure(str(e)) from None
    sys.stdout.buffer.write(crl.public_bytes(serialization.Encoding.DER if args.der else serialization.Encoding.PEM))


def _issue_limit_options(parser: argparse.ArgumentParser, within: Callable[..., Callable[[str], float]],
                         default: Optional[IssueLimit] = None) -> None:
    """--issued N --window SECONDS: required, or with `default`'s values."""
    parser.add_argument("--issued", required=default is None, type=within(int, 1, 1_000_000_000, "--issued"),
                        default=None if default is None else default.issued,
                        help="nonces and challenges issued to the tenant per window, 1 to 1000000000"
                             + ("" if default is None else f" (default {default.issued})"))
    parser.add_argument("--window", required=default is None, type=within(int, 1, 86_400, "--window"),
                        default=None if default is None else int(default.window.total_seconds()),
                        help="the window in seconds, 1 to 86400"
                             + ("" if default is None else f" (default {int(default.window.total_seconds())})"))


def add_commands(commands: Any, within: Callable[..., Callable[[str], float]]) -> None:
    """Add the operator's commands to the command line's subcommands."""
    migrate = commands.add_parser("migrate", help="apply the database's missing schema migrations")
    migrate.add_argument("--database", required=True, help="sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
    migrate.add_argument("--until", help="stop after this migration (default: all)")
    migrate.set_defaults(run=_migrate)

    revoke = commands.add_parser("revoke", help="revoke the device of an AK certificate issued on this database, "
                                                "for its app id, until lifted")
    revoke.add_argument("--database", required=True, help="the service's database URL")
    revoke.add_argument("--serial", required=True, type=_serial, help="the certificate's serial number (hex)")
    revoke.add_argument("--reason", default="unspecified", help="why, for the record")
    revoke.set_defaults(run=_revoke)

    lift = commands.add_parser("lift", help="let a revoked device enrol again for the app id of this certificate "
                                            "(its certificates stay revoked)")
    lift.add_argument("--database", required=True, help="the service's database URL")
    lift.add_argument("--serial", required=True, type=_serial, help="a serial number (hex) of the device's certificates")
    lift.set_defaults(run=_lift)

    tenant = commands.add_parser("tenant", help="the tenants: app servers' accounts, their app ids and API keys")
    actions = tenant.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a tenant owning these app ids; prints its API key, once, as "
                                         '{"tenant": NAME, "api_key": KEY}')
    add.add_argument("name", type=_tenant_name, help="the tenant's name, 1 to 64 characters of A-Z a-z 0-9 . _ -")
    add.add_argument("--app", required=True, action="append", help="an app id it owns (repeatable)")
    add.add_argument("--database", required=True, help="the service's database URL")
    _issue_limit_options(add, within, DEFAULT_ISSUE_LIMIT)
    add.set_defaults(run=_tenant_add)
    listing = actions.add_parser("list", help="the tenants, one JSON object a line")
    listing.add_argument("--database", required=True, help="the service's database URL")
    listing.set_defaults(run=_tenant_list)
    remove = actions.add_parser("remove", help="remove a tenant: its key stops working within 5 s")
    remove.add_argument("name", type=_tenant_name, help="the tenant's name")
    remove.add_argument("--database", required=True, help="the service's database URL")
    remove.set_defaults(run=_tenant_remove)
    limit = actions.add_parser("set-limit", help="change a tenant's issue limit: its nonces and challenges per "
                                                 "window (in effect within 5 s)")
    limit.add_argument("name", type=_tenant_name, help="the tenant's name")
    limit.add_argument("--database", required=True, help="the service's database URL")
    _issue_limit_options(limit, within)
    limit.set_defaults(run=_tenant_set_limit)

    set_limit = commands.add_parser("set-limit", help="change the enrolment limit per TPM and app id")
    set_limit.add_argument("--database", required=True, help="the service's database URL")
    set_limit.add_argument("--enrolments", required=True, type=within(int, 1, 1_000_000, "--enrolments"),
                           help="enrolments allowed per window, 1 to 1000000")
    set_limit.add_argument("--window", required=True, type=within(int, 1, 366 * 86_400, "--window"),
                           help="the window in seconds, 1 to 31622400")
    set_limit.set_defaults(run=_set_limit)

    forget = commands.add_parser("forget-bits", help="the retention of device bits: remove every tenant's bits of "
                                                     "a device not written for DAYS days (prints {\"forgotten\": N})")
    forget.add_argument("--database", required=True, help="the service's database URL")
    forget.add_argument("--older-than", required=True, metavar="DAYS", type=within(int, 1, 36_600, "--older-than"),
                        help="days since the last write, 1 to 36600")
    forget.set_defaults(run=_forget_bits)

    crl = commands.add_parser("crl", help="write the CA's CRL of revoked AK certificates (PEM; --der)")
    crl.add_argument("--database", required=True, help="the service's database URL")
    _cakey.add_options(crl)
    crl.add_argument("--ca-cert", required=True, help="the CA's certificate (PEM)")
    crl.add_argument("--days", type=within(int, 1, 366, "--days"), default=1, help="validity, 1 to 366 days")
    crl.add_argument("--der", action="store_true", help="DER instead of PEM")
    crl.set_defaults(run=_crl)
