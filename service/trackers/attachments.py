"""Tracker attachments as streams: a download is read chunk by chunk, cut off (the connection dropped,
the rest never read) once it passes what it may hold, and handed on as a file object that the caller
copies straight into the upload spool (service.store.bundle_store.spool_upload, through
service.store.intake.store_upload), hashing it as it goes. Nothing is held whole in memory.

Bugzilla's REST API gives an attachment only as JSON, its bytes base64 in a `data` string (there is no
raw download an API key may use: `attachment.cgi` wants a login cookie). `json_b64_field` reads that
answer as it arrives and decodes the string at one path incrementally, whatever the order of the keys,
keeping only the few bytes a base64 quantum or an escape may straddle.
"""

from __future__ import annotations

import binascii
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import httpx

from service.trackers.base import TooLarge, TrackerHTTPError, check

CHUNK = 1 << 20  # what the reader hands on at most per read (the spool's chunk)


class _Chunks(io.RawIOBase):
    """A readable raw stream over an iterator of byte chunks; its exceptions surface from read()."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._left = chunks, memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._left:
            nxt = next(self._chunks, None)
            if nxt is None:
                return 0
            self._left = memoryview(nxt)
        n = min(len(buf), len(self._left))
        buf[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def reader(chunks: Iterator[bytes]) -> BinaryIO:
    """A file object reading `chunks` in order (read(n) returns at most n bytes, b"" at the end)."""
    return io.BufferedReader(_Chunks(chunks), CHUNK)


@contextmanager
def capped_chunks(
    http: httpx.Client, url: str, cap: int, what: str, refusal: str, plain: str = "", **kw: object
) -> Iterator[Iterator[bytes]]:
    """GET `url` as a stream of chunks that raises TooLarge(`refusal`, `plain`) as soon as more than
    `cap` bytes came (or when the answer announces more): leaving the block then closes the connection,
    and the rest is never read. Failed answers and transport errors become TrackerHTTPError."""
    try:
        with http.stream("GET", url, **kw) as r:  # type: ignore[arg-type]
            check(r, what)
            announced = r.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > cap:
                raise TooLarge(f"{refusal} (it announces {announced} bytes)", plain)

            def chunks() -> Iterator[bytes]:
                got = 0
                for chunk in r.iter_bytes():
                    got += len(chunk)
                    if got > cap:
                        raise TooLarge(refusal, plain)
                    yield chunk

            yield chunks()
    except httpx.HTTPError as e:
        raise TrackerHTTPError(f"{what}: {type(e).__name__}: {e}", True, "the connection to the server failed") from e


# ------------------------------------------------------------- a base64 string in a JSON stream
_SPECIAL = re.compile(rb'["\\]')
_NOT_WS = re.compile(rb"[^ \t\r\n]")
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_ESCAPES = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b", ord("f"): b"\f",
            ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t"}  # fmt: skip
MAX_DEPTH, MAX_KEY = 32, 1024


class NotTheAnswer(ValueError):
    """The JSON is malformed, or lacks the field, or has it twice, or its base64 is not valid."""


class _Scan:
    def __init__(self, chunks: Iterator[bytes], target: tuple[str, ...]) -> None:
        self.chunks, self.target, self.found = chunks, target, 0
        self.buf, self.pos = b"", 0

    def _fill(self) -> bool:
        while self.pos >= len(self.buf):
            nxt = next(self.chunks, None)
            if nxt is None:
                return False
            self.buf, self.pos = nxt, 0
        return True

    def _raw(self) -> int:
        """The next byte as it is (inside a string); -1 at the end."""
        if not self._fill():
            return -1
        self.pos += 1
        return self.buf[self.pos - 1]

    def _peek(self) -> int:
        """The next byte that is not whitespace, not taken; -1 at the end."""
        while self._fill():
            m = _NOT_WS.search(self.buf, self.pos)
            if m:
                self.pos = m.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
        return -1

    def _take(self, want: bytes) -> int:
        c = self._peek()
        if c == -1 or c not in want:
            raise NotTheAnswer(f"expected one of {want.decode()!r} at {'the end' if c == -1 else repr(chr(c))}")
        self.pos += 1
        return c

    def _string(self) -> Iterator[bytes]:
        """The pieces of a string whose opening quote was taken, escapes decoded."""
        while True:
            if not self._fill():
                raise NotTheAnswer("unterminated string")
            m = _SPECIAL.search(self.buf, self.pos)
            end = m.start() if m else len(self.buf)
            if end > self.pos:
                yield self.buf[self.pos : end]
            self.pos = end
            if not m:
                continue
            self.pos += 1
            if m.group() == b'"':
                return
            e = self._raw()
            if e == ord("u"):
                hexa = [self._raw() for _ in range(4)]
                try:
                    yield chr(int(bytes(hexa), 16)).encode("utf-8", "surrogatepass")
                except ValueError as err:  # cut short (-1) or not hexadecimal
                    raise NotTheAnswer("bad \\u escape in a string") from err
            elif e in _ESCAPES:
                yield _ESCAPES[e]
            else:
                raise NotTheAnswer("bad escape in a string")

    def _key(self) -> str:
        got = bytearray()
        for piece in self._string():
            if len(got) <= MAX_KEY:
                got += piece[: MAX_KEY + 1]
        return got.decode("utf-8", "replace")

    def value(self, path: tuple[str, ...] | None = (), depth: int = 0) -> Iterator[bytes]:
        """Parse one value; when its path is the target's, yield its decoded base64 bytes."""
        if depth > MAX_DEPTH:
            raise NotTheAnswer("nested too deep")
        if path is not None and path != self.target[: len(path)]:
            path = None  # not on the way to the target: checked, not kept
        c = self._take(b'{["-0123456789tfn')
        if c == ord("{"):
            if self._peek() == ord("}"):
                self.pos += 1
                return
            while True:
                self._take(b'"')
                key = self._key()
                self._take(b":")
                yield from self.value(None if path is None else (*path, key), depth + 1)
                if self._take(b",}") == ord("}"):
                    return
        elif c == ord("["):
            if self._peek() == ord("]"):
                self.pos += 1
                return
            while True:
                yield from self.value(None, depth + 1)
                if self._take(b",]") == ord("]"):
                    return
        elif c == ord('"'):
            if path == self.target:
                self.found += 1
                if self.found > 1:
                    raise NotTheAnswer(f"{'.'.join(self.target)} twice")
                yield from _b64(self._string())
            else:
                for _ in self._string():
                    pass
        else:
            token = bytearray([c])
            while self._fill() and self.buf[self.pos] in b"+-.0123456789eEalrsu" and len(token) < 64:
                token.append(self.buf[self.pos])
                self.pos += 1
            if not _SCALAR.fullmatch(token):
                raise NotTheAnswer(f"bad value {bytes(token)[:20]!r}")


def _b64(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Decode base64 arriving in pieces of any size (line breaks ignored), strictly."""
    pending, ended = b"", False
    for piece in pieces:
        piece = piece.translate(None, b"\r\n")
        if not piece:
            continue
        if ended:
            raise NotTheAnswer("base64 data after its padding")
        pending += piece
        n = len(pending) - len(pending) % 4
        if n:
            block, pending = pending[:n], pending[n:]
            ended = b"=" in block
            try:
                yield binascii.a2b_base64(block, strict_mode=True)
            except binascii.Error as e:
                raise NotTheAnswer(f"bad base64: {e}") from e
    if pending:
        raise NotTheAnswer("base64 data cut short")


def json_b64_field(chunks: Iterator[bytes], path: tuple[str, ...]) -> Iterator[bytes]:
    """The decoded bytes of the base64 string at `path` (object keys) of the JSON document `chunks`
    make, as they arrive; the rest of the document is checked, not kept. Raises NotTheAnswer."""
    scan = _Scan(chunks, path)
    yield from scan.value()
    if scan._peek() != -1:
        raise NotTheAnswer("data after the JSON document")
    if not scan.found:
        raise NotTheAnswer(f"no {'.'.join(path)} in the answer")
