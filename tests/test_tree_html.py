"""The HTML export in a real browser: headless Chromium, driven over the DevTools protocol.

A real mouse click (Input.dispatchMouseEvent at the node's on-screen centre) must show the node's
edit, metrics, route reason and IR diff; the page must not ask the network for anything. The
websocket client is a few lines of stdlib code, so the test needs no extra package.
Skipped only where no chromium binary is installed (CI installs it: .ci/run).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from candidate_tree import Tree
from leka.core.types import Edit, EvalResult

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,900", "--remote-debugging-port=0"]


class WebSocket:
    """Just enough of RFC 6455 for the DevTools protocol: text frames, client-side masking, pings."""

    def __init__(self, url: str, timeout: float = 30.0):
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._chunk()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        assert b" 101 " in head.split(b"\r\n")[0], head

    def _chunk(self) -> bytes:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("websocket closed")
        return data

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self.buf += self._chunk()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _frame(self, opcode: int, payload: bytes) -> None:
        n, mask = len(payload), os.urandom(4)
        head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else
                                         bytes([0x80 | 126]) + struct.pack(">H", n) if n < 1 << 16 else
                                         bytes([0x80 | 127]) + struct.pack(">Q", n))
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + body)

    def send(self, text: str) -> None:
        self._frame(0x1, text.encode())

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else None
            data = self._exact(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 0x9:
                self._frame(0xA, data)
            elif op == 0x8:
                raise ConnectionError("websocket closed by the browser")
            elif op in (0x0, 0x1, 0x2):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class DevTools:
    def __init__(self, ws_url: str):
        self.ws, self.next_id, self.events = WebSocket(ws_url), 0, []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)

    def js(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr: str, timeout: float = 20.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if v := self.js(expr):
                    return v
            except RuntimeError:  # the page is between documents (navigation, reload)
                pass
            time.sleep(0.05)
        raise TimeoutError(expr)

    def click(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        self.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", clickCount=1)
        self.call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left", clickCount=1)


@pytest.fixture
def browser(tmp_path: Path):
    profile = tmp_path / "profile"
    log = (tmp_path / "chromium.log").open("w")
    proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        port_file, end = profile / "DevToolsActivePort", time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, (tmp_path / "chromium.log").read_text()[-2000:]
            assert time.monotonic() < end, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages: list[dict[str, Any]] = []
        while not pages:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [t for t in json.load(r) if t["type"] == "page"]
            time.sleep(0.05)
        dt = DevTools(pages[0]["webSocketDebuggerUrl"])
        dt.call("Network.enable")
        dt.call("Page.enable")
        yield dt
        dt.ws.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _res(s: float | None, ok: bool = True) -> EvalResult:
    return EvalResult(task="t/html", compiled=True, correct=ok, speedup=s, timing_valid=s is not None,
                      error_kind=None if ok else "mismatch", t_candidate_s=None if s is None else 1e-3 / s,
                      t_baseline_s=1e-3, n_pairs=7, max_abs_err=1e-6)


def _tree(run: Path) -> dict[str, int]:
    t = Tree(run)
    r = t.add_node(None, None, None, "r", result=_res(1.0), route_reason="baseline",
                   artifacts={"relax.py": "def main(x):\n    y = add(x, x)\n    z = relu(y)\n    return z\n"})
    a = t.add_node(r, "L0", Edit(level="L0", kind="pass", payload={"passes": ["FuseOps"]}), "a",
                   result=_res(1.4), route_reason="graph has unfused elementwise chains",
                   artifacts={"relax.py": "def main(x):\n    z = fused_add_relu(x)\n    return z\n"})
    b = t.add_node(a, "L1", Edit(level="L1", kind="trace", target="fused_add_relu",
                                 payload={"steps": ["split 64", "vectorize"]}), "b",
                   result=_res(2.25), route_reason="compute-bound loop nest <fused_add_relu>",
                   profile={"hot": "fused_add_relu"},
                   artifacts={"relax.py": "def main(x):\n    z = fused_add_relu(x)\n    return z\n",
                              "tir/fused_add_relu.py": "for i in T.vectorized(64): ...\n"})
    for i in range(12):  # enough nodes that the layout is wider than one screen
        t.add_node(r if i % 2 else a, "L2", Edit(level="L2", kind="source", payload={"i": i}), f"x{i}",
                   result=_res(None, ok=False), route_reason=f"filler {i}")
    t.close()
    return {"r": r, "a": a, "b": b}


def test_click_on_a_node_shows_its_details(tmp_path: Path, browser: DevTools) -> None:
    ids = _tree(tmp_path / "run")
    with Tree(tmp_path / "run") as t:
        page = t.export_html(tmp_path / "out" / "tree.html")
    browser.call("Page.navigate", url=page.as_uri())
    browser.wait("document.readyState === 'complete' && document.querySelectorAll('g.node').length === 15")
    assert browser.js("document.getElementById('details').getAttribute('data-node')") is None

    b = ids["b"]
    rect = browser.js(f"""(() => {{
        const g = document.querySelector('g.node[data-id="{b}"]');
        g.scrollIntoView({{block: 'center', inline: 'center'}});
        const r = g.querySelector('circle').getBoundingClientRect();
        return {{x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width}};
    }})()""")
    assert rect["w"] > 0
    # The element at that point really is the node (not covered by the details panel).
    assert browser.js(f"document.elementFromPoint({rect['x']}, {rect['y']}).closest('g.node')"
                      f".getAttribute('data-id')") == str(b)
    browser.click(rect["x"], rect["y"])
    browser.wait(f"document.getElementById('details').getAttribute('data-node') === '{b}'", timeout=10)
    details = browser.js("document.getElementById('details').innerText")
    assert f"Node #{b}" in details and "L1" in details and "measured" in details and "2.250x" in details
    assert "compute-bound loop nest <fused_add_relu>" in details  # route reason, text not markup
    edit = json.loads(browser.js("document.getElementById('edit').textContent"))
    assert edit["kind"] == "trace" and edit["payload"]["steps"] == ["split 64", "vectorize"]
    metrics = browser.js("document.getElementById('metrics').innerText")
    assert "n_pairs" in metrics and "max_abs_err" in metrics
    # b's relax.py equals a's: nothing to show, but the comparison is named.
    assert "compared: relax.py (identical)" in details
    assert browser.js(f"document.querySelector('g.node[data-id=\"{b}\"]').classList.contains('selected')")
    assert browser.js("location.hash") == f"#select={b}"

    # Clicking the parent link moves to a, whose IR diff to the root is shown line by line.
    link = browser.js("""(() => { const a = document.querySelector('#details a.nodelink');
        a.scrollIntoView(); const r = a.getBoundingClientRect();
        return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()""")
    browser.click(link["x"], link["y"])
    browser.wait(f"document.getElementById('details').getAttribute('data-node') === '{ids['a']}'", timeout=10)
    diff = browser.js("Array.from(document.querySelectorAll('#diff span')).map(s => s.className + ':' + s.textContent)")
    assert "del:-    y = add(x, x)\n" in diff and "add:+    z = fused_add_relu(x)\n" in diff
    assert f"fhead:--- {ids['r']}/relax.py\n" in diff

    # A URL fragment selects through the same handler.
    browser.call("Page.navigate", url="about:blank")  # a fresh load, not a same-document hash change
    browser.wait("location.href === 'about:blank' && document.readyState === 'complete'")
    browser.call("Page.navigate", url=page.as_uri() + f"#select={ids['r']}")
    browser.wait(f"document.getElementById('details').getAttribute('data-node') === '{ids['r']}'")
    assert "root: no parent to diff against" in browser.js("document.getElementById('details').innerText")

    # Self-contained: every request the page made was for the file itself.
    urls = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    assert urls and all(u.startswith("file://") for u in urls), urls
