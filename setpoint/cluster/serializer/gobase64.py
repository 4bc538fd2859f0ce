"""Where Go's ``base64.StdEncoding`` stops on a string it cannot decode.

A ``[]byte`` field (a Secret's ``data``) is decoded by encoding/json with
``base64.StdEncoding.Decode`` (sigs.k8s.io/json decode.go literalStore), whose
``CorruptInputError`` names a byte offset: ``illegal base64 data at input byte N``. Go skips
``\\r`` and ``\\n`` anywhere, wants padding, and stops at the first bad quantum
(src/encoding/base64/base64.go ``decodeQuantum``).
"""

from __future__ import annotations

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = (0x0A, 0x0D)
_PAD = 0x3D  # "="


def corrupt_input_offset(value: str) -> int | None:
    """The offset Go's CorruptInputError gives for ``value`` (its UTF-8 bytes), or None when
    StdEncoding decodes it."""
    src = value.encode("utf-8", "surrogatepass")
    si = 0
    while si < len(src):
        si, offset = _quantum(src, si)
        if offset is not None:
            return offset
    return None


def _quantum(src: bytes, si: int) -> tuple[int, int | None]:
    """base64.go decodeQuantum: the next offset and the error's offset, if any."""
    j = 0
    while j < 4:
        if si == len(src):
            if j == 0:
                return si, None
            return si, si - j  # a quantum cut short, with padding wanted
        byte = src[si]
        si += 1
        if byte in _ALPHABET:
            j += 1
            continue
        if byte in _NEWLINES:
            continue
        if byte != _PAD or j < 2:
            return si, si - 1  # a byte outside the alphabet, or padding too early
        if j == 2:
            # "==" is expected, the first "=" is consumed
            while si < len(src) and src[si] in _NEWLINES:
                si += 1
            if si == len(src):
                return si, len(src)
            if src[si] != _PAD:
                return si, si - 1
            si += 1
        while si < len(src) and src[si] in _NEWLINES:
            si += 1
        return si, si if si < len(src) else None  # anything after the padding is garbage
    return si, None
