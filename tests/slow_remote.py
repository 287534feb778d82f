"""
A git:// remote on 127.0.0.1 whose answers arrive slowly: a real ``git daemon --inetd`` per connection, behind a
relay that passes on at most ``chunk`` bytes every ``pause`` seconds, and, with ``stall_after``, nothing more after
that many bytes (the connection stays open, as a hung server's does).
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import List, Optional


class SlowRemote:
    """
    Serves the repositories under base as ``git://127.0.0.1:PORT/<name>`` until :meth:`close`.

    :param base: directory whose subdirectories are the repositories
    :param chunk: bytes passed on at once from the server to the client
    :param pause: seconds between two chunks
    :param stall_after: bytes after which the server says nothing more (None: never)
    """

    def __init__(self, base: Path, chunk: int, pause: float, stall_after: Optional[int] = None):
        self.base = base
        self.chunk = chunk
        self.pause = pause
        self.stall_after = stall_after
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._daemons: List[subprocess.Popen] = []
        self._sockets: List[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self, name: str) -> str:
        """:return: the git:// URL of the repository base/name"""
        return f"git://127.0.0.1:{self._server.getsockname()[1]}/{name}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                continue
            daemon = subprocess.Popen(
                ["git", "daemon", "--inetd", "--export-all", "--log-destination=none", f"--base-path={self.base}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            self._daemons.append(daemon)
            self._sockets.append(client)
            for pump in (self._to_server, self._to_client):
                thread = threading.Thread(target=pump, args=(client, daemon), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _to_server(self, client: socket.socket, daemon: subprocess.Popen) -> None:
        try:
            while not self._stop.is_set():
                data = client.recv(65536)
                if not data:
                    break
                daemon.stdin.write(data)
                daemon.stdin.flush()
        except OSError:
            pass
        finally:
            try:
                daemon.stdin.close()
            except OSError:
                pass

    def _to_client(self, client: socket.socket, daemon: subprocess.Popen) -> None:
        sent = 0
        try:
            while not self._stop.is_set():
                if self.stall_after is not None and sent >= self.stall_after:
                    self._stop.wait()  # hung: the connection stays open, and silent
                    return
                size = self.chunk if self.stall_after is None else min(self.chunk, self.stall_after - sent)
                data = daemon.stdout.read1(size)
                if not data:
                    client.shutdown(socket.SHUT_WR)
                    return
                client.sendall(data)
                sent += len(data)
                time.sleep(self.pause)
        except OSError:
            pass

    def close(self) -> None:
        """Stop serving: close every connection and stop every daemon."""
        self._stop.set()
        for thread in self._threads[:1]:
            thread.join(timeout=5)
        for client in self._sockets:
            client.close()
        for daemon in self._daemons:
            daemon.kill()
            daemon.wait(timeout=10)
        self._server.close()
