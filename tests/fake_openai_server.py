"""A real OpenAI-compatible HTTP server on loopback that answers from a script, for tests.

Each POST to `/v1/chat/completions` takes the next scripted reply (or the default one): a chat
completion with given content and finish reason, an HTTP error status, a raw body, or a delay.
Requests are recorded (body and headers) so tests can see what the client sent. `GET /v1/models`
lists the models it was given, or answers `models_status` (401 for a refused key).
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class ScriptedReply:
    """One answer of the server; `body` replaces the JSON envelope when set."""

    content: str = ""
    status: int = 200
    finish_reason: str = "stop"
    refusal: str | None = None
    delay_s: float = 0.0
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int = 1000
    completion_tokens: int = 200


@dataclass(frozen=True)
class RecordedRequest:
    """What the client sent: the parsed JSON body and the headers."""

    body: dict[str, object]
    headers: dict[str, str]


@dataclass
class _Script:
    replies: deque[ScriptedReply]
    default: ScriptedReply | None
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    models: tuple[str, ...] = ()
    models_status: int = 200
    model_listings: int = 0

    def next_reply(self, request: RecordedRequest) -> ScriptedReply:
        with self.lock:
            self.requests.append(request)
            if self.replies:
                return self.replies.popleft()
        if self.default is not None:
            return self.default
        return ScriptedReply(status=500, body=b'{"error": {"message": "script exhausted"}}')


class FakeOpenAIServer:
    """Serves scripted chat completions on 127.0.0.1 on a free port; use as a context manager."""

    def __init__(
        self,
        replies: Iterable[ScriptedReply] = (),
        default: ScriptedReply | None = None,
        models: Iterable[str] = (),
        models_status: int = 200,
    ) -> None:
        self._script = _Script(deque(replies), default, models=tuple(models))
        self._script.models_status = models_status
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self._script))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The `/v1` root to give an OpenAI client."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._script.lock:
            return list(self._script.requests)

    @property
    def model_listings(self) -> int:
        """How many `GET /models` requests it answered."""
        with self._script.lock:
            return self._script.model_listings

    def push(self, *replies: ScriptedReply) -> None:
        """Queue more replies after those already scripted."""
        with self._script.lock:
            self._script.replies.extend(replies)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._script.closing.set()  # releases delayed replies at once
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def completion_body(reply: ScriptedReply, model: str) -> bytes:
    """The JSON of a chat completion carrying the scripted content."""
    message: dict[str, object] = {"role": "assistant", "content": reply.content}
    if reply.refusal is not None:
        message = {"role": "assistant", "content": None, "refusal": reply.refusal}
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }
    return json.dumps(payload).encode()


def _handler_for(script: _Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without this, Nagle's algorithm and the
            # client's delayed ACK add 40 ms to every reply.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw or b"{}")
            reply = script.next_reply(RecordedRequest(body, dict(self.headers.items())))
            if reply.delay_s and script.closing.wait(reply.delay_s):
                return
            if self.path.rstrip("/") != "/v1/chat/completions":
                reply = ScriptedReply(status=404, body=b'{"error": {"message": "no such path"}}')
            payload = reply.body
            if payload is None and reply.status == 200:
                payload = completion_body(reply, str(body.get("model", "")))
            if payload is None:
                payload = json.dumps({"error": {"message": f"scripted {reply.status}"}}).encode()
            self._send(reply.status, payload, reply.headers)

        def do_GET(self) -> None:
            with script.lock:
                script.model_listings += 1
            if self.path.rstrip("/") != "/v1/models":
                self._send(404, b'{"error": {"message": "no such path"}}')
            elif script.models_status != 200:
                message = {"error": {"message": f"scripted {script.models_status}"}}
                self._send(script.models_status, json.dumps(message).encode())
            else:
                listed = [{"id": m, "object": "model", "owned_by": "test"} for m in script.models]
                self._send(200, json.dumps({"object": "list", "data": listed}).encode())

        def _send(
            self, status: int, payload: bytes, headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            """Keep test output quiet."""

    return Handler
