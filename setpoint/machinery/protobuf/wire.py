"""The protobuf wire format: varints, tags and length-delimited fields.

Only what Kubernetes' proto2 messages use: wire types 0 (varint), 1 (64-bit), 2 (length
delimited) and 5 (32-bit). Groups (3, 4) are deprecated and never written by gogo protobuf.
"""

from __future__ import annotations

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_U64 = 1 << 64


class ProtobufError(ValueError):
    """A body that is not a valid Kubernetes protobuf message (the apiserver answers 400)."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    b = buf[pos]
    if b < 0x80:  # one-byte varints are most of a Kubernetes object's tags and lengths
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= len(buf) or shift > 63:
            raise ProtobufError("unexpected EOF" if pos >= len(buf) else "integer overflow")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def scan(buf: bytes) -> dict[int, list[int | bytes]]:
    """Every field of one message, by number, in wire order.

    Varints come back as unsigned ints, fixed-width and length-delimited fields as bytes: what
    they mean depends on the field's declared type, which the caller knows.
    """
    fields: dict[int, list[int | bytes]] = {}
    pos = 0
    end = len(buf)
    try:
        while pos < end:
            key = buf[pos]
            if key < 0x80:
                pos += 1
            else:
                key, pos = read_varint(buf, pos)
            number = key >> 3
            wt = key & 7
            value: int | bytes
            if wt == LENGTH:
                n = buf[pos]
                if n < 0x80:
                    pos += 1
                else:
                    n, pos = read_varint(buf, pos)
                if pos + n > end:
                    raise ProtobufError("unexpected EOF")
                value = buf[pos:pos + n]
                pos += n
            elif wt == VARINT:
                value, pos = read_varint(buf, pos)
            elif wt == FIXED64:
                value = buf[pos:pos + 8]
                pos += 8
            elif wt == FIXED32:
                value = buf[pos:pos + 4]
                pos += 4
            else:
                raise ProtobufError(f"proto: illegal wireType {wt}")
            if number == 0:
                raise ProtobufError(f"proto: illegal tag 0 (wire type {wt})")
            got = fields.get(number)
            if got is None:
                fields[number] = [value]
            else:
                got.append(value)
    except IndexError:
        raise ProtobufError("unexpected EOF") from None
    if pos > end:
        raise ProtobufError("unexpected EOF")
    return fields


def unpack_varints(buf: bytes) -> list[int]:
    """The varints of a packed repeated field."""
    out = []
    pos = 0
    try:
        while pos < len(buf):
            v, pos = read_varint(buf, pos)
            out.append(v)
    except IndexError:
        raise ProtobufError("unexpected EOF") from None
    return out


def signed(v: int, bits: int) -> int:
    """Two's complement reading of an unsigned varint (int32 and int64 fields)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def zigzag(v: int) -> int:
    """sint32/sint64 decoding."""
    return (v >> 1) ^ -(v & 1)


# -- writing ---------------------------------------------------------------------------------


def varint(v: int) -> bytes:
    """The varint encoding of ``v``; negative numbers take ten bytes, as in Go."""
    if v < 0:
        v += _U64
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def tag(number: int, wt: int) -> bytes:
    """The key that starts field ``number`` of wire type ``wt``."""
    return varint(number << 3 | wt)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Field ``number`` holding ``payload`` (a string, bytes or an embedded message)."""
    return tag(number, LENGTH) + varint(len(payload)) + payload
