"""What the server fetches on an LMS's behalf, and where it may go (LTI 1.3: the platform's key set, its token
endpoint, its score service).

An LMS registration names URLs; an instructor types them, and the server then connects to them for anonymous
visitors (a launch fetches the key set) and for grading jobs (the token and score endpoints). Without limits
that is a request forgery: an internal URL (a cloud metadata service, the tool's own admin pages, a database
port) fetched by the server, its answer or its error shown back. So every outbound request here:

- goes only to an `https://` URL with a host name (`http://` only with DLA_LTI_ALLOW_HTTP, for development);
- connects only to a public address: not loopback (except with DLA_LTI_ALLOW_HTTP), private, link-local,
  shared (CGNAT), multicast, reserved or unspecified, nor those hidden in IPv4-mapped, 6to4, Teredo or NAT64
  forms, and never a cloud metadata address; the networks in DLA_LTI_PRIVATE_NETWORKS are allowed although
  private (a campus LMS), never loopback, link-local or metadata. The check is made on the address the socket
  actually connected to, after the connection and before a byte is sent, so a name that resolves to a public
  address when checked and to an internal one when used (DNS rebinding) is refused too;
- follows no redirect, ignores the environment's proxies, and gives up after CONNECT_TIMEOUT_S to connect,
  READ_TIMEOUT_S between two reads, TOTAL_TIMEOUT_S in all, and MAX_RESPONSE_BYTES of answer.

A refusal or a failure raises `OutboundError`, whose `detail` is for the log only (`printable`, truncated,
control characters escaped); the pages and stored errors say a fixed reason of their own (academy/lti/).
"""
from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from academy.logline import printable

CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 5
TOTAL_TIMEOUT_S = 10
MAX_RESPONSE_BYTES = 512 * 1024  # a key set is a few kB; a score service's answer smaller still
MAX_URL_LENGTH = 1000

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata services (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS over IPv6: fd00:ec2::254; ECS task
# metadata: 169.254.170.2; Alibaba: 100.100.100.200; Oracle: 192.0.0.192). Never reached, whatever the settings.
METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192"))
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class OutboundError(Exception):
    """An outbound request refused or failed. `detail` (for the log) may hold upstream text: never show it."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Policy:
    """Where outbound requests may go: `allow_http` permits `http://` URLs, `allow_loopback` loopback addresses
    (DLA_LTI_ALLOW_HTTP sets both), `private_networks` the non-public networks that are allowed."""
    allow_http: bool = False
    allow_loopback: bool = False
    private_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def from_settings(cls, values: Any = None) -> Policy:
        if values is None:
            from academy.settings import settings

            values = settings()
        return cls(allow_http=bool(values.lti_allow_http), allow_loopback=bool(values.lti_allow_http),
                   private_networks=tuple(ipaddress.ip_network(n, strict=False)
                                          for n in values.lti_private_networks))

    def address_allowed(self, address: Address) -> bool:
        """Whether a connection to `address` may be made (every address an IPv6 one embeds is held to it too)."""
        if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
            return False  # a scoped (interface-bound) address is link-local by nature
        for each in (address, *_embedded(address)):
            if each in METADATA or each.is_link_local or each.is_multicast or each.is_unspecified:
                return False
            if each.is_loopback:
                if not self.allow_loopback:
                    return False
                continue
            if each.is_reserved or not each.is_global:
                if not any(each.version == net.version and each in net for net in self.private_networks):
                    return False
        return True

    def check_url(self, url: str) -> str:
        """The URL, stripped, if it is one outbound requests may be made to by its form (scheme, host, no user
        name or password, no control characters); OutboundError otherwise. Addresses are checked on connecting."""
        url = url.strip()
        if not url or len(url) > MAX_URL_LENGTH or any(ord(ch) <= 32 or ord(ch) == 127 for ch in url):
            raise OutboundError("not a URL")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise OutboundError("not a URL") from None
        schemes = ("https", "http") if self.allow_http else ("https",)
        if parts.scheme.lower() not in schemes:
            raise OutboundError(f"the scheme {printable(parts.scheme, 20)!s} is not allowed")
        if not parts.hostname or parts.username is not None or parts.password is not None or port == 0:
            raise OutboundError("no host, or a user name in the URL")
        return url

    def check_host(self, url: str) -> None:
        """OutboundError if the URL's host is (or resolves to) an address that is not allowed. A name that does not
        resolve now passes: it is checked again on every connection."""
        parts = urlsplit(url)
        host = (parts.hostname or "").strip("[]")
        try:
            literal: Address | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [literal]
        else:
            try:
                infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                           type=socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                return
            addresses = [_address(info[4][0]) for info in infos]
        for address in addresses:
            if address is None or not self.address_allowed(address):
                raise OutboundError(f"{printable(host, 100)} is or resolves to an address that is not allowed")


def _address(value: str) -> Address | None:
    try:
        return ipaddress.ip_address(value.split("%", 1)[0]) if "%" not in value else None
    except ValueError:
        return None


def _embedded(address: Address) -> list[Address]:
    """The IPv4 addresses an IPv6 address carries (IPv4-mapped, 6to4, Teredo, NAT64, IPv4-compatible)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in NAT64 or (int(address) >> 32 == 0 and int(address) > 1):  # NAT64, the deprecated ::a.b.c.d
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


# -- the requests session ---------------------------------------------------------------------------------------

_watch = threading.local()  # the sockets of this thread's request in flight (its deadline shuts them)


def session(policy: Policy, user_agent: str | None = None) -> Any:
    """A requests session for `policy`: every connection checked where it landed, no redirects, no proxies, the
    time and size bounds above. Its `request` raises OutboundError for anything it refuses."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    def checked(sock: socket.socket) -> socket.socket:
        try:
            peer = _address(sock.getpeername()[0])
        except OSError:
            peer = None
        if peer is None or not policy.address_allowed(peer):
            sock.close()
            raise OutboundError(f"connected to {peer}, an address that is not allowed")
        watched = getattr(_watch, "sockets", None)
        if watched is not None:
            watched.append(sock)
        return sock

    class CheckedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return checked(super()._new_conn())

    class CheckedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return checked(super()._new_conn())

    class CheckedHTTPPool(HTTPConnectionPool):
        ConnectionCls = CheckedHTTPConnection

    class CheckedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = CheckedHTTPSConnection

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": CheckedHTTPPool, "https": CheckedHTTPSPool}

        def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
            raise OutboundError("proxies are not used")

    class Session(requests.Session):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            policy.check_url(url)
            kwargs.update(allow_redirects=False, stream=True, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                          proxies={})
            # Every request on a connection of its own (checked where it lands), and that connection shut when
            # TOTAL_TIMEOUT_S is over, however the other side drips its headers or its body.
            kwargs["headers"] = {**(kwargs.get("headers") or {}), "Connection": "close"}
            sockets: list[socket.socket] = []
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                for sock in list(sockets):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

            timer = threading.Timer(TOTAL_TIMEOUT_S, expire)
            timer.daemon = True
            _watch.sockets = sockets
            timer.start()
            try:
                return self._bounded(method, url, expired, *args, **kwargs)
            finally:
                timer.cancel()
                _watch.sockets = None

        def _bounded(self, method: str, url: str, expired: threading.Event, *args: Any, **kwargs: Any) -> Any:
            try:
                response = super().request(method, url, *args, **kwargs)
            except OutboundError:
                raise
            except Exception as exc:  # noqa: BLE001 - requests' and urllib3's errors name the URL: detail only
                if expired.is_set():
                    raise OutboundError("answer too slow") from None
                raise OutboundError(f"{type(exc).__name__}: {exc}") from None
            try:
                if response.is_redirect or 300 <= response.status_code < 400:
                    raise OutboundError(f"answered {response.status_code} (a redirect, not followed)")
                length = response.headers.get("Content-Length", "")
                if length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
                    raise OutboundError(f"answer of {length} bytes is too long")
                body = bytearray()
                try:
                    for chunk in response.iter_content(16384):
                        body += chunk
                        if len(body) > MAX_RESPONSE_BYTES:
                            raise OutboundError("answer too long")
                except OutboundError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    if expired.is_set():
                        raise OutboundError("answer too slow") from None
                    raise OutboundError(f"{type(exc).__name__}: {exc}") from None
                if expired.is_set():
                    raise OutboundError("answer too slow")
                response._content = bytes(body)
                response._content_consumed = True
                return response
            finally:
                response.close()

    s = Session()
    s.trust_env = False  # no proxies or .netrc from the environment: a proxy would connect for us, unchecked
    adapter = Adapter(max_retries=0)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    if user_agent:
        s.headers["User-Agent"] = user_agent
    return s


# -- key sets ---------------------------------------------------------------------------------------------------

KEY_SET_TTL_S = 600  # a key set is fetched again after this long
KEY_SET_REFRESH_S = 30  # an unknown kid fetches the key set again, at most this often per URL
KEY_SET_CACHE_SIZE = 200  # URLs remembered (the oldest forgotten first)


class KeySets:
    """The platforms' key sets by URL, fetched through `fetch(url) -> dict` and kept KEY_SET_TTL_S; a kid the kept
    set lacks (the platform rotated its keys) fetches it again, at most once per KEY_SET_REFRESH_S per URL."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[float, dict[str, Any]]] = {}

    def key(self, url: str, kid: str, fetch: Callable[[str], dict[str, Any]]) -> dict[str, Any] | None:
        now = time.monotonic()
        with self._lock:
            kept = self._sets.get(url)
        if kept is not None and now - kept[0] < KEY_SET_TTL_S:
            found = _find(kept[1], kid)
            if found is not None or now - kept[0] < KEY_SET_REFRESH_S:
                return found
        keys = fetch(url)
        with self._lock:
            self._sets[url] = (time.monotonic(), keys)
            while len(self._sets) > KEY_SET_CACHE_SIZE:
                self._sets.pop(next(iter(self._sets)))
        return _find(keys, kid)

    def clear(self) -> None:
        with self._lock:
            self._sets.clear()


def _find(keys: dict[str, Any], kid: str) -> dict[str, Any] | None:
    for key in keys.get("keys") or []:
        if isinstance(key, dict) and key.get("kid") == kid:
            return key
    return None


def fetch_key_set(url: str, policy: Policy) -> dict[str, Any]:
    """The JSON Web Key Set at `url` (a dict with a list of keys); OutboundError if it cannot be had."""
    import json

    response = session(policy).get(url, headers={"Accept": "application/json"})
    if response.status_code != 200:
        raise OutboundError(f"key set answered {response.status_code}")
    try:
        keys = json.loads(response.content)
    except ValueError:
        raise OutboundError(f"key set is not JSON: {printable(response.content[:200])}") from None
    if not isinstance(keys, dict) or not isinstance(keys.get("keys"), list):
        raise OutboundError("key set has no list of keys")
    return keys


key_sets = KeySets()
