"""Loopback wake-ups between the processes of one machine that share a data folder (embedded queue).

Each API or worker process binds a UDP socket on 127.0.0.1 and leaves its port in
<data_dir>/run/<role>-<pid>-<port>.port; `ring(role, text)` sends `text` to every process of that role.
The API rings the workers when it accepts a job; a worker rings the APIs when it finishes one, so a
waiting request answers at once. Only a hint: the database stays the truth and everyone still polls
(slowly), so a lost datagram or a missing doorbell only costs latency.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class Doorbell:
    def __init__(self, folder: Path, role: str) -> None:
        self.folder, self.role = folder, role
        folder.mkdir(parents=True, exist_ok=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = int(self.sock.getsockname()[1])
        self.file = folder / f"{role}-{os.getpid()}-{self.port}.port"
        self.file.touch()
        self._out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def ring(self, role: str, text: str) -> None:
        """Send `text` to every live process of `role` on this machine (files of dead ones are removed)."""
        data = text.encode()[:512]
        for f in self.folder.glob(f"{role}-*.port"):
            _, pid, port = f.stem.rsplit("-", 2)
            if not process_alive(int(pid)):
                f.unlink(missing_ok=True)
                continue
            with contextlib.suppress(OSError):
                self._out.sendto(data, ("127.0.0.1", int(port)))

    def count(self, role: str) -> int:
        """Live processes of `role` on this machine."""
        return sum(process_alive(int(f.stem.rsplit("-", 2)[1])) for f in self.folder.glob(f"{role}-*.port"))

    def listen(self, on_message: Callable[[str], None]) -> None:
        """Call `on_message(text)` for every datagram, from a daemon thread, until close()."""

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    data = self.sock.recv(1024)
                except TimeoutError:
                    continue
                except OSError:
                    return
                try:
                    on_message(data.decode(errors="replace"))
                except Exception:  # a hint handler must never end the listener
                    log.exception("doorbell handler failed")

        self._thread = threading.Thread(target=loop, name=f"vsandx-doorbell-{self.role}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self.file.unlink(missing_ok=True)
        if self._thread is not None:
            self._thread.join(2)
        self.sock.close()
        self._out.close()


def process_alive(pid: int) -> bool:
    """A process of this machine that runs: not gone, and not a zombie (exited, not yet reaped by its
    parent: `kill(pid, 0)` still succeeds on one, which kept a dead worker's job waiting for its lease)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # /proc/<pid>/stat: "pid (comm) S ..."; comm may hold spaces and parentheses
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no procfs (not Linux): kill(pid, 0) is all we know
    return state not in ("Z", "X")
