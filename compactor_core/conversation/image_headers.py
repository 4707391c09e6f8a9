"""An image's size in pixels, read from its own header (PNG, JPEG, GIF, WebP) in the few base64
characters that hold it: a screenshot of megabytes costs a decode of a few hundred bytes.

Imported by ``images.inspect`` only when a conversation has an image: the estimate of one without
any never loads it.
"""

from __future__ import annotations

import binascii
import struct

# Base64 characters decoded for a header: enough for PNG, GIF and WebP; a JPEG's size comes after
# its metadata segments, so more is read, in steps, until it is found.
_HEADER_CHARS = (256, 8192, 131072, 1 << 20)


def size_in_header(data: str) -> tuple[str, int, int] | None:
    """(kind, width, height) of the image whose base64 text is ``data``; None if its header
    does not say."""
    for chars in _HEADER_CHARS:
        found = image_size(_decode_prefix(data, chars))
        if found is not None or chars >= len(data):
            return found
    return None


def _decode_prefix(data: str, chars: int) -> bytes:
    piece = data[:chars]
    piece = piece[: len(piece) - len(piece) % 4]
    try:
        return binascii.a2b_base64(piece)
    except (binascii.Error, ValueError):
        return b""


def image_size(head: bytes) -> tuple[str, int, int] | None:
    """(kind, width, height) from the first bytes of a PNG, JPEG, GIF or WebP; None if they do
    not say (another format, or too few bytes)."""
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
        return "png", width, height
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
        return "gif", width, height
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(head)
    if head[:2] == b"\xff\xd8":
        return _jpeg_size(head)
    return None


def _webp_size(head: bytes) -> tuple[str, int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30 and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return "webp", width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25 and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return "webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return "webp", width, height
    return None


# Start-of-frame markers: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(head: bytes) -> tuple[str, int, int] | None:
    at = 2
    while at + 4 <= len(head):
        if head[at] != 0xFF:
            return None  # not a marker: a damaged file
        marker = head[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # no length
            at += 2
            continue
        if marker in _SOF:
            if at + 9 > len(head):
                return None
            height, width = struct.unpack(">HH", head[at + 5 : at + 9])
            return "jpeg", width, height
        at += 2 + struct.unpack(">H", head[at + 2 : at + 4])[0]
    return None
