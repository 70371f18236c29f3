"""Local stand-ins for the outside world of the tracker and mail tests: a real SMTP server (aiosmtpd)
with optional STARTTLS and login, a self-signed certificate, and an HTTP server speaking the Bugzilla
REST and GitHub shapes that records every request it gets. Loopback only."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import itertools
import json
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def self_signed(folder: Path) -> tuple[Path, Path]:
    """(cert, key) for 127.0.0.1 / localhost, valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    c, k = folder / "cert.pem", folder / "key.pem"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))  # fmt: skip
    return c, k


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes
    tls: bool
    login: str | None

    @property
    def message(self) -> EmailMessage:
        msg = message_from_bytes(self.data, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        return msg


class _Sink:
    def __init__(self) -> None:
        self.received: list[Received] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        auth = session.auth_data
        login = auth.decode() if isinstance(auth, bytes) else auth
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.content,
                                      session.ssl is not None, login))  # fmt: skip
        return "250 OK"


class SmtpServer:
    """aiosmtpd on a free loopback port; `tls` (cert, key) offers STARTTLS, `users` enables AUTH."""

    def __init__(self, tls: tuple[Path, Path] | None = None, users: dict[str, str] | None = None) -> None:
        self.sink = _Sink()
        self.port = free_port()
        kw: dict[str, Any] = {}
        if tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            kw.update(tls_context=ctx, require_starttls=True)
        if users is not None:

            def check(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
                ok = isinstance(data, LoginPassword) and users.get(data.login.decode()) == data.password.decode()
                return AuthResult(success=ok, handled=False, auth_data=data.login if ok else None)

            kw.update(authenticator=check, auth_require_tls=True, auth_exclude_mechanism=["LOGIN"])
        self.controller = Controller(self.sink, hostname="127.0.0.1", port=self.port, **kw)

    @property
    def received(self) -> list[Received]:
        return self.sink.received

    def __enter__(self) -> SmtpServer:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()


@dataclass
class Stream:
    """A large body made as it is sent, never held: `total` bytes (Bugzilla: base64 in the JSON answer)
    repeating a 48 KiB block, with no Content-Length (the end is the close). `announce` is the size a
    HEAD (GitHub) or the attachment's metadata (Bugzilla) gives. `sent` counts the bytes written before
    the client dropped the connection (`dropped`) or the end; `done` is set then."""

    total: int
    announce: int
    sent: int = 0
    dropped: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def pieces(self, b64: bool) -> Iterator[bytes]:
        block = bytes(range(256)) * 192  # 48 KiB: whole base64 quanta, so the pieces concatenate
        whole = base64.b64encode(block) if b64 else block
        for at in range(0, self.total, len(block)):
            n = min(len(block), self.total - at)
            yield whole if n == len(block) else (base64.b64encode(block[:n]) if b64 else block[:n])


@dataclass
class BzAttachment:
    id: int
    file_name: str
    content_type: str
    data: bytes
    size: int | None = None  # what the metadata says (None: the real size, or the stream's announce)
    is_obsolete: bool = False
    stream: Stream | None = None  # served instead of `data`


@dataclass
class FakeTracker:
    """Bugzilla REST (/rest/...) and GitHub (/repos/..., /files/...) on one loopback server."""

    api_key: str = "bz-key"
    token: str = "gh-token"
    bugs: dict[int, dict[str, Any]] = field(default_factory=dict)
    attachments: dict[int, list[BzAttachment]] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    streams: dict[str, Stream] = field(default_factory=dict)  # large files, under /files/ as `files`
    comments: list[tuple[str, str]] = field(default_factory=list)  # (bug or repo#n, text)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # method, path+query, headers
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self, method: str | None = None) -> list[str]:
        return [p for m, p, _ in self.requests if method in (None, m)]

    def __enter__(self) -> FakeTracker:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(t: FakeTracker) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def _send(self, code: int, body: bytes | dict[str, Any], ctype: str = "application/json",
                  head: bool = False, extra: dict[str, str] | None = None,
                  length: int | None = None) -> None:  # fmt: skip
            raw = json.dumps(body).encode() if isinstance(body, dict) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(raw) if length is None else length))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(raw)

        def _route(self, method: str) -> None:
            t.requests.append((method, self.path, {k.lower(): v for k, v in self.headers.items()}))
            u = urlsplit(self.path)
            q = parse_qs(u.query)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else b""
            if u.path.startswith("/rest/"):
                if self.headers.get("X-BUGZILLA-API-KEY") != t.api_key:
                    return self._send(401, {"error": True, "code": 306, "message": "The API key is invalid."})
                if m := re.fullmatch(r"/rest/bug/(\d+)", u.path):
                    bug = t.bugs.get(int(m[1]))
                    if bug is None:
                        return self._send(404, {"error": True, "code": 101, "message": f"Bug #{m[1]} does not exist."})
                    return self._send(200, {"bugs": [bug], "faults": []})
                if m := re.fullmatch(r"/rest/bug/(\d+)/attachment", u.path):
                    assert "data" not in q.get("include_fields", [""])[0].split(",")
                    rows = [{"id": a.id, "file_name": a.file_name, "content_type": a.content_type,
                             "size": a.size if a.size is not None else a.stream.announce if a.stream else len(a.data),
                             "is_obsolete": int(a.is_obsolete), "summary": a.file_name}
                            for a in t.attachments.get(int(m[1]), [])]  # fmt: skip
                    return self._send(200, {"bugs": {m[1]: rows}, "attachments": {}})
                if m := re.fullmatch(r"/rest/bug/attachment/(\d+)", u.path):
                    for a in (a for rows in t.attachments.values() for a in rows if a.id == int(m[1])):
                        if a.stream:  # Bugzilla's key order is a Perl hash's: the data may come first
                            head = b'{"attachments": {"%d": {"data": "' % a.id
                            return self._stream(a.stream, head, b'", "id": %d}}, "bugs": {}}' % a.id, True)
                        data = base64.b64encode(a.data).decode()
                        return self._send(200, {"attachments": {m[1]: {"id": a.id, "data": data}}, "bugs": {}})
                    return self._send(404, {"error": True, "code": 100, "message": "no such attachment"})
                if (m := re.fullmatch(r"/rest/bug/(\d+)/comment", u.path)) and method == "POST":
                    t.comments.append((m[1], json.loads(body)["comment"]))
                    return self._send(201, {"id": 1000 + len(t.comments)})
            if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", u.path)) and method == "POST":
                if self.headers.get("Authorization") != f"Bearer {t.token}":
                    return self._send(401, {"message": "Bad credentials"})
                t.comments.append((f"{m[1]}#{m[2]}", json.loads(body)["body"]))
                return self._send(201, {"id": 5000 + len(t.comments)})
            if (m := re.fullmatch(r"/files/([^/]+)", u.path)) and m[1] in t.streams:
                st = t.streams[m[1]]
                if method == "HEAD":
                    return self._send(200, b"", "application/gzip", head=True, length=st.announce)
                return self._stream(st)
            if (m := re.fullmatch(r"/files/([^/]+)", u.path)) and m[1] in t.files:
                return self._send(200, t.files[m[1]], "application/gzip", head=method == "HEAD")
            if m := re.fullmatch(r"/redirect/(.+)", u.path):
                return self._send(302, b"", "text/plain", head=method == "HEAD", extra={"Location": m[1]})
            return self._send(404, {"message": "Not Found"}, head=method == "HEAD")

        def _stream(self, st: Stream, head: bytes = b"", tail: bytes = b"", b64: bool = False) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if b64 else "application/gzip")
            self.end_headers()
            try:
                for piece in itertools.chain((head,), st.pieces(b64), (tail,)):
                    self.wfile.write(piece)
                    st.sent += len(piece)
            except (BrokenPipeError, ConnectionResetError):
                st.dropped = True
            finally:
                st.done.set()

        def do_GET(self) -> None:
            self._route("GET")

        def do_HEAD(self) -> None:
            self._route("HEAD")

        def do_POST(self) -> None:
            self._route("POST")

    return H
