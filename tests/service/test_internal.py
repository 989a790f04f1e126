"""An exception no layer worded is a 500 `internal` problem carrying only the request id; the
traceback goes to the service log under that id, never into the response."""

from __future__ import annotations

import logging

import pytest
from fastapi import Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from tests.answer.test_answer import Corpus
from thoth.config import CallerSettings
from thoth.service.http import _guarded, _State, create_app


def test_an_unexpected_exception_is_500_internal_logged_with_the_request_id(
    workspace: tuple[Corpus, dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    corpus, keys = workspace
    app = create_app(corpus.root)

    @app.post("/v1/explode")
    async def explode(request: Request) -> JSONResponse:
        async def work(_state: _State, _caller: CallerSettings) -> JSONResponse:
            raise RuntimeError("secret detail /etc/thoth/key")

        return await _guarded(request, work)

    with TestClient(app) as client, caplog.at_level(logging.ERROR, logger="thoth.service"):
        response = client.post("/v1/explode", headers={"Authorization": f"Bearer {keys['portal']}"})
        busy_after = app.state.thoth.admission.held
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == "internal" and body["status"] == 500
    assert "secret detail" not in response.text and "Traceback" not in response.text
    request_id = body["request_id"]
    assert request_id in body["message"] and response.headers["x-request-id"] == request_id
    [record] = [r for r in caplog.records if request_id in r.getMessage()]
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])
    assert busy_after == 0  # the admission slot was given back
