"""The web page served by `tht serve` at `/`: plain HTML, CSS and a little JavaScript, all files
of this package (no build step, nothing fetched from the network).

The page speaks to the same /v1 routes any calling system uses, with the caller's key the
person types (kept in the tab's sessionStorage). The server writes one thing into the page:
the answerer's wording of caveats in every language (`thoth.answer.wording`), so the page
recognises a caveat the way the answerer wrote it and the two cannot drift apart.

`add_web_routes(app)` adds `GET /` and the page's assets; they are left out of the OpenAPI
document (it describes the API, not the page). Every response carries a Content-Security-Policy
that allows only this origin's scripts and styles: the page never runs inline code, and
whatever a document says is shown as text.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Final

from fastapi import FastAPI
from fastapi.responses import Response

from thoth.answer.wording import ENGLISH, ITALIAN, Wording
from thoth.errors import PreconditionError

WORDING_SLOT: Final = "__THOTH_WORDING__"
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class WebPageDamaged(PreconditionError):
    """A file of the page is missing or not what this version wrote: the package is damaged."""

    code = "web_page_damaged"


@dataclass(frozen=True)
class Asset:
    file: str
    media_type: str


# URL path -> the package file it serves: an explicit list, so nothing else is reachable.
ASSETS: Final = {
    "/web/app.js": Asset("app.js", "text/javascript; charset=utf-8"),
    "/web/app.css": Asset("app.css", "text/css; charset=utf-8"),
}
PAGE: Final = Asset("index.html", "text/html; charset=utf-8")


def _read(name: str) -> str:
    try:
        return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WebPageDamaged(
            f"the web page's file {name} cannot be read ({exc}) -> reinstall thoth: the file "
            "is package data of thoth.service.web"
        ) from exc


def wording_json(wordings: Sequence[Wording] = (ITALIAN, ENGLISH)) -> str:
    """The caveat wording of every answer language, as the page reads it. `</` is escaped so
    no text can close the <script> element it is written into."""
    data = [
        {"caveats_heading": w.caveats_heading, "number_warning": w.number_warning} for w in wordings
    ]
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")


@cache
def page_html() -> str:
    html = _read(PAGE.file)
    if WORDING_SLOT not in html:
        raise WebPageDamaged(
            f"the web page {PAGE.file} has no {WORDING_SLOT} slot -> reinstall thoth: the file "
            "is package data of thoth.service.web"
        )
    return html.replace(WORDING_SLOT, wording_json())


@cache
def asset_text(path: str) -> str:
    return _read(ASSETS[path].file)


def add_web_routes(app: FastAPI) -> None:
    """`GET /` (the page) and `GET /web/...` (its script and style sheet). Every file is read
    here, once: a damaged package stops the server at start, not at the first visitor."""
    page_html()
    for path in ASSETS:
        asset_text(path)

    @app.get("/", include_in_schema=False)
    async def page() -> Response:
        return Response(page_html(), media_type=PAGE.media_type, headers=SECURITY_HEADERS)

    for path, asset in ASSETS.items():
        app.add_api_route(
            path, _asset_endpoint(path, asset.media_type), methods=["GET"], include_in_schema=False
        )


def _asset_endpoint(path: str, media_type: str) -> Callable[[], Awaitable[Response]]:
    async def endpoint() -> Response:
        return Response(asset_text(path), media_type=media_type, headers=SECURITY_HEADERS)

    return endpoint
