"""A web page from another origin, opened in headless Chromium, tries to use ``focus-eval serve`` on 127.0.0.1:
a simple request (text/plain POST, no-cors fetch), a preflighted JSON POST, an XHR, a GET, a form POST and an
image tag. The model is never called, the page reads nothing, and the server's log shows each refusal."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from serve_support import chat_body, send, serving

pytestmark = pytest.mark.slow

ATTACK = """<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="form" method="POST" action="TARGET/chat/completions" enctype="text/plain" target="sink">
<input name='{"model": "fake-mllm", "messages": [{"role": "user", "content": "x"}], "pad": "' value='"}'></form>
<img src="TARGET/models">
<script>
const target = "TARGET";
const body = JSON.stringify({model: "fake-mllm", messages: [{role: "user", content: "Is it?"}]});
async function attempt(name, run) {
  try { window.result[name] = await run(); } catch (e) { window.result[name] = {error: String(e)}; }
}
async function readAll(response) {
  return {type: response.type, status: response.status, text: await response.text()};
}
window.result = {};
window.attack = (async () => {
  await attempt("simple", async () => readAll(await fetch(target + "/chat/completions",
      {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body})));
  await attempt("json", async () => readAll(await fetch(target + "/chat/completions",
      {method: "POST", headers: {"Content-Type": "application/json"}, body})));
  await attempt("get", async () => readAll(await fetch(target + "/models")));
  await attempt("xhr", () => new Promise(resolve => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", target + "/chat/completions");
    xhr.setRequestHeader("Content-Type", "text/plain");
    xhr.onload = () => resolve({status: xhr.status, text: xhr.responseText});
    xhr.onerror = () => resolve({error: "network error", status: xhr.status, text: xhr.responseText});
    xhr.send(body);
  }));
  document.getElementById("form").submit();
  await new Promise(resolve => setTimeout(resolve, 500));
  return window.result;
})();
</script></body></html>"""


class _Page(BaseHTTPRequestHandler):
    page = b""

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        data = self.page if self.path == "/" else b"not here"
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def attacker_site():
    """An http server on another port of this machine that serves the attacker's page."""
    servers = []

    def start(target: str) -> str:
        handler = type("AttackPage", (_Page,), {"page": ATTACK.replace("TARGET", target).encode()})
        site = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=site.serve_forever, daemon=True).start()
        servers.append(site)
        return f"http://127.0.0.1:{site.server_address[1]}/"

    yield start
    for site in servers:
        site.shutdown()
        site.server_close()


def test_a_page_from_another_origin_gets_no_answer_and_never_reaches_the_model(browser, attacker_site, caplog):
    caplog.set_level(logging.INFO, logger="focus_eval.serve")
    with serving() as server:
        page = browser.new_page()
        try:
            page.goto(attacker_site(server.url))
            result = page.evaluate("window.attack")
            assert wait_or_count(caplog, 6)
        finally:
            page.close()
        assert server.adapter.calls == 0
        assert result["simple"] == {"type": "opaque", "status": 0, "text": ""}  # sent, but unreadable
        assert "error" in result["json"] and "error" in result["get"]
        assert "error" in result["xhr"] and result["xhr"]["status"] == 0 and result["xhr"]["text"] == ""
        refused = [r.args for r in caplog.records if r.name == "focus_eval.serve" and r.msg.startswith("refused")]
        kinds = {(method, path, status) for method, path, status, _ in refused}
        assert {("POST", "/v1/chat/completions", 403), ("OPTIONS", "/v1/chat/completions", 403),
                ("GET", "/v1/models", 403)} <= kinds
        assert sum(1 for method, *_ in refused if method == "POST") >= 3  # no-cors fetch, XHR, form
        assert send(server, body=chat_body())[0] == 200 and server.adapter.calls == 1  # the hook counts


def wait_or_count(caplog, n: int, timeout: float = 5.0) -> bool:
    """Whether the server logged at least ``n`` refusals within ``timeout`` (the form and the image land late)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for r in caplog.records if r.name == "focus_eval.serve" and r.msg.startswith("refused")) >= n:
            return True
        time.sleep(0.05)
    return False
