"""Image files built in a few bytes, for the media tests."""

from __future__ import annotations

import struct
import zlib


def png(width: int, height: int, padding: int = 0) -> bytes:
    """A valid PNG header (IHDR) of the given size, then ``padding`` bytes of payload."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"\x00" * padding)
