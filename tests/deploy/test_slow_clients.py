"""Slow clients against the server as `scripts/run` starts it (academy/serve.py: waitress), attacking a running
server over real sockets: connections that send their headers one byte at a time, or declare a body and send it
one byte at a time, or ask for a large file and never read it, many more of them than the server has threads.
Another learner's page still answers at once, and the slow ones are dropped after the request timeout. The
same attacks against the shape before (gunicorn's gthread worker, as many threads) leave that page without an
answer: the `gunicorn` parameters, which run only with DLA_TEST_OLD_SHAPE=1 (each waits out the bound).

The server's command is taken from scripts/run itself and run with its environment variables set small
(2 threads, a 2 s request timeout), so these tests start what the operator starts."""
from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from tests.support.clients import Client
from tests.support.paths import REPO
from tests.support.processes import free_port, stop_group
from tests.support.servers import IDLE_TIMEOUT_S, REQUEST_TIMEOUT_S, THREADS, ScriptedServer

pytestmark = pytest.mark.slow

ATTACKERS = 4 * THREADS  # of each kind: twice as many slow connections as threads, and more
PAGE_BOUND_S = 8.0  # another learner's page answers within this (it takes a fraction of a second unattacked)
OLD_SHAPE = os.environ.get("DLA_TEST_OLD_SHAPE") == "1"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    started: list[ScriptedServer] = []

    def start(shape: str = "waitress", **env: str) -> ScriptedServer:
        server = ScriptedServer(tmp_path / f"server-{len(started)}", shape, env)
        server.folder.mkdir()
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


class Attack:
    """Slow connections, each fed one more byte every 0.1 s by one thread; each one's end is noted."""

    def __init__(self, port: int):
        self.port = port
        self.sockets: list[tuple[socket.socket, bytes]] = []
        self.sent: list[int] = []
        self.closed_at: dict[int, float] = {}
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)

    def open(self, first: bytes, rest: bytes, receive_buffer: int | None = None) -> None:
        sock = socket.socket()
        if receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.connect(("127.0.0.1", self.port))
        sock.sendall(first)
        sock.setblocking(False)
        self.sockets.append((sock, rest))
        self.sent.append(0)

    def slow_headers(self, count: int) -> None:
        for _ in range(count):  # a header line that never ends
            self.open(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", b"a" * 100_000)

    def slow_bodies(self, count: int) -> None:
        for _ in range(count):  # a form that says 60 000 bytes are coming, and sends them one at a time
            self.open(b"POST /auth/signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n"
                      b"Content-Type: application/x-www-form-urlencoded\r\n\r\n", b"x" * 60_000)

    def unread_answers(self, count: int) -> None:
        for _ in range(count):  # a 460 KB file asked for through a 4 KiB window, and never read
            self.open(b"GET /static/editor.bundle.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"", receive_buffer=4096)

    def start(self) -> Attack:
        self._thread.start()
        return self

    def _feed(self) -> None:
        while not self._stop.is_set():
            for number, (sock, rest) in enumerate(self.sockets):
                if number in self.closed_at:
                    continue
                if rest == b"":  # a reader that never reads (the server's end is watched instead)
                    continue
                try:
                    if self.sent[number] < len(rest):
                        sock.send(rest[self.sent[number]:self.sent[number] + 1])
                        self.sent[number] += 1
                    readable, _, _ = select.select([sock], [], [], 0)
                    if readable and not sock.recv(65536, socket.MSG_PEEK):
                        self.closed_at[number] = time.monotonic()
                except OSError:
                    self.closed_at[number] = time.monotonic()
            self._stop.wait(0.1)

    def all_closed(self, timeout: float, senders_only: bool = False) -> bool:
        deadline = time.monotonic() + timeout
        watched = {n for n, (_sock, rest) in enumerate(self.sockets) if rest or not senders_only}
        while time.monotonic() < deadline:
            if watched <= set(self.closed_at):
                return True
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock, _rest in self.sockets:
            sock.close()


def page_answers_within(server: ScriptedServer, bound: float) -> float | None:
    """Seconds another learner's page (the home page) took, or None when it had not answered within `bound`."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=bound)
    try:
        connection.request("GET", "/")
        answer = connection.getresponse()
        body = answer.read()
    except (TimeoutError, socket.timeout):
        return None
    finally:
        connection.close()
    assert answer.status == 200 and b"Deep Learning Academy" in body, (answer.status, server.logs())
    return time.monotonic() - started


class ModelServer:
    """An OpenAI-compatible model server that streams its answer one token at a time, and sends each next token
    only once the test has seen the one before arrive through the academy: an answer that the academy's server
    held back in a buffer would stall it (each wait is bounded, and noted)."""

    TOKENS = ["Scale ", "the ", "loss ", "before ", "backward."]

    def __init__(self) -> None:
        self.seen = [threading.Event() for _ in self.TOKENS]
        self.waited_out: list[int] = []
        self.release = threading.Event()  # set: stream without waiting
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for number, token in enumerate(model.TOKENS):
                    event = {"choices": [{"delta": {"content": token}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                    if not model.release.is_set() and not model.seen[number].wait(5):
                        model.waited_out.append(number)
                done = {"choices": [{"delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.release.set()
        for seen in self.seen:
            seen.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    server = ModelServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: ModelServer) -> Iterator[ScriptedServer]:
    """One server for the attacks, the stream and the log (each test leaves it as it found it)."""
    served = ScriptedServer(tmp_path_factory.mktemp("served"), "waitress",
                    {"DLA_TUTOR": "1", "DLA_TUTOR_URL": model.url, "DLA_TRUSTED_PROXIES": "1"}).start()
    yield served
    served.stop()


def attack_and_time_a_page(server: ScriptedServer) -> tuple[Attack, float | None]:
    attack = Attack(server.port)
    attack.slow_headers(ATTACKERS)
    attack.slow_bodies(ATTACKERS)
    attack.unread_answers(ATTACKERS)
    attack.start()
    senders = [n for n, (_sock, rest) in enumerate(attack.sockets) if rest]
    while min(attack.sent[n] for n in senders) < 3:  # every slow sender is trickling, well past its first byte
        assert time.monotonic() - attack.started < 10
        time.sleep(0.05)
    return attack, page_answers_within(server, PAGE_BOUND_S)


def test_slow_clients_hold_no_thread_and_are_dropped(server: ScriptedServer) -> None:
    attack, took = attack_and_time_a_page(server)
    try:
        assert took is not None, \
            f"no page within {PAGE_BOUND_S} s under {3 * ATTACKERS} slow clients, {THREADS} threads:\n{server.logs()}"
        # The senders are dropped by the request timeout (they kept sending, so never idle): after it, within
        # the 1 s cleanup pass and some slack.
        assert attack.all_closed(REQUEST_TIMEOUT_S + 6, senders_only=True), (attack.closed_at, server.logs())
        assert all(at - attack.started >= REQUEST_TIMEOUT_S - 0.5 for at in attack.closed_at.values())
        assert f"its request was not whole after {REQUEST_TIMEOUT_S} s" in server.logs()
        # The readers that never read: closed after the idle timeout, their buffered answers let go.
        ports = {sock.getsockname()[1] for sock, rest in attack.sockets if not rest}
        deadline = time.monotonic() + IDLE_TIMEOUT_S + 6
        while held := [c for c in psutil.Process(server.process.pid).net_connections("tcp")
                       if c.raddr and c.raddr.port in ports]:
            assert time.monotonic() < deadline, (held, server.logs())
            time.sleep(0.2)
        assert page_answers_within(server, PAGE_BOUND_S) is not None
    finally:
        attack.stop()


@pytest.mark.skipif(not OLD_SHAPE, reason="the shape before, shown to fail: DLA_TEST_OLD_SHAPE=1")
def test_the_same_attack_took_the_old_shape_offline(tmp_path: Path) -> None:
    old = ScriptedServer(tmp_path, "gunicorn").start()
    try:
        attack, took = attack_and_time_a_page(old)
        attack.stop()
        assert took is None, f"gunicorn gthread answered in {took:.2f} s: the attack did not hold its threads"
    finally:
        old.stop()


def _events(answer: http.client.HTTPResponse) -> Iterator[tuple[str, dict]]:
    """The server-sent events of `answer`, each as soon as its blank line has arrived."""
    name, data = "", ""
    while line := answer.readline():
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and name:
            yield name, json.loads(data)
            name, data = "", ""


def ask_the_tutor(server: ScriptedServer) -> tuple[Client, http.client.HTTPConnection, http.client.HTTPResponse]:
    learner = Client(server).guest()
    headers = {"Content-Type": "application/json", "X-CSRF-Token": learner.csrf(),
               "Cookie": "; ".join(f"{k}={v}" for k, v in learner.cookies.items())}
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("POST", "/api/tutor/mixed-precision/what-mixed-precision-means",
                       json.dumps({"question": "Why scale the loss?"}), headers)
    answer = connection.getresponse()
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/event-stream"), \
        (answer.status, answer.read()[:500], server.logs())
    return learner, connection, answer


def test_the_tutor_answer_reaches_the_browser_token_by_token(server: ScriptedServer, model: ModelServer) -> None:
    model.release.clear()
    for seen in model.seen:
        seen.clear()
    model.waited_out.clear()
    _learner, connection, answer = ask_the_tutor(server)
    try:
        tokens = []
        for name, data in _events(answer):
            if name == "token":
                tokens.append(data["text"])
                if len(tokens) <= len(model.seen):
                    model.seen[len(tokens) - 1].set()  # the model sends its next token only now
            elif name == "done":
                break
        assert "".join(tokens) == "".join(ModelServer.TOKENS)
        assert model.waited_out == [], f"tokens held back by the server: {model.waited_out}"
    finally:
        connection.close()


def test_access_log_in_gunicorns_format_with_the_trusted_proxys_client(server: ScriptedServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/api/exercises?x=1", headers={
        "X-Forwarded-For": "203.0.113.9", "User-Agent": 'probe "quoted" \xe9', "Referer": "http://example.org/"})
    assert connection.getresponse().read()
    connection.close()
    # The forwarded client (DLA_TRUSTED_PROXIES=1: the server passed the header on), quotes and bytes escaped.
    line = (r'^203\.0\.113\.9 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /api/exercises\?x=1 HTTP/1\.1" '
            r'200 \d+ "http://example\.org/" "probe \\"quoted\\" \\xe9"$')
    deadline = time.monotonic() + 10
    while not re.search(line, server.logs(), re.M):
        assert time.monotonic() < deadline, server.logs()
        time.sleep(0.1)


def test_sigterm_lets_the_answer_in_progress_finish_and_takes_no_new_one(server: ScriptedServer,
                                                                         model: ModelServer) -> None:
    """Last in this module: it stops the module's server. A grading in progress finishes before it exits."""
    model.release.clear()
    for seen in model.seen:
        seen.clear()
    learner, connection, answer = ask_the_tutor(server)
    submitted = learner.submit()
    assert submitted.status == 202, submitted.text
    events = _events(answer)
    try:
        name, data = next(events)
        assert name == "token", (name, data)
        server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while True:  # the port closes at once: no new connection is taken
            try:
                socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            except ConnectionRefusedError:
                break
            assert time.monotonic() < deadline, server.logs()
            time.sleep(0.05)
        tokens = [data["text"]]
        model.seen[0].set()
        for name, data in events:  # the answer in progress goes on to its end
            if name == "token":
                tokens.append(data["text"])
                model.seen[min(len(tokens), len(model.seen)) - 1].set()
            elif name == "done":
                break
        assert "".join(tokens) == "".join(ModelServer.TOKENS) and name == "done", (tokens, name)
    finally:
        connection.close()
    assert server.process.wait(timeout=60) == 0, server.logs()
    assert "stopping: no new connections" in server.logs() and server.logs().rstrip().endswith("stopped")
    with sqlite3.connect(Path(server.env["DLA_INSTANCE"]) / "academy.sqlite") as database:
        status = database.execute("SELECT status FROM submissions WHERE id = ?", (submitted.json()["id"],)).fetchone()
    assert status == ("done",), (status, server.logs())


def test_the_compose_shape_several_processes_share_the_port(tmp_path: Path) -> None:
    """deploy/app/entrypoint's `--processes N`: N serving processes under one parent, one that dies is replaced,
    SIGTERM stops them all."""
    entrypoint = (REPO / "deploy/app/entrypoint").read_text()
    assert "python -m academy.serve --bind 0.0.0.0:8000 --processes \"${DLA_WEB_WORKERS:-4}\"" in entrypoint
    served = ScriptedServer(tmp_path, "waitress")
    served.start_command = [sys.executable, "-m", "academy.serve", "--bind", f"127.0.0.1:{served.port}",
                            "--processes", "2", "--threads", "2", "--graceful-timeout", "10"]
    served.start()
    try:
        def serving() -> list[int]:
            return [int(pid) for pid in re.findall(r"Listening at: http://\S+ \((\d+)\)", served.logs())]

        deadline = time.monotonic() + 60
        while len(serving()) < 2:
            assert time.monotonic() < deadline, served.logs()
            time.sleep(0.1)
        children = {child.pid for child in psutil.Process(served.process.pid).children()}
        assert set(serving()) == children and len(children) == 2, (children, served.logs())
        os.kill(serving()[0], signal.SIGKILL)
        while len(serving()) < 3:  # a third starts in its place
            assert time.monotonic() < deadline, served.logs()
            time.sleep(0.1)
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=30) == 0, served.logs()
        assert served.logs().count("academy.serve: stopped") == 2, served.logs()
    finally:
        served.stop()


# A WSGI app with an answer past waitress's 16 MiB output high-water mark, served by academy.serve's own server.
BIG_ANSWER_SERVER = """
import sys
from academy.serve import bind, options_parser, serve

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    if environ["PATH_INFO"] == "/big":
        return (b"x" * 65536 for _ in range(24 * 16))  # 24 MiB, streamed
    return [b"small"]

options = options_parser().parse_args(sys.argv[1:])
serve(bind(options.bind, options.backlog), options, app=app)
"""


def test_a_reader_that_stops_reading_a_huge_answer_lets_its_thread_go(tmp_path: Path) -> None:
    """Past 16 MiB of unsent answer waitress's thread waits for the client; one that reads nothing for the idle
    timeout is closed, and the thread (the only one here) serves the next request."""
    port = free_port()
    log = tmp_path / "big.log"
    process = subprocess.Popen([sys.executable, "-c", BIG_ANSWER_SERVER, "--bind", f"127.0.0.1:{port}",
                                "--threads", "1", "--idle-timeout", "2"], cwd=REPO, stdout=open(log, "wb"),
                               stderr=subprocess.STDOUT, start_new_session=True)
    reader = socket.socket()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", port))
        reader.sendall(b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # and never reads
        time.sleep(0.5)  # not a race: the next request is bounded either way, this only lets /big start first
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PAGE_BOUND_S + 4)
        connection.request("GET", "/small")
        assert connection.getresponse().read() == b"small", log.read_text()
        assert "it read nothing of its answer for 2 s" in log.read_text()
    finally:
        reader.close()
        stop_group(process, timeout=10)


# -- connections that send nothing: one address's share, the first-byte deadline (red team, issue 51) ----------

def silent_connections(port: int, address: str, count: int) -> list[socket.socket]:
    """`count` connections from `address` (a loopback address of its own) that send nothing. They connect at once
    whether or not the server has accepted them (the kernel's queue holds them)."""
    opened = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((address, 0))
        sock.connect(("127.0.0.1", port))
        opened.append(sock)
    return opened


def closed_by_the_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def held_from(server: ScriptedServer, address: str) -> int:
    """The server's connections from `address` (accepted: the kernel's queue is not the server's)."""
    return sum(1 for c in psutil.Process(server.process.pid).net_connections("tcp")
               if c.raddr and c.raddr.ip == address and c.status == psutil.CONN_ESTABLISHED)


def browser_get(browser: http.client.HTTPConnection, path: str) -> int:
    browser.request("GET", path)
    answer = browser.getresponse()
    answer.read()
    return answer.status


def test_silent_connections_keep_no_other_address_out_and_a_keep_alive_lives_on(serve) -> None:  # noqa: ANN001
    """Two addresses open 30 silent connections each against a process of 12 connections (10 for clients): each
    address holds at most its share (half: 6), a new one past it closing its own oldest silent one, and a full
    process closes the oldest silent connection to take a new one, so another address's page answers at once
    (before, the process stopped accepting until the idle timeout, 30 s here). What is left of the silent ones
    is closed at the first-byte deadline (DLA_WEB_FIRST_BYTE_TIMEOUT=1.5), while a browser's keep-alive
    connection, as idle all that time but after a request, still carries its next request."""
    server = serve(DLA_WEB_CONNECTIONS="12", DLA_WEB_FIRST_BYTE_TIMEOUT="1.5", DLA_WEB_IDLE_TIMEOUT="30")
    browser = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10, source_address=("127.0.0.7", 0))
    held: list[socket.socket] = []
    try:
        assert browser_get(browser, "/api/exercises") == 200
        kept, spoke = browser.sock, time.monotonic()
        held += silent_connections(server.port, "127.0.0.66", 30)
        held += silent_connections(server.port, "127.0.0.67", 30)
        learner = http.client.HTTPConnection("127.0.0.1", server.port, timeout=3, source_address=("127.0.0.8", 0))
        try:
            assert browser_get(learner, "/api/exercises") == 200
        except TimeoutError:
            pytest.fail(f"another address's page did not answer within 3 s:\n{server.logs()}")
        finally:
            learner.close()
        assert held_from(server, "127.0.0.66") <= 6 and held_from(server, "127.0.0.67") <= 6, server.logs()
        while not all(closed_by_the_server(sock) for sock in held):
            assert time.monotonic() - spoke < 8, f"silent connections still open after 8 s:\n{server.logs()}"
            time.sleep(0.05)
        assert time.monotonic() - spoke >= 1.5
        assert browser_get(browser, "/api/exercises") == 200 and browser.sock is kept, "the keep-alive was closed"
        logged = time.monotonic() + 5  # the closings are logged together, once a second
        while not (re.search(r"closed \d+ connections? from 127\.0\.0\.6[67]: over its 6 connections", server.logs())
                   and re.search(r"from 127\.0\.0\.6[67]: it sent nothing within 1\.5 s", server.logs())):
            assert time.monotonic() < logged, server.logs()
            time.sleep(0.1)
    finally:
        browser.close()
        for sock in held:
            sock.close()


def test_one_addresss_share_of_the_connections() -> None:
    """Half of a process's connections by default; all of them behind trusted proxies (every connection is the
    proxy's); what --connections-per-address says otherwise, never more than the process has."""
    from academy.serve import options_parser, per_address

    default, five = options_parser().parse_args([]), options_parser().parse_args(["--connections-per-address", "5"])
    assert (per_address(default, 1000), per_address(default, 16), per_address(default, 1)) == (500, 8, 1)
    assert per_address(default, 1000, trusted_proxies=1) == 1000
    assert (per_address(five, 16), per_address(five, 16, trusted_proxies=1), per_address(five, 4)) == (5, 5, 4)
