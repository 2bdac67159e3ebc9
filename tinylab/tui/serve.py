"""The lab in a browser, through textual-serve (an optional extra), for the one who started it.

A shared node has other users, and a browser has other pages open: without a guard, any local
user could `curl` the page and any web page could open the WebSocket and type into the lab
(launch, cancel, delete). So, as Jupyter does, the server makes a random token and prints it in
the URL; every HTTP and WebSocket request must carry it (in the query, or in the cookie the page
sets once it has loaded: the page's WebSocket carries only the cookie), or it is refused before
any lab process starts. A request from a
page of another origin (its Origin header) or for another host name (DNS rebinding) is refused
too. Listening beyond the loopback interface needs --allow-remote and prints a warning: the
token then travels unencrypted.

textual-serve starts one `tinylab lab` child per browser session; like every Python child tinylab
starts, it runs with `-P` (tinylab.core.childproc), so a `tinylab/`, `torch.py` or `models/` folder
where `tinylab serve` was started is never imported. It keeps the caller's working folder: the
default run store (./tinylab_runs) and any path typed in the lab are relative to it.
"""

from __future__ import annotations

import errno
import ipaddress
import secrets
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Any

from tinylab.core import childproc
from tinylab.core.errors import UserError

#: Names a browser on this machine uses for a server on the loopback interface.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def lab_command(runs_dir: str | None) -> list[str]:
    """argv of the lab that each browser session runs."""
    command = childproc.python("-m", "tinylab", "lab")
    if runs_dir:
        command += ["--runs-dir", runs_dir]
    return command


@dataclass(frozen=True)
class Listen:
    """Where the server listens: the sockets bound (one an address of the host), the host as the
    printed URL names it, and whether that is this machine only."""

    socks: tuple[socket.socket, ...]
    port: int  # the port bound: --port 0 takes any free one
    url_host: str
    loopback: bool


def check_port(port: int) -> int:
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise UserError(f"--port must be an integer from 0 to 65535 (0: any free port), got {port!r}")
    return port


def _addresses(host: str) -> list[tuple[Any, ...]]:
    """getaddrinfo's answers for a host to listen on ('' : every interface)."""
    try:
        return socket.getaddrinfo(host or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise UserError(f"--host {host!r} is not an address or a name this machine can resolve "
                        f"({getattr(exc, 'strerror', None) or exc}): use localhost (the default) or an IP address") from None


def is_loopback(host: str) -> bool:
    """Every address `host` resolves to is a loopback address ('' and 0.0.0.0 are every interface)."""
    if host.strip("[]") in LOOPBACK_NAMES:
        return True
    try:
        return all(ipaddress.ip_address(a[4][0].split("%")[0]).is_loopback for a in _addresses(host))
    except ValueError:
        return False


def bind(host: str, port: int, *, allow_remote: bool) -> Listen:
    """The listening socket, or UserError: a bad host or port, a port in use, a host beyond the
    loopback interface without `allow_remote`."""
    check_port(port)
    addresses = _addresses(host)
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        where = "every interface" if host in ("", "0.0.0.0", "::") else host
        raise UserError(f"--host {host!r} serves the lab to the network ({where}), where anyone with the URL controls "
                        "it and its token travels unencrypted: keep the default (localhost) and use an SSH tunnel, "
                        "or add --allow-remote")
    socks: list[socket.socket] = []
    for family, address in dict.fromkeys((a[0], a[4][:2]) for a in addresses):  # localhost: 127.0.0.1 and ::1
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], socks[0].getsockname()[1] if socks else port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            if socks and exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                continue  # no IPv6 here: the IPv4 socket serves
            for done in socks:
                done.close()
            if exc.errno == errno.EADDRINUSE:
                raise UserError(f"port {port} on {host or 'every interface'} is in use: pick another --port "
                                "(0: any free port)") from None
            raise UserError(f"cannot listen on {host or 'every interface'} port {port}: {exc.strerror or exc}") from None
        socks.append(sock)
    if host in ("", "0.0.0.0", "::"):
        url_host = socket.getfqdn()
    else:
        url_host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return Listen(tuple(socks), socks[0].getsockname()[1], url_host, loopback)


def token_cookie(port: int) -> str:
    """The cookie that carries the token (a browser sends a host's cookies to every port of it: the
    port in the name keeps two servers of one host apart)."""
    return f"tinylab-token-{port}"


def guard(token: str, listen: Listen):
    """aiohttp middleware: the token (query or cookie), the Origin and, on loopback, the Host name
    (a page of evil.example whose name resolves to 127.0.0.1 is not this server's page)."""
    from aiohttp import web

    cookie = token_cookie(listen.port)
    names = {n.strip("[]") for n in LOOPBACK_NAMES | {listen.url_host}}

    @web.middleware
    async def owner_only(request: web.Request, handler):
        host_name = (request.url.host or "").strip("[]")
        if listen.loopback and host_name not in names:
            raise web.HTTPForbidden(text=f"tinylab serve: host {host_name!r} refused\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            raise web.HTTPForbidden(text="tinylab serve: a page of another origin may not use the lab\n")
        given = request.query.get("token")
        presented = given if given is not None else request.cookies.get(cookie, "")
        if not secrets.compare_digest(presented.encode(), token.encode()):
            raise web.HTTPForbidden(text="tinylab serve: open the URL with the token that `tinylab serve` printed\n")
        response = await handler(request)
        if given is not None and not response.prepared:  # a WebSocket is already under way
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
        return response

    return owner_only


def make_server(runs_dir: str | None, listen: Listen, token: str):
    """The textual-serve Server of this lab, with the guard in front of every route."""
    import aiohttp_jinja2
    from textual_serve.server import Server

    class OwnerServer(Server):
        async def _make_app(self):
            app = await super()._make_app()
            app.middlewares.append(guard(token, listen))
            return app

        @aiohttp_jinja2.template("app_index.html")
        async def handle_index(self, request):
            """textual-serve's page, its WebSocket on the host the browser used: the cookie the page
            sets goes with it (textual.js appends its own `?width=..&height=..` to the URL, so the
            token cannot ride in the query there)."""
            context = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]
            scheme = "wss" if request.scheme == "https" else "ws"
            context["app_websocket_url"] = f"{scheme}://{request.host}/ws"
            context["config"]["static"]["url"] = f"{request.scheme}://{request.host}/static/"
            return context

        async def on_startup(self, app) -> None:
            print(f"tinylab lab at {self.public_url}/?token={token}  (Ctrl+C to stop)", flush=True)

        def serve(self, debug: bool = False) -> None:
            import asyncio
            import signal

            from aiohttp import web

            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(self._make_app(), sock=list(listen.socks), handle_signals=False, loop=loop, print=lambda *a: None)

    server = OwnerServer(shlex.join(lab_command(runs_dir)), host=listen.url_host, port=listen.port, title="tinylab")
    server.public_url = f"http://{listen.url_host}:{listen.port}"
    return server


def serve(runs_dir: str | None, host: str, port: int, *, allow_remote: bool = False) -> None:
    import importlib.util

    if importlib.util.find_spec("textual_serve") is None:
        raise UserError("tinylab serve needs textual-serve: pip install -e '.[serve]'")
    listen = bind(host, port, allow_remote=allow_remote)
    if not listen.loopback:
        print(f"tinylab: warning: serving the lab beyond this machine ({host or 'every interface'}): anyone who "
              "reaches the port with the URL controls your lab, and the URL travels unencrypted", file=sys.stderr)
    make_server(runs_dir, listen, secrets.token_urlsafe(32)).serve()
