"""A tiny OpenAI-compatible chat server on loopback, like llama.cpp's, shared by the tests that talk HTTP to a model."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

#: A failure the server answers with: a status, or a status and the headers to send with it (e.g. Retry-After).
Failure = int | tuple[int, dict[str, str]]

_MESSAGES = {429: "slow down", 503: "overloaded"}


class LlamaServer:
    """It can refuse json_schema with HTTP 500, leave out usage, fail the first requests (`failures`, in order) or
    every request (`fail_status`, with `fail_headers`)."""

    def __init__(
        self,
        *,
        refuse_json_schema: bool = True,
        refuse_json_object: bool = False,
        usage: bool = False,
        answer: str | Callable[[dict], str] = '{"trigger": "approve", "args": {}}',
        fail_status: int | None = None,
        fail_headers: dict[str, str] | None = None,
        failures: list[Failure] | None = None,
    ):
        self.requests: list[dict] = []
        self.answer = answer
        self.failures = list(failures or [])
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server_self.requests.append(body)
                failure = server_self.failures.pop(0) if server_self.failures else None
                if failure is None and fail_status is not None:
                    failure = (fail_status, fail_headers or {})
                if failure is not None:
                    status, headers = failure if isinstance(failure, tuple) else (failure, {})
                    message = _MESSAGES.get(status, "refused")
                    self._send(status, {"error": {"code": status, "message": message, "type": "server_error"}}, headers)
                    return
                kind = (body.get("response_format") or {}).get("type")
                if (refuse_json_schema and kind == "json_schema") or (refuse_json_object and kind == "json_object"):
                    self._send(
                        500,
                        {
                            "error": {
                                "code": 500,
                                "message": "unsupported response_format json_schema",
                                "type": "server_error",
                            }
                        },
                    )
                    return
                text = server_self.answer(body) if callable(server_self.answer) else server_self.answer
                reply: dict[str, Any] = {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "smol",
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                }
                if usage:
                    reply["usage"] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
                self._send(200, reply)

            def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def llama(monkeypatch: pytest.MonkeyPatch):
    """Start a server; litellm reaches it as `openai/smol` through OPENAI_API_BASE, as a user points it at llama.cpp."""
    servers: list[LlamaServer] = []

    def start(**kwargs: Any) -> LlamaServer:
        server = LlamaServer(**kwargs)
        servers.append(server)
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local-not-secret")
        return server

    yield start
    for server in servers:
        server.close()
