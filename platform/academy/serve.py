"""The academy's HTTP server: `python -m academy.serve --bind HOST:PORT` (scripts/run, deploy/app/entrypoint).

waitress, shaped so that slow clients cannot stall it. One event loop per process reads every connection
and hands a request to a thread only once its headers and body have arrived whole (bodies past 512 KiB
wait in a temporary file); the threads never read from or block on a client. So a client that sends one
byte at a time, or declares a large body and sends it slowly, holds a socket and a few bytes of memory,
never one of the threads that serve the pages. On top of waitress's own limits:

- a request must arrive whole within `--request-timeout` seconds of its first byte, however steadily it
  trickles in (waitress alone only closes connections that stay silent for `--idle-timeout`); past it the
  connection is closed, so even many slow connections let go within that time;
- at most `--connections` connections at once per process (the open-file limit is raised to fit), polled
  with poll(2), not select(2) and its 1024 descriptors, and at most `--connections-per-address` of them from one
  client address, the TCP peer (an IPv6 client as its DLA_IPV6_PREFIX network, as the app's per-address limits
  count it): by default half of `--connections` (a classroom behind one NAT address still has room), all of them
  when the app trusts proxies (DLA_TRUSTED_PROXIES: every connection is then the proxy's, which limits each
  client itself). A connection past an address's share closes that address's idlest one (one that has sent
  nothing yet, else the longest-idle keep-alive), or is closed itself when all of its connections are busy; and
  when the process is full, a new connection closes the idlest of all rather than waiting in the kernel's queue;
- a connection must send its first byte within `--first-byte-timeout` seconds of being accepted (3 s), or it
  is closed: silent connections cannot hold places until the idle timeout. A browser's keep-alive connection
  between its requests is not affected (it has spoken): it lasts until `--idle-timeout`;
- bodies larger than the app accepts (academy.web.inputs.MAX_BODY_BYTES) are refused before they are read;
- answers go out as they are written: a streamed answer (the tutor's Server-Sent Events) reaches the
  browser chunk by chunk, and an answer the client does not read waits in a buffer (a temporary file past
  1 MiB) rather than in a thread; a connection that reads nothing for `--idle-timeout` is closed, also one
  whose unread answer passed 16 MiB and so holds its thread (which then ends);
- proxy headers (X-Forwarded-For) reach the app unchanged: the app's own DLA_TRUSTED_PROXIES decides.

Each process starts serving as gunicorn's post_worker_init did (academy.runners.start_serving: the warm
pool starts before any request), writes an access log line per request to stdout in gunicorn's format, and
on SIGTERM or SIGINT stops accepting, lets the requests in progress finish and their answers go out, then
finishes the in-process grading jobs, all within `--graceful-timeout` seconds (a second signal: at once).
With `--processes N` (N > 1) a parent holds the port and forks N such processes, each listening on it with its
own SO_REUSEPORT socket (the kernel spreads connections evenly), starts a new one when one dies, and passes a
stop signal to all of them."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable

from waitress import wasyncore
from waitress.adjustments import Adjustments

from academy.server import AccessLog, Server, _open_files_for, _stdout_writer

log = logging.getLogger("academy.serve")


def serve(sock: socket.socket, options: argparse.Namespace, app: Callable | None = None) -> None:
    """Serve on the bound, listening `sock` until SIGTERM/SIGINT, then stop gracefully (the module's docstring)."""
    flask_app = None
    if app is None:
        from academy import create_app
        from academy.runners import start_serving
        from academy.web import inputs

        flask_app = create_app()
        # The warm pool starts warming now, in the background (pages are served meanwhile), and the recovery of
        # unfinished jobs runs; "ready" is logged once the pool's processes wait (_log_ready).
        if start_serving(flask_app) is not None:
            bound_host, bound_port = sock.getsockname()[:2]
            url = f"http://{_url_host(options.bind.rpartition(':')[0].strip('[]') or bound_host)}:{bound_port}/"
            threading.Thread(target=_log_ready, args=(flask_app, url if options.announce else None),
                             name="academy-ready", daemon=True).start()
        body_limit = inputs.MAX_BODY_BYTES + 64 * 1024
        app = flask_app
    else:
        body_limit = options.max_body or 1024 * 1024
    adj = Adjustments(
        threads=options.threads, connection_limit=_open_files_for(options.connections),
        channel_timeout=options.idle_timeout, cleanup_interval=1, asyncore_use_poll=True,
        max_request_body_size=body_limit, clear_untrusted_proxy_headers=False, backlog=options.backlog,
        expose_tracebacks=False, ident="academy")
    wsgi = AccessLog(app, _stdout_writer()) if options.access_log else app
    socket_map: dict[int, Any] = {}
    server = Server(wsgi, map=socket_map, _sock=sock, adj=adj, bind_socket=False,
                    sockinfo=(sock.family, sock.type, sock.proto, sock.getsockname()))
    server.request_timeout = options.request_timeout
    server.first_byte_timeout = options.first_byte_timeout
    trusted_proxies = 0
    if flask_app is not None:
        from academy.settings import settings

        server.ipv6_prefix, trusted_proxies = settings(flask_app).ipv6_prefix, settings(flask_app).trusted_proxies
    server.per_address = per_address(options, adj.connection_limit, trusted_proxies)

    stop: dict[str, float] = {}

    def on_signal(signum: int, _frame: Any) -> None:
        if "at" in stop:
            if time.monotonic() - stop["at"] > 1:  # not the same Ctrl-C reaching us twice (terminal, scripts/run)
                log.warning("second stop signal: stopping now")
                os._exit(1)
            return
        stop["at"] = time.monotonic()
        if signum == signal.SIGINT:  # Ctrl-C: at once, as gunicorn does
            stop["quick"] = 1
            log.info("stopping now (SIGINT)")
        else:
            log.info("stopping: no new connections; requests in progress have %g s to finish",
                     options.graceful_timeout)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    host, port = sock.getsockname()[:2]
    log.info("Listening at: http://%s:%s (%d), %d threads", _url_host(host), port, os.getpid(), options.threads)
    log.info("at most %d connections, %d from one client address; a new one must send its first byte within %g s",
             adj.connection_limit, server.per_address, server.first_byte_timeout)

    listening = True
    flushed_by = None  # once no request runs: how long the answers' last bytes may take to go out
    while True:
        wasyncore.loop(timeout=0.5, map=socket_map, use_poll=True, count=1)
        if "at" not in stop:
            continue
        if listening:  # once, in this loop's thread: waitress's map is not thread-safe
            server.accepting = False
            server.del_channel()
            server.socket.close()
            listening = False
        running = unsent = False
        for channel in list(server.active_channels.values()):
            if channel.requests:
                running = True
            elif channel.total_outbufs_len:
                unsent = True
            else:
                channel.handle_close()  # idle keep-alive, or a request still arriving: not served now
        now = time.monotonic()
        if not running and flushed_by is None:
            flushed_by = min(now + 5, stop["at"] + options.graceful_timeout)
        if "quick" in stop or now > stop["at"] + options.graceful_timeout or \
                (not running and (not unsent or now > flushed_by)):
            break
    wasyncore.close_all(socket_map)
    server.task_dispatcher.shutdown(cancel_pending=True, timeout=1)
    if flask_app is not None:
        _finish_jobs(flask_app, stop["at"] + (0 if "quick" in stop else options.graceful_timeout))
    log.info("stopped")


def per_address(options: argparse.Namespace, connections: int, trusted_proxies: int = 0) -> int:
    """Connections one client address (the TCP peer) may hold: `--connections-per-address`; by default (0) half of
    the process's connections (a classroom behind one NAT address is many browsers, each with a few keep-alive
    connections), or all of them when the app trusts proxies (DLA_TRUSTED_PROXIES): then every connection comes
    from the proxy, which limits each client itself (deploy.md, "Behind a TLS proxy")."""
    wanted = options.connections_per_address or (connections if trusted_proxies else connections // 2)
    return max(1, min(wanted, connections))


def _finish_jobs(app: Any, deadline: float) -> None:
    """Run the in-process grading jobs submitted so far (and stop the warm pool) until `deadline`; what is left
    then is graded again by the next start (academy.runners.FirstRequestRecovery)."""
    from academy.jobs import grading_sandbox, shutdown

    finishing = threading.Thread(target=shutdown, args=(app,), name="academy-finish-jobs", daemon=True)
    finishing.start()
    finishing.join(max(deadline - time.monotonic(), 0.1))
    if finishing.is_alive():
        log.warning("grading jobs still running at the end of the graceful timeout: the next start grades them")
        grading_sandbox(app).close()


def _log_ready(app: Any, announce: str | None = None) -> None:
    """Log "ready" once this process's grading pool has warmed (GradingSandbox.ready): from then on a Run or a
    submission waits for no grading process to start (torch imports for seconds). Operators and scripts wait
    for this line, not for "Listening at", before sending learners; with `announce` (`--announce`: scripts/run)
    the site's address is printed then too, so whoever opens it first finds the pool warm."""
    from academy.jobs import grading_sandbox

    sandbox = grading_sandbox(app)
    sandbox.ready.wait()
    try:
        how = sandbox.describe()
    except Exception as exc:  # noqa: BLE001 - the sandbox cannot be made: each job says why
        log.warning("ready, but no grading sandbox works here: %s", exc)
        return
    log.info("ready: grading with %s", how)
    if announce:
        print(f"Deep Learning Academy is at {announce}", flush=True)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# --- the processes: one serves in place; several are forked from a parent that holds the port

def bind(address: str, backlog: int, reuse_port: bool = False, listen: bool = True) -> socket.socket:
    """A socket bound to HOST:PORT, listening unless told not to. With `reuse_port`, SO_REUSEPORT: several
    processes' listening sockets on one port, and the kernel spreads new connections evenly among them."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family, kind, proto, _name, where = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM,
                                                           flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(where)
    if listen:
        sock.listen(backlog)
    return sock


def supervise(options: argparse.Namespace) -> int:
    """Fork `options.processes` serving processes, each listening on the port with its own SO_REUSEPORT socket (one
    shared socket would let whichever process wakes first take most connections); restart any that dies; pass stop
    signals on. The parent holds the port bound, not listening (so no connection waits on it), while it runs."""
    held = bind(options.bind, options.backlog, reuse_port=True, listen=False)  # the port is ours, or fail here
    children: dict[int, float] = {}
    stopping: list[float] = []

    def spawn() -> None:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
                held.close()
                serve(bind(options.bind, options.backlog, reuse_port=True), options)
            except BaseException:  # noqa: BLE001 - the parent reports it and starts another
                log.exception("serving process failed")
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children[pid] = time.monotonic()

    def on_signal(signum: int, _frame: Any) -> None:
        if stopping:
            if time.monotonic() - stopping[0] <= 1:
                return  # the same Ctrl-C, once from the terminal and once from scripts/run
            signum = signal.SIGKILL  # a second signal: at once
        stopping.append(time.monotonic())
        for pid in list(children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        signal.alarm(int(options.graceful_timeout) + 10)

    def on_alarm(_signum: int, _frame: Any) -> None:
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGALRM, on_alarm)
    for _ in range(options.processes):
        spawn()
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        started = children.pop(pid, None)
        if started is None or stopping:
            continue
        log.warning("serving process %d ended (%s): starting another", pid, status)
        if time.monotonic() - started < 5:
            time.sleep(1)  # one that dies at once (a broken instance) is not restarted in a tight loop
        if not stopping:
            spawn()
    return 0


def options_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m academy.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bind", default="127.0.0.1:5000", help="HOST:PORT to listen on")
    parser.add_argument("--threads", type=int, default=8, help="threads per process that run requests")
    parser.add_argument("--processes", type=int, default=1, help="serving processes sharing the port")
    parser.add_argument("--request-timeout", type=float, default=30.0,
                        help="seconds a request's headers and body may take to arrive, from its first byte")
    parser.add_argument("--idle-timeout", type=int, default=60,
                        help="seconds a connection may stay without any traffic (keep-alive, unread answers)")
    parser.add_argument("--connections", type=int, default=1000, help="open connections per process at most")
    parser.add_argument("--connections-per-address", type=int, default=0,
                        help="open connections per process from one client address (the TCP peer; an IPv6 one as "
                             "its DLA_IPV6_PREFIX network) at most; 0: half of --connections, or all of them "
                             "when the app trusts proxies (DLA_TRUSTED_PROXIES)")
    parser.add_argument("--first-byte-timeout", type=float, default=3.0,
                        help="seconds a new connection may stay silent before its first byte (then it is closed)")
    parser.add_argument("--graceful-timeout", type=float, default=60.0,
                        help="seconds after SIGTERM for requests in progress and grading jobs to finish")
    parser.add_argument("--backlog", type=int, default=1024, help="connections the kernel queues for accept")
    parser.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=True,
                        help="one line per request on stdout (gunicorn's format)")
    parser.add_argument("--announce", action="store_true",
                        help="print the site's address once the grading pool is warm (scripts/run)")
    parser.add_argument("--max-body", type=int, default=0, help=argparse.SUPPRESS)  # tests' own apps only
    return parser


def main(argv: list[str] | None = None) -> int:
    options = options_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s")
    if options.processes <= 1:
        serve(bind(options.bind, options.backlog), options)
        return 0
    return supervise(options)


if __name__ == "__main__":
    sys.exit(main())
