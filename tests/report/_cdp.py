"""A small Chrome DevTools Protocol driver for headless Chromium with networking cut off."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"

#: Every request that would leave the page goes to a proxy nobody listens on (loopback
#: included: ``<-loopback>`` removes the implicit bypass) and every host name fails to
#: resolve; the DevTools socket we drive is served by the browser and is not affected.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)

_BAD_CONSOLE = ("error", "assert")
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def chromium_binary() -> str | None:
    """The Chromium executable, or ``None``."""
    return CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")


class Browser:
    """One headless Chromium process and a CDP session on its first tab.

    Events (console calls, exceptions, log entries, requests) are kept in ``events``.
    """

    def __init__(self, binary: str, profile: Path, timeout: float = 60.0) -> None:
        import websocket

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                self.close()
                raise RuntimeError(f"chromium did not start: {err[-2000:]}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = self._get_json(f"http://127.0.0.1:{port}/json/list", deadline)
        page = next(t for t in targets if t.get("type") == "page")
        self.timeout = timeout
        self.ws = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True
        )
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    @staticmethod
    def _get_json(url: str, deadline: float) -> Any:
        while True:
            try:
                with _DIRECT.open(url, timeout=5) as r:
                    return json.loads(r.read())
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        my_id = self._next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float) -> None:
        """Block until an event named ``method`` arrives (or raise ``TimeoutError``)."""
        deadline = time.monotonic() + timeout
        if any(e["method"] == method for e in self.events):
            return
        try:
            while time.monotonic() < deadline:
                self.ws.settimeout(max(0.1, deadline - time.monotonic()))
                msg = json.loads(self.ws.recv())
                if "method" in msg:
                    self.events.append(msg)
                    if msg["method"] == method:
                        return
        finally:
            self.ws.settimeout(self.timeout)
        raise TimeoutError(f"no {method} within {timeout}s")

    def open(self, url: str, timeout: float = 60.0) -> None:
        """Navigate and wait for the load event."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str) -> Any:
        """Run JavaScript in the page and return its JSON value."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error-level log entries so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in _BAD_CONSOLE:
                args = " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                out.append(f"console.{p['type']}: {args}")
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def requested_urls(self) -> list[str]:
        """Every URL the page asked for (network, file and data requests)."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path, width: int = 1280) -> None:
        """Save a PNG of the whole page."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=min(height, 16000),
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
