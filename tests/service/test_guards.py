"""What a caller cannot get around: keys, label ceilings, request validation and limits."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.answer.test_answer import QUESTION
from tests.fake_embeddings import FakeEmbeddingServer, Reply
from tests.service.conftest import Server, prepare_workspace

PROBLEM = "application/problem+json"


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["status"] == status
    assert body["problems"] and body["message"]
    assert body["request_id"] == response.headers["x-request-id"]
    return body


def raw(server: Server, headers: dict[str, str], params: dict[str, str] | None = None) -> Any:
    return httpx.post(
        f"{server.url}/v1/ask",
        json={"question": QUESTION},
        headers=headers,
        params=params,
        timeout=30,
    )


# -- 401 -------------------------------------------------------------------------------------


def test_no_key_is_401(server: Server) -> None:
    body = problem(raw(server, {}), 401, "unauthorized")
    assert "missing" in body["message"]


@pytest.mark.parametrize(
    "value",
    ["Basic {key}", "Token {key}", "{key}", "Bearer", "Bearer:{key}", "Bearer {key} extra", ""],
)
def test_a_wrong_scheme_is_401(server: Server, value: str) -> None:
    value = value.format(key=server.keys["portal"])
    problem(raw(server, {"Authorization": value}), 401, "unauthorized")


def test_an_unknown_key_is_401(server: Server) -> None:
    problem(raw(server, {"Authorization": "Bearer not-a-key"}), 401, "unauthorized")
    # A key's hash is not a key.
    from thoth.service.callers import hash_key

    hashed = hash_key(server.keys["portal"])
    problem(raw(server, {"Authorization": f"Bearer {hashed}"}), 401, "unauthorized")


def test_a_key_in_the_url_is_refused_even_with_a_good_header(server: Server) -> None:
    key = server.keys["portal"]
    for name in ("key", "api_key", "access_token", "token"):
        body = problem(raw(server, {}, {name: key}), 401, "unauthorized")
        assert name in body["message"]
    body = problem(raw(server, server.headers(), {"api_key": key}), 401, "unauthorized")
    assert "URL" in body["message"]


def test_repeated_authorization_headers_are_401(server: Server) -> None:
    good, other = server.keys["portal"], server.keys["analyst"]
    for pair in ((good, good), ("nope", good), (good, other)):
        headers = [("Authorization", f"Bearer {pair[0]}"), ("Authorization", f"Bearer {pair[1]}")]
        response = httpx.post(
            f"{server.url}/v1/ask", json={"question": QUESTION}, headers=headers, timeout=30
        )
        body = problem(response, 401, "unauthorized")
        assert "2 Authorization headers" in body["message"]


def test_the_scheme_is_case_insensitive_but_the_key_is_not(server: Server) -> None:
    key = server.keys["portal"]
    assert raw(server, {"Authorization": f"bearer {key}"}).status_code == 200
    problem(raw(server, {"Authorization": f"Bearer {key.swapcase()}"}), 401, "unauthorized")


def test_every_v1_route_but_health_needs_a_key(server: Server) -> None:
    assert httpx.get(f"{server.url}/v1/health").status_code == 200
    problem(httpx.get(f"{server.url}/v1/ready"), 401, "unauthorized")
    for path in ("/v1/ask", "/v1/evidence/search", "/v1/knowledge/search"):
        problem(httpx.post(f"{server.url}{path}", json={}), 401, "unauthorized")


# -- 403: the ceiling ------------------------------------------------------------------------


def test_a_label_above_the_ceiling_is_403_naming_label_and_caller(server: Server) -> None:
    response = server.post("/v1/ask", {"question": QUESTION, "labels": ["confidential"]})
    body = problem(response, 403, "label_above_ceiling")
    assert "confidential" in body["message"] and "portal" in body["message"]
    mixed = server.post("/v1/ask", {"question": QUESTION, "labels": ["public", "internal"]})
    assert "internal" in problem(mixed, 403, "label_above_ceiling")["message"]
    search = server.post("/v1/knowledge/search", {"query": "x", "labels": ["internal"]})
    problem(search, 403, "label_above_ceiling")


def test_case_variants_of_labels_are_named_never_folded(server: Server) -> None:
    for variant in ("PUBLIC", "Public", "public ", " public", "publıc"):
        response = server.post("/v1/ask", {"question": QUESTION, "labels": [variant]})
        body = problem(response, 422, "bad_request")
        assert repr(variant) in body["message"]
        assert body["problems"][0]["field"] == "labels"


def test_a_label_given_twice_is_refused(server: Server) -> None:
    response = server.post("/v1/ask", {"question": QUESTION, "labels": ["public", "public"]})
    assert "more than once" in problem(response, 422, "bad_request")["message"]


def test_duplicate_json_keys_are_refused(server: Server) -> None:
    # The second "labels" would win in a naive parser, and the first be checked.
    text = f'{{"question": "{QUESTION}", "labels": ["public"], "labels": ["confidential"]}}'

    response = httpx.post(
        f"{server.url}/v1/ask",
        content=text.encode(),
        headers={**server.headers(), "Content-Type": "application/json"},
        timeout=30,
    )
    body = problem(response, 422, "bad_request")
    assert "'labels' is given more than once" in body["message"]


def test_no_labels_gets_the_default_labels_within_the_ceiling(server: Server) -> None:
    # night's ceiling is internal only; the default labels are public: nothing is left.
    body = problem(
        server.post("/v1/ask", {"question": QUESTION}, "night"), 403, "label_above_ceiling"
    )
    assert "night" in body["message"]
    ok = server.post("/v1/ask", {"question": QUESTION, "labels": ["internal"]}, "night")
    assert ok.status_code == 200 and ok.json()["status"] == "nothing_found"


def test_evidence_search_needs_the_evidence_labels_in_the_ceiling(server: Server) -> None:
    response = server.post("/v1/evidence/search", {"query": "x", "purpose": "rewriting"})
    body = problem(response, 403, "label_above_ceiling")
    assert "internal" in body["message"] and "portal" in body["message"]


# -- 422 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/ask", {"question": QUESTION, "labelz": ["public"]}, "labelz"),
        ("/v1/ask", {"question": QUESTION, "year": "2023"}, "year"),
        ("/v1/ask", {"question": QUESTION, "year": 1066}, "year"),
        ("/v1/ask", {"question": QUESTION, "labels": "public"}, "labels"),
        ("/v1/ask", {"question": ""}, "question"),
        ("/v1/ask", {}, "question"),
        ("/v1/ask", {"question": "x" * 301}, "question"),
        ("/v1/ask", {"question": QUESTION, "channel": "nope"}, None),
        ("/v1/knowledge/search", {"query": "x", "limit": 0}, "limit"),
        ("/v1/knowledge/search", {"question": "x"}, "question"),
        ("/v1/evidence/search", {"query": "x", "purpose": "gossip"}, "purpose"),
        ("/v1/evidence/search", {"query": "x", "purpose": "rewriting", "kinds": ["x"]}, "kinds"),
    ],
)
def test_a_malformed_request_is_422_naming_the_field(
    server: Server, path: str, body: dict[str, Any], field: str | None
) -> None:
    found = problem(server.post(path, body, "analyst"), 422, "bad_request")
    if field is not None:
        assert field in {p["field"] for p in found["problems"]}, found
        assert field in found["message"]


@pytest.mark.parametrize("content", [b"", b"not json", b"[1, 2]", b'{"question": NaN}'])
def test_a_body_that_is_not_one_json_object_is_422(server: Server, content: bytes) -> None:
    response = httpx.post(
        f"{server.url}/v1/ask",
        content=content,
        headers={**server.headers(), "Content-Type": "application/json"},
        timeout=30,
    )
    problem(response, 422, "bad_request")


def test_a_body_that_is_not_json_is_415(server: Server) -> None:
    response = httpx.post(
        f"{server.url}/v1/ask",
        content=b'{"question": "x"}',
        headers={**server.headers(), "Content-Type": "text/plain"},
        timeout=30,
    )
    problem(response, 415, "unsupported_media_type")


def test_an_unknown_route_is_a_problem_too(server: Server) -> None:
    problem(server.get("/v1/nothing"), 404, "not_found")
    problem(server.get("/v1/ask"), 405, "method_not_allowed")


# -- 413 -------------------------------------------------------------------------------------


def test_a_declared_body_over_the_limit_is_413(server: Server) -> None:
    body = {"question": QUESTION, "instructions": "x" * 5000}
    found = problem(server.post("/v1/ask", body), 413, "body_too_large")
    assert "4096" in found["message"]


def test_a_chunked_body_over_the_limit_is_413(server: Server) -> None:
    def chunks() -> Any:
        yield b'{"question": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}'

    response = httpx.post(
        f"{server.url}/v1/ask",
        content=chunks(),
        headers={**server.headers(), "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.request.headers["transfer-encoding"] == "chunked"
    problem(response, 413, "body_too_large")


def test_a_chunked_body_within_the_limit_is_read(server: Server) -> None:
    def chunks() -> Any:
        yield b'{"question": '
        yield f'"{QUESTION}"'.encode()
        yield b"}"

    response = httpx.post(
        f"{server.url}/v1/ask",
        content=chunks(),
        headers={**server.headers(), "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 200 and response.json()["status"] == "found"


# -- 503 -------------------------------------------------------------------------------------


def test_a_full_process_says_busy_with_retry_after(
    tmp_path: Path, embeddings: FakeEmbeddingServer
) -> None:
    corpus, keys = prepare_workspace(tmp_path, embeddings, concurrent=1)
    served = Server(corpus.root, keys, tmp_path / "serve.log")
    try:
        embeddings.script(Reply(delay=2.0))  # the first question's embedding takes 2 s
        results: list[httpx.Response] = []
        slow = threading.Thread(
            target=lambda: results.append(served.post("/v1/ask", {"question": QUESTION}))
        )
        slow.start()
        time.sleep(0.7)
        refused = served.post("/v1/ask", {"question": QUESTION})
        slow.join()
        body = problem(refused, 503, "busy")
        assert refused.headers["retry-after"] == "1"
        assert "max_concurrent" in body["message"]
        [first] = results
        assert first.status_code == 200 and first.json()["status"] == "found"
        # The slot is free again.
        assert served.post("/v1/ask", {"question": QUESTION}).status_code == 200
    finally:
        served.stop()


# -- slow clients (issue 22, point 8) ---------------------------------------------------------


def _trickle(server: Server, held: list[socket.socket]) -> None:
    """A connection that announces a 1,000-byte body and sends one byte of it."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(
        (
            "POST /v1/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {server.keys['portal']}\r\nContent-Length: 1000\r\n\r\n{{"
        ).encode()
    )
    held.append(sock)


def test_slow_clients_hold_no_slot_and_get_408(
    tmp_path: Path, embeddings: FakeEmbeddingServer
) -> None:
    corpus, keys = prepare_workspace(tmp_path, embeddings, concurrent=2, body_timeout=3.0)
    served = Server(corpus.root, keys, tmp_path / "serve.log")
    held: list[socket.socket] = []
    try:
        start = time.monotonic()
        assert served.post("/v1/ask", {"question": QUESTION}).status_code == 200
        usual = time.monotonic() - start
        for _ in range(16):
            _trickle(served, held)
        time.sleep(0.5)  # every slow request is in the route, reading its body
        start = time.monotonic()
        answered = served.post("/v1/ask", {"question": QUESTION})
        took = time.monotonic() - start
        assert answered.status_code == 200 and answered.json()["status"] == "found"
        assert took < max(2 * usual, usual + 1.0), (took, usual)
        for sock in held:  # each is cut off at the deadline, with 408 and the connection closed
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
            head, _, body = reply.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408"), head
            assert b"connection: close" in head.lower()
            assert json.loads(body)["code"] == "request_timeout"
    finally:
        for sock in held:
            sock.close()
        served.stop()


# -- encodings (issue 22, point 12) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"question": "ciao"}'.encode("utf-16"), "application/json"),
        ('{"question": "ciao"}'.encode("utf-16-le"), "application/json"),
        ('{"question": "ciao"}'.encode("utf-32"), "application/json"),
        (b"\xef\xbb\xbf" + b'{"question": "ciao"}', "application/json"),
        ('{"question": "città"}'.encode("latin-1"), "application/json"),
        (b'{"question": "ciao"}', "application/json; charset=utf-16"),
        (b'{"question": "\xff"}', "application/json"),
    ],
    ids=["utf-16-bom", "utf-16-le", "utf-32", "utf-8-bom", "latin-1", "charset-utf-16", "0xff"],
)
def test_a_body_that_is_not_utf8_is_400_and_says_so(
    server: Server, body: bytes, content_type: str
) -> None:
    response = httpx.post(
        f"{server.url}/v1/ask",
        content=body,
        headers={**server.headers(), "Content-Type": content_type},
        timeout=30,
    )
    found = problem(response, 400, "body_not_utf8")
    assert "UTF-8" in found["message"] and "RFC 8259" in found["message"]
