"""`tinylab serve`'s lab command (textual-serve itself is an optional extra)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.foreign import plant

from tinylab.tui.serve import lab_command


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P needs Python 3.11; the served lab keeps the caller's folder")
def test_the_served_lab_never_imports_from_the_callers_folder(tmp_path):
    """Each browser session starts `python -m tinylab lab`: from a folder holding a tinylab/ or
    torch.py of one's own, that would be the code that runs."""
    sentinel = plant(tmp_path)
    command = lab_command(str(tmp_path / "runs"))
    assert command[-2:] == ["--runs-dir", str(tmp_path / "runs")]
    proc = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0 and "--runs-dir" in proc.stdout, proc.stderr
    assert not sentinel.exists(), sentinel.read_text()


# ------------------------------------------------------------------------------ for its owner only
aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")


class FakeAppService:
    """textual-serve's AppService, recording each lab it would start instead of starting one."""

    started: list = []

    def __init__(self, command, **_):
        self.command = command

    async def start(self, width, height):
        FakeAppService.started.append(self.command)

    async def stop(self):
        pass


def _served(monkeypatch, tmp_path, host="localhost"):
    """The guarded app on a free port of `host`, a lab never started (FakeAppService), and the token."""
    import textual_serve.server

    from tinylab.tui.serve import bind, make_server

    FakeAppService.started = []
    monkeypatch.setattr(textual_serve.server, "AppService", FakeAppService)
    listen = bind(host, 0, allow_remote=False)
    for sock in listen.socks:
        sock.close()  # the test server listens itself
    return make_server(str(tmp_path / "runs"), listen, "s3cret-token"), listen


def _exchange(server, listen, steps):
    """Run `steps(client)` against the server's aiohttp app on the port bind() chose."""
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    async def main():
        app = await server._make_app()
        app.on_startup.clear()
        async with TestClient(TestServer(app, host="127.0.0.1", port=listen.port)) as client:
            return await steps(client)

    return asyncio.run(main())


def test_the_page_needs_the_printed_token_then_its_cookie(monkeypatch, tmp_path):
    server, listen = _served(monkeypatch, tmp_path)

    async def steps(client):
        refused = [(await client.get(path)).status for path in ("/", "/?token=wrong", "/static/js/textual.js")]
        page = await client.get("/?token=s3cret-token")
        text = await page.text()
        again = await client.get("/")  # the cookie set by the page
        return refused, page.status, text, page.cookies, again.status

    refused, status, text, cookies, again = _exchange(server, listen, steps)
    assert refused == [403, 403, 403]
    assert status == 200 and f'data-session-websocket-url="ws://127.0.0.1:{listen.port}/ws"' in text
    assert cookies[f"tinylab-token-{listen.port}"]["httponly"] and again == 200
    assert FakeAppService.started == []


def test_the_socket_refuses_no_token_and_a_foreign_origin_before_any_lab_starts(monkeypatch, tmp_path):
    server, listen = _served(monkeypatch, tmp_path)
    own = f"http://127.0.0.1:{listen.port}"

    async def steps(client):
        statuses = []
        for query, origin in (("", own), ("?token=wrong", own), ("?token=s3cret-token", "http://evil.example")):
            try:
                ws = await client.ws_connect("/ws" + query, headers={"Origin": origin})
                await ws.close()
                statuses.append(101)
            except aiohttp.WSServerHandshakeError as exc:
                statuses.append(exc.status)
        refused_started = list(FakeAppService.started)
        await client.get("/?token=s3cret-token")  # the page sets the cookie its WebSocket carries
        ws = await client.ws_connect("/ws?width=80&height=24", headers={"Origin": own})
        await ws.send_json(["ping", "1"])
        pong = await ws.receive_json(timeout=5)
        await ws.close()
        rebinding = await client.get("/?token=s3cret-token", headers={"Host": f"evil.example:{listen.port}"})
        return statuses, refused_started, pong, rebinding.status

    statuses, refused_started, pong, rebinding = _exchange(server, listen, steps)
    assert statuses == [403, 403, 403] and refused_started == []
    assert pong == ["pong", "1"] and len(FakeAppService.started) == 1
    assert rebinding == 403  # a name of the attacker's that resolves to 127.0.0.1


@pytest.mark.parametrize("host, port, message", [
    ("localhost", -1, "--port must be an integer from 0 to 65535"),
    ("localhost", 99999, "--port must be an integer from 0 to 65535"),
    ("256.1.1.1", 0, "not an address or a name"),
    ("", 0, "serves the lab to the network"),
    ("0.0.0.0", 0, "add --allow-remote"),
])
def test_bad_hosts_and_ports_are_one_line_errors(host, port, message):
    from tinylab.core.errors import UserError
    from tinylab.tui.serve import bind

    with pytest.raises(UserError, match=message):
        bind(host, port, allow_remote=False)


def test_a_port_in_use_is_an_error_and_port_0_listens_where_it_says():
    from tinylab.core.errors import UserError
    from tinylab.tui.serve import bind

    listen = bind("127.0.0.1", 0, allow_remote=False)
    try:
        assert listen.port > 0 and all(s.getsockname()[1] == listen.port for s in listen.socks)
        with pytest.raises(UserError, match=f"port {listen.port} on 127.0.0.1 is in use"):
            bind("127.0.0.1", listen.port, allow_remote=False)
    finally:
        for sock in listen.socks:
            sock.close()
