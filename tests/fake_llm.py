"""A real local HTTP model server with scripted replies, for end-to-end LLM tests.

It speaks the two wire formats Thoth's clients use: OpenAI chat completions
(`POST /v1/chat/completions`) and Anthropic Messages (`POST /v1/messages`). The real `openai` /
`anthropic` SDK clients talk to it over TCP on 127.0.0.1; nothing in Thoth is mocked.

Replies are a FIFO queue of `Reply` objects. Every request is recorded (path, headers, JSON
body) before its reply is sent, so a test can count requests even when the client gave up
(timeout). A request arriving with no scripted reply left gets HTTP 599 and is recorded, so an
unexpected retry or an extra call fails the test visibly instead of hanging.

Tool calling: `reply_tool_calls(ToolCallScript(...), ...)` answers the next request with tool
calls in the provider's own shape (OpenAI `message.tool_calls` with JSON-encoded `arguments`,
Anthropic `tool_use` content blocks with an `input` object). A `str` as arguments is sent
verbatim, so a test can script a malformed call.

Tools refused: a request whose tool choice is "none" in its own wire format (OpenAI
`"tool_choice": "none"`, Anthropic `"tool_choice": {"type": "none"}`) cannot be answered with
tool calls, as a real provider constrains its model: a scripted tool-call reply answers it with
its `text_when_refused`, or, without one, with HTTP 400 (the script did not expect the request
to refuse tools). `always_call_tools(...)` scripts a model that calls the same tools whenever it
may and writes its answer only when the request refuses tools; `ignores_tool_choice = True`
plays a server that disregards the tool choice and sends the calls anyway.

Why the model stopped: `finish_reason=...` (on `reply` and `reply_tool_calls`) is sent as
OpenAI's `finish_reason` or Anthropic's `stop_reason` as given (e.g. "length" / "max_tokens":
a reply cut at max_tokens). Unset, a reply ends normally: "stop" / "end_turn", or "tool_calls"
/ "tool_use" for tool calls.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from tests.fake_http import JsonHandler, LocalHTTPFake

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
NO_REPLY_STATUS = 599


@dataclass(frozen=True)
class Reply:
    """One scripted answer: the assistant text, or an HTTP error `status`, after `delay` s."""

    text: str = ""
    status: int = 200
    delay: float = 0.0
    tool_calls: tuple[ToolCallScript, ...] = ()
    # OpenAI finish_reason / Anthropic stop_reason, sent as given; None: the normal ending.
    finish_reason: str | None = None
    # The text a tool-call reply becomes when the request refuses tools (tool choice "none").
    text_when_refused: str | None = None


@dataclass(frozen=True)
class ToolCallScript:
    """One scripted tool call. `arguments`: a dict is sent as JSON (OpenAI) or as the `input`
    object (Anthropic); a str is sent as it is, however malformed."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the decoded JSON body (None when the body was not JSON)
    raw: bytes


def openai_completion(text: str, model: str, n: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def anthropic_message(text: str, model: str, n: int) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def openai_tool_completion(reply: Reply, model: str, n: int) -> dict[str, Any]:
    payload = openai_completion(reply.text, model, n)
    choice = payload["choices"][0]
    choice["message"]["content"] = reply.text or None
    choice["message"]["tool_calls"] = [
        {
            "id": call.id or f"call_{n}_{i}",
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": call.arguments
                if isinstance(call.arguments, str)
                else json.dumps(call.arguments, ensure_ascii=False),
            },
        }
        for i, call in enumerate(reply.tool_calls)
    ]
    choice["finish_reason"] = "tool_calls"
    return payload


def anthropic_tool_message(reply: Reply, model: str, n: int) -> dict[str, Any]:
    payload = anthropic_message(reply.text, model, n)
    text_blocks = payload["content"] if reply.text else []
    payload["content"] = [
        *text_blocks,
        *(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_{n}_{i}",
                "name": call.name,
                "input": call.arguments,
            }
            for i, call in enumerate(reply.tool_calls)
        ),
    ]
    payload["stop_reason"] = "tool_use"
    return payload


def tools_refused(path: str, body: Any) -> bool:
    """The request's tool choice is "none", in the shape its own wire format gives it."""
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    if path == ANTHROPIC_PATH:
        return choice == {"type": "none"}
    return choice == "none"


def error_body(path: str, status: int, message: str) -> dict[str, Any]:
    if path == ANTHROPIC_PATH:
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


class _Handler(JsonHandler):
    def do_POST(self) -> None:
        fake: FakeLLMServer = self.server.fake
        raw, body = self.read_json()
        n, reply = fake._record(
            RecordedRequest(
                method="POST", path=self.path, headers=self.headers_dict(), body=body, raw=raw
            )
        )
        if self.path not in (OPENAI_PATH, ANTHROPIC_PATH):
            self._send(404, error_body(self.path, 404, f"no such endpoint: {self.path}"))
            return
        if reply is None:
            self._send(
                NO_REPLY_STATUS,
                error_body(self.path, NO_REPLY_STATUS, f"request {n}: no scripted reply left"),
            )
            return
        if reply.delay and fake._stopping.wait(reply.delay):
            return  # the server is shutting down: drop the request
        if reply.status != 200:
            self._send(reply.status, error_body(self.path, reply.status, "scripted failure"))
            return
        if reply.tool_calls and tools_refused(self.path, body) and not fake.ignores_tool_choice:
            if reply.text_when_refused is None:
                self._send(
                    400,
                    error_body(
                        self.path,
                        400,
                        f"request {n} refuses tools (tool choice none) but its scripted reply "
                        "is tool calls",
                    ),
                )
                return
            reply = Reply(text=reply.text_when_refused)
        model = body.get("model", "") if isinstance(body, dict) else ""
        if self.path == ANTHROPIC_PATH:
            payload = (
                anthropic_tool_message(reply, model, n)
                if reply.tool_calls
                else anthropic_message(reply.text, model, n)
            )
            if reply.finish_reason is not None:
                payload["stop_reason"] = reply.finish_reason
        else:
            payload = (
                openai_tool_completion(reply, model, n)
                if reply.tool_calls
                else openai_completion(reply.text, model, n)
            )
            if reply.finish_reason is not None:
                payload["choices"][0]["finish_reason"] = reply.finish_reason
        self._send(200, payload)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self.send_text(status, json.dumps(payload))


class FakeLLMServer(LocalHTTPFake):
    """`with FakeLLMServer() as server:` serves on 127.0.0.1:<free port> in a daemon thread."""

    def __init__(self) -> None:
        super().__init__(_Handler, "fake-llm")
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._standing: Reply | None = None  # the reply once the queue is empty
        self.ignores_tool_choice = False

    # -- script and record ----------------------------------------------------------

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (Anthropic base URL; add `/v1` for OpenAI)."""
        return f"http://127.0.0.1:{self.port}"

    def reply(
        self,
        text: str = "",
        *,
        status: int = 200,
        delay: float = 0.0,
        finish_reason: str | None = None,
    ) -> None:
        """Queue one answer for the next request."""
        with self._lock:
            self._replies.append(
                Reply(text=text, status=status, delay=delay, finish_reason=finish_reason)
            )

    def reply_tool_calls(
        self,
        *calls: ToolCallScript,
        text: str = "",
        finish_reason: str | None = None,
        delay: float = 0.0,
        text_when_refused: str | None = None,
    ) -> None:
        """Queue one answer made of tool calls (and optional assistant text), after `delay` s;
        `text_when_refused`: what it is instead when the request refuses tools."""
        with self._lock:
            self._replies.append(
                Reply(
                    text=text,
                    tool_calls=tuple(calls),
                    finish_reason=finish_reason,
                    delay=delay,
                    text_when_refused=text_when_refused,
                )
            )

    def always_call_tools(self, *calls: ToolCallScript, answer: str) -> None:
        """From now on, once the queued replies are used: a model that answers every request
        with `calls`, and with `answer` only when the request refuses tools."""
        with self._lock:
            self._standing = Reply(tool_calls=tuple(calls), text_when_refused=answer)

    def reply_json(self, payload: Any, *, delay: float = 0.0) -> None:
        self.reply(json.dumps(payload, ensure_ascii=False), delay=delay)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._replies)

    def _record(self, request: RecordedRequest) -> tuple[int, Reply | None]:
        with self._lock:
            self._requests.append(request)
            reply = self._replies.popleft() if self._replies else self._standing
            return len(self._requests), reply
