"""The CBOR (RFC 8949) a WebAuthn verifier reads: unsigned and negative integers, byte and text
strings, arrays and maps, all of definite length. Anything else (tags, floats, simple values,
indefinite lengths) and anything broken is Rejected("malformed"): the standard library has no
CBOR, and these structures need no more."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ._errors import Rejected

#: Deeper nesting than WebAuthn's structures ever have is refused.
MAX_DEPTH = 8


def loads(data: bytes, what: str) -> Any:
    """The one item `data` holds (nothing may follow it)."""
    value, end = _item(data, 0, what, 0)
    if end != len(data):
        raise Rejected("malformed", f"{what} has {len(data) - end} bytes after its CBOR item")
    return value


def prefix(data: bytes, what: str) -> Tuple[Any, int]:
    """The first item of `data`, and where it ends (authenticator data carries a COSE key followed
    by extensions)."""
    return _item(data, 0, what, 0)


def _head(data: bytes, at: int, what: str) -> Tuple[int, int, int]:
    if at >= len(data):
        raise Rejected("malformed", f"{what} ends inside a CBOR item")
    major, info = data[at] >> 5, data[at] & 0x1F
    at += 1
    if info < 24:
        return major, info, at
    if info > 27:
        raise Rejected("malformed", f"{what} has a CBOR item of indefinite or reserved length")
    width = 1 << (info - 24)
    if at + width > len(data):
        raise Rejected("malformed", f"{what} ends inside a CBOR item's length")
    return major, int.from_bytes(data[at:at + width], "big"), at + width


def _item(data: bytes, at: int, what: str, depth: int) -> Tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise Rejected("malformed", f"{what} nests CBOR deeper than {MAX_DEPTH}")
    major, value, at = _head(data, at, what)
    if major == 0:
        return value, at
    if major == 1:
        return -1 - value, at
    if major in (2, 3):
        if at + value > len(data):
            raise Rejected("malformed", f"{what} has a CBOR string longer than what follows")
        raw = data[at:at + value]
        if major == 2:
            return bytes(raw), at + value
        try:
            return raw.decode("utf-8"), at + value
        except UnicodeDecodeError:
            raise Rejected("malformed", f"{what} has a CBOR text string that is not UTF-8") from None
    if major == 4:
        if value > len(data) - at:  # each item takes a byte at least
            raise Rejected("malformed", f"{what} has a CBOR array longer than what follows")
        items: List[Any] = []
        for _ in range(value):
            item, at = _item(data, at, what, depth + 1)
            items.append(item)
        return items, at
    if major == 5:
        if 2 * value > len(data) - at:
            raise Rejected("malformed", f"{what} has a CBOR map longer than what follows")
        entries: Dict[Any, Any] = {}
        for _ in range(value):
            key, at = _item(data, at, what, depth + 1)
            if not isinstance(key, (int, str)):
                raise Rejected("malformed", f"{what} has a CBOR map key that is not an integer or text")
            if key in entries:
                raise Rejected("malformed", f"{what} has the CBOR map key {key!r} twice")
            entries[key], at = _item(data, at, what, depth + 1)
        return entries, at
    raise Rejected("malformed", f"{what} has a CBOR item of major type {major} (a tag, float or simple value)")
