"""A local stand-in for the OpenAI and Anthropic HTTP APIs, driven by the real SDK clients in tests.

No LLM service is reachable from CI, so the providers are tested at the wire level: the SDKs send
real requests to 127.0.0.1 and parse real response bodies. Replies come from a scripted queue of
response specs (plain dicts, so a JSON file can hold them too):

    {"text": "..."}                                   assistant text
    {"tool": {"name": "propose_edits", "arguments": {...} | "raw string"}, "text": "..."}
    {"status": 429, "retry_after": 0.05}              an HTTP error (any status), optional Retry-After
                                                      and "message" (the error body's message)
    {"garbage": "not json {"}                         200 with a body that is not JSON
    {"delay": 2.0, ...}                               sleep before answering (to trip client timeouts)
    {"usage": {"input": 12, "output": 34}, ...}       token counts to report (defaults are computed)

The same spec answers either protocol: `/v1/chat/completions` gets an OpenAI `chat.completion`
(tool calls as `tool_calls` with JSON-string arguments), `/v1/messages` an Anthropic `message`
(tool calls as `tool_use` blocks with an `input` object). Every request is recorded (method, path,
headers, JSON body). When the queue is empty the last spec repeats, or `default` answers if set.

A spec may say which requests it answers, for callers whose order of calls is hard to predict:

    {"when": {"tool": "route"}, "tool": {...}}             only a request offering the `route` tool
    {"when": {"contains": "the L1 agent"}, ...}            only a request whose text holds that string
    {"when": {"contains": ["a", "b"]}, ...}                 ... that holds every one of these strings
                                                           (system, messages and tool schemas)

Anthropic requests with `"stream": true` get Server-Sent Events (message_start, content blocks with
text / input_json deltas, message_delta, message_stop), as the real API; `{"sse": false, ...}` answers
such a request with a plain JSON message instead; Claude Code discards it and asks again without
streaming, so the spec stays queued for that second request.
`/v1/messages/count_tokens` answers `{"input_tokens": N}` without taking a spec. In tool arguments,
`{cwd}` becomes the working directory the request's system prompt names ("Primary working directory:
PATH", as Claude Code writes it), so a script can name files in a workspace made at run time.
A spec may hold several tool calls: `{"tools": [{"name": ..., "arguments": {...}}, ...]}`.

A request takes the first queued spec that matches it (a spec without `when` matches any request).
A spec with `"keep": true` stays queued when it answers: a script of kept specs, most specific first,
answers each request by what it holds, not by its order, so several clients (a grid's workers) can
share one server.
When none is queued, `default` answers if set, else the most recent spec served that matches (so a
spent script keeps answering each kind of request in kind), else the last spec served.

Standalone, for an end-to-end check: `python tests/fake_llm_server.py --port 8765 --script replies.json`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_ids = itertools.count(1)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON

    @property
    def authorization(self) -> str:
        return self.headers.get("authorization", "") or self.headers.get("x-api-key", "")


def _usage(spec: dict[str, Any], body: Any) -> tuple[int, int]:
    u = spec.get("usage") or {}
    prompt = json.dumps(body.get("messages", []) if isinstance(body, dict) else body)
    reply = json.dumps(spec.get("text", "")) + json.dumps((spec.get("tool") or {}).get("arguments", ""))
    return int(u.get("input", max(1, len(prompt) // 4))), int(u.get("output", max(1, len(reply) // 4)))


def openai_body(spec: dict[str, Any], req: Any) -> dict[str, Any]:
    n = next(_ids)
    model = req.get("model", "fake") if isinstance(req, dict) else "fake"
    msg: dict[str, Any] = {"role": "assistant", "content": spec.get("text"), "refusal": None}
    finish = "stop"
    if spec.get("tool"):
        t = spec["tool"]
        args = t.get("arguments", {})
        msg["tool_calls"] = [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": t.get("name", "propose_edits"),
                         "arguments": args if isinstance(args, str) else json.dumps(args)},
        }]
        finish = "tool_calls"
    pin, pout = _usage(spec, req)
    return {
        "id": f"chatcmpl-fake{n}", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": pin, "completion_tokens": pout, "total_tokens": pin + pout},
    }


_CWD_RE = re.compile(r"Primary working directory: (\S+)")


def _subst_cwd(x: Any, cwd: str) -> Any:
    if isinstance(x, str):
        return x.replace("{cwd}", cwd)
    if isinstance(x, dict):
        return {k: _subst_cwd(v, cwd) for k, v in x.items()}
    if isinstance(x, list):
        return [_subst_cwd(v, cwd) for v in x]
    return x


def anthropic_body(spec: dict[str, Any], req: Any) -> dict[str, Any]:
    n = next(_ids)
    model = req.get("model", "fake") if isinstance(req, dict) else "fake"
    content: list[dict[str, Any]] = []
    if spec.get("text"):
        content.append({"type": "text", "text": spec["text"]})
    stop = "end_turn"
    m = _CWD_RE.search("\n".join(_strings(req)))
    for i, t in enumerate(([spec["tool"]] if spec.get("tool") else []) + list(spec.get("tools") or [])):
        args = _subst_cwd(t.get("arguments", {}), m.group(1) if m else "")
        if isinstance(args, str):  # Anthropic always sends an object; a raw string becomes text
            content.append({"type": "text", "text": args})
        else:
            content.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": t.get("name", "propose_edits"),
                            "input": args})
            stop = "tool_use"
    pin, pout = _usage(spec, req)
    return {
        "id": f"msg_fake{n}", "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": pin, "output_tokens": pout},
    }


def anthropic_sse(msg: dict[str, Any]) -> bytes:
    """The streamed form of a `message` body: the events the real API sends, in order."""
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
        **msg, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": msg["usage"]["input_tokens"], "output_tokens": 1}}})]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": i})]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                                      "stop_sequence": None},
                                  "usage": {"output_tokens": msg["usage"]["output_tokens"]}}),
               ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {k}\ndata: {json.dumps(v)}\n\n" for k, v in events).encode()


def _error_body(status: int, anthropic: bool, message: str | None = None) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}.get(status, "invalid_request_error")
    msg = message or f"fake server: status {status}"
    if anthropic:
        return {"type": "error", "error": {"type": kind, "message": msg}}
    return {"error": {"message": msg, "type": kind, "param": None, "code": None}}


def _strings(x: Any) -> list[str]:
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in _strings(v)]
    return []


def offered_tools(body: Any) -> list[str]:
    """Names of the tools a request offers (OpenAI `tools[].function.name`, Anthropic `tools[].name`)."""
    if not isinstance(body, dict):
        return []
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            fn = t.get("function")
            name = fn.get("name") if isinstance(fn, dict) else t.get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def matches(spec: dict[str, Any], body: Any) -> bool:
    """Whether `spec` may answer this request: every condition in its `when` holds."""
    when = spec.get("when") or {}
    if "tool" in when and when["tool"] not in offered_tools(body):
        return False
    if "contains" not in when:
        return True
    text = "\n".join(_strings(body))
    need = when["contains"] if isinstance(when["contains"], list) else [when["contains"]]
    return all(n in text for n in need)


def path_of(raw: str) -> str:
    return raw.split("?")[0].rstrip("/")


class FakeLLMServer:
    """Context manager: `with FakeLLMServer([spec, ...]) as srv: OpenAI(base_url=srv.openai_url)`."""

    def __init__(self, script: list[dict[str, Any]] | None = None, *, default: dict[str, Any] | None = None,
                 host: str = "127.0.0.1", port: int = 0, anthropic: bool = True):
        # anthropic=False: only the OpenAI routes, as llama-cpp-python's server (/v1/messages is a 404)
        self.anthropic = anthropic
        self._queue: deque[dict[str, Any]] = deque(script or [])
        self._last: dict[str, Any] | None = None
        self._served: list[dict[str, Any]] = []
        self.default = default
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread: threading.Thread | None = None

    # -- script -----------------------------------------------------------------------------
    def push(self, *specs: dict[str, Any]) -> None:
        with self._lock:
            self._queue.extend(specs)

    def _next_spec(self, body: Any = None) -> dict[str, Any]:
        with self._lock:
            for i, spec in enumerate(self._queue):
                if matches(spec, body):
                    if not spec.get("keep"):
                        del self._queue[i]
                    self._last = spec
                    self._served.append(spec)
                    return spec
            if self.default is not None:
                return self.default
            for spec in reversed(self._served):
                if spec.get("when") and matches(spec, body):
                    return spec
            if self._last is not None:
                return self._last
            return {"text": "fake server: no script"}

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:  # the OpenAI SDK's base_url includes /v1
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:  # the Anthropic SDK appends /v1/messages itself
        return self.url

    def start(self) -> FakeLLMServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping on a `delay`
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP -------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass  # keep test output clean

            def _send(self, status: int, body: bytes, ctype: str = "application/json",
                      headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

            def _record(self, body: Any) -> None:
                with server._lock:
                    server.requests.append(RecordedRequest(
                        self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                self._record(None)
                if self.path.rstrip("/").endswith("/v1/models"):
                    data = {"object": "list", "data": [
                        {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}]}
                    self._send(200, json.dumps(data).encode())
                elif (path := path_of(self.path)).endswith("/chat/completions") or (
                        server.anthropic and path.endswith("/v1/messages")):
                    self._send(405, json.dumps(_error_body(405, False)).encode())  # a POST route, as real servers say
                else:
                    self._send(404, json.dumps(_error_body(404, False)).encode())

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode("utf-8", "replace")
                try:
                    body: Any = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw
                self._record(body)
                path = path_of(self.path)
                if path.endswith("/v1/messages/count_tokens"):
                    n_tok = max(1, len(json.dumps(body)) // 4)
                    self._send(200, json.dumps({"input_tokens": n_tok}).encode())
                    return
                is_anthropic = path.endswith("/v1/messages")
                if not ((is_anthropic and server.anthropic) or path.endswith("/chat/completions")):
                    self._send(404, json.dumps(_error_body(404, False)).encode())
                    return
                spec = server._next_spec(body)
                if spec.get("delay"):
                    if server._stop.wait(float(spec["delay"])):
                        return
                if "garbage" in spec:
                    self._send(200, str(spec["garbage"]).encode(), ctype=spec.get("content_type", "application/json"))
                    return
                status = int(spec.get("status", 200))
                if status != 200:
                    headers = {}
                    if spec.get("retry_after") is not None:
                        headers["retry-after"] = str(spec["retry_after"])
                    body_ = _error_body(status, is_anthropic, spec.get("message"))
                    self._send(status, json.dumps(body_).encode(), headers=headers)
                    return
                data = anthropic_body(spec, body) if is_anthropic else openai_body(spec, body)
                wants_stream = is_anthropic and isinstance(body, dict) and body.get("stream")
                if wants_stream and spec.get("sse", True) is False and spec is not server.default:
                    with server._lock:  # the client discards this answer and asks again without streaming
                        server._queue.appendleft(spec)
                if wants_stream and spec.get("sse", True):
                    self._send(200, anthropic_sse(data), ctype="text/event-stream")
                else:
                    self._send(200, json.dumps(data).encode())

        return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--script", type=Path, help="JSON file: a list of response specs")
    ap.add_argument("--default-text", default=None, help="reply with this text once the script is spent "
                                                         "(default: repeat the last spec)")
    a = ap.parse_args()
    script = json.loads(a.script.read_text()) if a.script else []
    default = {"text": a.default_text} if a.default_text is not None else None
    srv = FakeLLMServer(script, default=default, host=a.host, port=a.port)
    print(f"fake LLM server on {srv.url} (OpenAI base_url {srv.openai_url}, Anthropic base_url {srv.anthropic_url})",
          flush=True)
    try:
        srv._httpd.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        srv._httpd.server_close()


if __name__ == "__main__":
    main()
