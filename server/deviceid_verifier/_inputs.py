"""The operator's inputs to the command line: PEM files of certificates (keys: _cakey). Every problem
with them is a Failure, the command line's exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import re
from typing import Any, Dict, List, Sequence

from cryptography import x509

from . import _chain, _ek

_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


class Failure(Exception):
    """An operational error: exit status 2."""


def read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror}") from None


def certificates(paths: Sequence[str]) -> List[x509.Certificate]:
    """Every certificate of the PEM files at `paths` (a file may hold several)."""
    out: List[x509.Certificate] = []
    for path in paths:
        blocks = _PEM_CERTIFICATE.findall(read(path))
        if not blocks:
            raise Failure(f"{path} holds no PEM certificate")
        try:
            out.extend(_chain.parsed(x509.load_pem_x509_certificate(block)) for block in blocks)
        except (ValueError, TypeError, _chain.ChainError) as e:
            raise Failure(f"{path}: a certificate does not parse: {e}") from None
    return out


def add_trust_options(command: argparse.ArgumentParser) -> None:
    """What a Privacy CA trusts of the devices' endorsements, for `challenge` and `serve`."""
    command.add_argument("--ek-anchor", action="append", required=True, metavar="PEM", help="a trusted EK root (PEM; repeatable)")
    command.add_argument("--ek-intermediate", action="append", default=[], metavar="PEM",
                         help="an untrusted EK or platform AK intermediate (PEM; repeatable)")
    command.add_argument("--ek-kind", action="append", metavar="KIND", choices=[kind.name for kind in _ek.KINDS],
                         help="an EK kind the CA accepts, most preferred first (repeatable; default: every kind, "
                              "L-1 first)")
    command.add_argument("--out-of-band-ek-cert", action="append", default=[], metavar="PEM",
                         help="the EK certificate of a TPM that keeps none in NV, fetched from its manufacturer "
                              "(PEM; repeatable)")
    command.add_argument("--platform-ak-anchor", action="append", default=[], metavar="PEM",
                         help="a trusted root of platform AK certificates: a cloud's vTPM root (PEM; repeatable)")


def trust(args: argparse.Namespace) -> Dict[str, Any]:
    """PrivacyCA's keyword arguments of add_trust_options' options, but for the anchors."""
    return {"ek_intermediates": certificates(args.ek_intermediate), "ek_kinds": args.ek_kind,
            "out_of_band_ek_certificates": certificates(args.out_of_band_ek_cert),
            "platform_ak_anchors": certificates(args.platform_ak_anchor)}
