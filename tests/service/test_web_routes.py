"""The page's routes without a browser: what `GET /` and its assets serve, the headers that
keep the page from running anything but its own script, and the files shipped as package
data (offline first: nothing is fetched from elsewhere)."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace
from fnmatch import fnmatch
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from thoth.answer.wording import ENGLISH, ITALIAN
from thoth.service import web
from thoth.service.web import ASSETS, WORDING_SLOT, add_web_routes, wording_json

ROOT = Path(__file__).resolve().parents[2]
WEB_DIR = ROOT / "src" / "thoth" / "service" / "web"


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    add_web_routes(app)
    return TestClient(app)


def test_the_page_carries_the_answerers_caveat_wording(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert WORDING_SLOT not in page.text
    found = re.search(
        r'<script id="thoth-wording" type="application/json">(.*?)</script>', page.text
    )
    assert found is not None
    wording = json.loads(found.group(1))
    assert wording == [
        {"caveats_heading": w.caveats_heading, "number_warning": w.number_warning}
        for w in (ITALIAN, ENGLISH)
    ]


def test_the_wording_cannot_close_its_script_element() -> None:
    hostile = replace(ENGLISH, caveats_heading="</script><script>alert(1)</script>")
    written = wording_json([hostile])
    assert "</script>" not in written
    assert json.loads(written)[0]["caveats_heading"] == hostile.caveats_heading


def test_every_response_allows_only_the_pages_own_script(client: TestClient) -> None:
    for path in ("/", *ASSETS):
        response = client.get(path)
        assert response.status_code == 200, path
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
    assert client.get("/web/app.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/web/app.css").headers["content-type"].startswith("text/css")


def test_only_the_listed_assets_are_served(client: TestClient) -> None:
    for path in ("/web/index.html", "/web/__init__.py", "/web/../web/__init__.py", "/web/"):
        assert client.get(path).status_code == 404, path


def test_the_page_is_not_part_of_the_api_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(p.startswith("/web/") for p in paths)


def test_the_page_loads_nothing_from_another_origin(client: TestClient) -> None:
    for path in ("/", *ASSETS):
        text = client.get(path).text
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), path
        assert "@import" not in text and "url(http" not in text, path


def test_every_file_of_the_page_is_package_data() -> None:
    """Offline first: an installed Thoth must carry every file the page serves."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["thoth"]
    shipped = {p.name for p in WEB_DIR.iterdir() if p.suffix in (".html", ".js", ".css")}
    assert shipped == {web.PAGE.file, *(a.file for a in ASSETS.values())}
    for name in shipped:
        rel = f"service/web/{name}"
        assert any(fnmatch(rel, pattern) for pattern in patterns), rel
