"""Wire format v1: JSON objects in UTF-8 with "v" and "type", binary fields in standard base64
with padding (RFC 4648 §4), or, in the WebAuthn messages, base64url without padding (§5), as
WebAuthn writes them. An unknown "v" is rejected; unknown extra keys are ignored."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ._errors import Rejected

VERSION = 1

ENROLMENT_REQUEST = "deviceid.enrolment-request"
ENROLMENT_CHALLENGE = "deviceid.enrolment-challenge"
ENROLMENT_RESPONSE = "deviceid.enrolment-response"
AK_CERTIFICATE = "deviceid.ak-certificate"
ATTESTATION = "deviceid.attestation"
WEBAUTHN_ATTESTATION = "deviceid.webauthn-attestation"
WEBAUTHN_ASSERTION = "deviceid.webauthn-assertion"

Message = Mapping[str, Any]


def b64(data: bytes) -> str:
    """Standard base64 with padding."""
    return base64.b64encode(data).decode("ascii")


def dumps(message_type: str, fields: Mapping[str, str]) -> str:
    """A message of `message_type` with these string fields, as compact JSON text."""
    return json.dumps({"v": VERSION, "type": message_type, **fields}, separators=(",", ":"))


def no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Rejected("malformed", f"the key {key!r} appears twice")
        out[key] = value
    return out


def loads(text: Union[str, bytes], message_type: str) -> Message:
    """Parse a message that must be of `message_type`: Rejected("malformed") if it is not a JSON
    object, Rejected("version") if its "v" is not 1, Rejected("message-type") if its "type"
    differs."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise Rejected("malformed", "the message is not UTF-8") from None
    if not isinstance(text, str):
        raise Rejected("malformed", "the message must be JSON text (str or bytes)")
    try:
        message = json.loads(text, object_pairs_hook=no_duplicates)
    except (ValueError, RecursionError) as e:
        raise Rejected("malformed", f"the message is not JSON: {e}") from None
    if not isinstance(message, dict):
        raise Rejected("malformed", "the message is not a JSON object")
    # Only an escape (\u0000, \ud800) or, in text given as str, the character itself makes one:
    # strict JSON refuses a raw NUL, and UTF-8 has no surrogates.
    unkeepable = _unkeepable_text(message) if "\\u" in text or not text.isascii() else None
    if unkeepable is not None:
        raise Rejected("malformed", f"the message holds text no store can keep ({unkeepable}): JSON allows it, "
                                    "Unicode text does not")
    version = message.get("v")
    if type(version) is not int or version != VERSION:  # noqa: E721  (true is not 1)
        raise Rejected("version", f"unsupported message version {version!r}")
    if message.get("type") != message_type:
        raise Rejected("message-type", f"expected a {message_type} message, got {message.get('type')!r}")
    return message


def _unkeepable_text(value: object) -> Optional[str]:
    """What makes a string of `value` (a parsed JSON value, keys included) one that no store can
    keep, or None: a lone surrogate (JSON's "\\ud800" escape; not UTF-8) or a NUL (which
    PostgreSQL's text refuses). A request carrying one is the client's fault, never a 5xx."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                return "a NUL character"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a lone surrogate"
    return None


def text_field(message: Message, key: str) -> str:
    """The string field `key`; Rejected("malformed") if missing or not a string."""
    value = message.get(key)
    if not isinstance(value, str):
        raise Rejected("malformed", f"the field {key!r} is missing or not a string")
    return value


def bytes_field(message: Message, key: str) -> bytes:
    """The base64 field `key`, decoded; Rejected("malformed") if missing or not base64."""
    value = text_field(message, key)
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise Rejected("malformed", f"the field {key!r} is not standard base64") from None


def optional_bytes_field(message: Message, key: str) -> bytes | None:
    """Like bytes_field, but None when the key is absent or null."""
    if message.get(key) is None:
        return None
    return bytes_field(message, key)


def b64url(data: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


#: base64url's alphabet (RFC 4648 §5), matched by one regular expression rather than character by character.
_B64URL_ALPHABET = re.compile("[A-Za-z0-9_-]*")


def from_b64url(value: object, what: str) -> bytes:
    """The bytes of canonical unpadded base64url `value`; Rejected("malformed") for anything else
    (padding, the standard alphabet, whitespace, bits left over)."""
    if not isinstance(value, str) or len(value) % 4 == 1 or _B64URL_ALPHABET.fullmatch(value) is None:
        raise Rejected("malformed", f"{what} is not base64url without padding")
    data = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    if b64url(data) != value:
        raise Rejected("malformed", f"{what} is not canonical base64url (bits left over)")
    return data


def b64url_field(message: Message, key: str) -> bytes:
    """The base64url field `key`, decoded; Rejected("malformed") if missing or not base64url."""
    return from_b64url(text_field(message, key), f"the field {key!r}")
