"""The waitress server that `academy.serve` runs, shaped so that slow clients cannot stall it (serve.py's docstring
says how): connections with deadlines (`DeadlineChannel`), per-address shares and the idlest closed first
(`Server`), the access log (`AccessLog`), the open-file limit fitted to the connections."""
from __future__ import annotations

import logging
import resource
import socket
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

from academy.logline import printable
from academy.web.limits import address_key

log = logging.getLogger("academy.serve")  # its lines are the server's


def _quoted(text: str) -> str:
    """A value for one access-log field: whole, on its line, its quotes escaped (academy/logline.py), in ASCII
    (a header's bytes arrive decoded as Latin-1: written as escapes, they read as the bytes they were)."""
    return printable(text, None, quote=True).encode("ascii", "backslashreplace").decode("ascii")


class DeadlineChannel(HTTPChannel):
    """A connection whose first byte must come soon after it is accepted, and whose request in progress must arrive
    whole within the server's request timeout."""

    reading_since: float | None = None  # monotonic time of the first byte of the request being received
    _timed: object = None  # the parser of that request
    spoke = False  # whether the client has sent a byte yet
    address = ""  # the client address it counts under (Server.address_of)

    def __init__(self, server: Server, sock: socket.socket, addr: Any, adj: Adjustments, map: Any = None) -> None:
        self.accepted_at = time.monotonic()
        super().__init__(server, sock, addr, adj, map=map)

    def received(self, data: bytes) -> bool:
        if data:
            self.spoke = True
        result = super().received(data)
        if self.request is None:
            self.reading_since = self._timed = None
        elif self.request is not self._timed:
            self._timed, self.reading_since = self.request, time.monotonic()
        return result

    def idle(self) -> bool:
        """Nothing in progress: no request arriving, running or being answered (silent, or a keep-alive between
        requests)."""
        return (self.request is None and not self.requests and not self.total_outbufs_len
                and not self.will_close and not self.close_when_flushed)

    def waiting_bytes(self) -> bool:
        """Whether the client's bytes already wait in the kernel, not yet read by the event loop."""
        try:
            return bool(self.socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:  # nothing yet (EAGAIN), or the peer is gone: nothing to wait for
            return False

    def del_channel(self, map: Any = None) -> None:
        super().del_channel(map)
        self.server.forget(self)


class Server(TcpWSGIServer):
    """waitress's TCP server on a socket bound beforehand, closing connections whose request is late, that send
    nothing, or that are past their address's share (the module's docstring)."""

    channel_class = DeadlineChannel
    request_timeout: float = 30.0
    first_byte_timeout: float = 3.0
    per_address: int = 0  # connections one client address may hold; 0: no limit of its own
    ipv6_prefix: int = 64

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.by_address: dict[str, set[DeadlineChannel]] = {}
        self.closed: Counter[tuple[str, str]] = Counter()  # (address, why): logged once a second, not per connection
        super().__init__(*args, **kwargs)

    def address_of(self, addr: Any) -> str:
        host = addr[0] if isinstance(addr, tuple) and addr else str(addr)
        return address_key(str(host), self.ipv6_prefix)

    def forget(self, channel: DeadlineChannel) -> None:
        mine = self.by_address.get(channel.address)
        if mine is not None:
            mine.discard(channel)
            if not mine:
                del self.by_address[channel.address]

    def readable(self) -> bool:
        """waitress's own, except that a full process keeps accepting while some connection is idle (a new one then
        closes the idlest: handle_accept), and stops only when every one is busy."""
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        if not self.accepting:
            return False
        full = len(self._map) >= self.adj.connection_limit
        if full and not any(channel.idle() for channel in self.active_channels.values()):
            if not self.in_connection_overflow:
                self.in_connection_overflow = True
                log.warning("all %d connections are busy: accepting none until one ends", len(self.active_channels))
            return False
        if self.in_connection_overflow:
            self.in_connection_overflow = False
            log.info("accepting connections again")
        return True

    def handle_accept(self) -> None:
        try:
            accepted = self.accept()
            if accepted is None:
                return
            conn, addr = accepted
            self.set_socket_options(conn)
        except OSError:  # as waitress: a peer gone before its socket's options were set
            return
        addr = self.fix_addr(addr)
        address = self.address_of(addr)
        mine = self.by_address.get(address, set())
        if self.per_address and len(mine) >= self.per_address:
            victim = self._idlest(list(mine))
            if victim is None:  # every one of its connections is busy: this one waits its turn elsewhere
                self.closed[address, f"it holds {self.per_address} busy connections already (new ones refused)"] += 1
                conn.close()
                return
            self.closed[address, f"over its {self.per_address} connections (its idlest closed)"] += 1
            victim.handle_close()
        if len(self._map) >= self.adj.connection_limit:
            victim = self._idlest(list(self.active_channels.values()))
            if victim is not None:
                self.closed[victim.address, "the process was full (the idlest connection closed)"] += 1
                victim.handle_close()
        channel = self.channel_class(self, conn, addr, self.adj, map=self._map)
        channel.address = address
        self.by_address.setdefault(address, set()).add(channel)

    @staticmethod
    def _idlest(channels: Iterable[DeadlineChannel]) -> DeadlineChannel | None:
        """The connection to close first: one that has sent nothing yet (the oldest), else the keep-alive idle the
        longest; never one whose request is arriving, running or being answered, nor one whose bytes wait unread."""
        idle = [channel for channel in channels if channel.connected and channel.idle()]
        idle.sort(key=lambda channel: (channel.spoke, channel.last_activity if channel.spoke else channel.accepted_at))
        return next((channel for channel in idle if not channel.waiting_bytes()), None)

    def maintenance(self, now: float) -> None:
        """Close, at once, each connection that is silent past the idle timeout with no request running (waitress's
        own rule), or that has sent nothing within the first-byte timeout, or whose request is late, or that reads
        nothing of an answer so large that it holds its thread. Closed here rather than marked: a connection whose
        client reads nothing never becomes writable, so a mark would wait for a write that never comes."""
        monotonic = time.monotonic()
        late = monotonic - self.request_timeout
        mute = monotonic - self.first_byte_timeout
        silent = now - self.adj.channel_timeout
        for channel in list(self.active_channels.values()):
            if not channel.connected:
                continue
            since = getattr(channel, "reading_since", None)
            if since is not None and since < late:
                self._drop(channel, f"its request was not whole after {self.request_timeout:g} s")
            elif not getattr(channel, "spoke", True) and channel.accepted_at < mute and channel.idle() \
                    and not channel.waiting_bytes():
                self.closed[channel.address, f"it sent nothing within {self.first_byte_timeout:g} s"] += 1
                channel.handle_close()
            elif channel.last_activity >= silent:
                continue
            elif not channel.requests:
                channel.handle_close()  # idle keep-alive, or an answer written out long ago and still unread
            elif channel.total_outbufs_len > self.adj.outbuf_high_watermark:
                # Past the buffer's high-water mark (16 MiB) the answer's thread waits for the client to read;
                # closing lets it go (it sees the client gone and ends the request).
                self._drop(channel, f"it read nothing of its answer for {self.adj.channel_timeout} s")
        for (address, why), count in sorted(self.closed.items()):
            log.warning("closed %d connection%s from %s: %s", count, "" if count == 1 else "s", _quoted(address), why)
        self.closed.clear()

    def _drop(self, channel: HTTPChannel, why: str) -> None:
        log.warning("closed the connection from %s: %s", _quoted(str(channel.addr[0] if channel.addr else "?")), why)
        channel.handle_close()


# --- the access log: gunicorn's default format, one line per request once its answer is written

class AccessLog:
    """WSGI middleware: `HOST - - [TIME] "REQUEST" STATUS BYTES "REFERER" "USER-AGENT"` per request."""

    def __init__(self, app: Callable, write: Callable[[str], None]):
        self.app, self.write = app, write

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        seen: dict[str, str] = {}

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
            seen["status"] = status.split(" ", 1)[0]
            return start_response(status, headers, exc_info)

        return _Logged(self, environ, seen, self.app(environ, start))

    def line(self, environ: dict[str, Any], status: str, size: int) -> str:
        when = datetime.now(timezone.utc).strftime("%d/%b/%Y:%H:%M:%S %z")
        target = environ.get("REQUEST_URI") or environ.get("PATH_INFO", "") + (
            "?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else "")
        request = f"{environ.get('REQUEST_METHOD', '-')} {target} {environ.get('SERVER_PROTOCOL', '-')}"
        return (f'{_quoted(environ.get("REMOTE_ADDR") or "-")} - - [{when}] "{_quoted(request)}" {status} '
                f'{size or "-"} "{_quoted(environ.get("HTTP_REFERER", "-"))}" '
                f'"{_quoted(environ.get("HTTP_USER_AGENT", "-"))}"')


class _Logged:
    """The app's answer, passed on chunk by chunk (streams stay streams), logged when the server closes it."""

    def __init__(self, log: AccessLog, environ: dict[str, Any], seen: dict[str, str], body: Iterable[bytes]):
        self.log, self.environ, self.seen, self.body, self.size = log, environ, seen, body, 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.body:
            self.size += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            if hasattr(self.body, "close"):
                self.body.close()
        finally:
            self.log.write(self.log.line(self.environ, self.seen.get("status", "-"), self.size))


def _stdout_writer() -> Callable[[str], None]:
    lock = threading.Lock()

    def write(line: str) -> None:
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    return write


# --- one serving process

def _open_files_for(connections: int) -> int:
    """Raise this process's open-file limit to fit `connections` (plus the app's own files); the most that fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft - 256 < connections:
        log.warning("the open-file limit (%d) fits %d connections, not %d", soft, max(soft - 256, 16), connections)
        return max(soft - 256, 16)
    return connections
