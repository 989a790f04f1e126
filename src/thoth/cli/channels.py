"""`tht channels calibrate`: measure where the channel-routing threshold belongs.

The threshold is calibrated on labelled questions, never chosen by eye: the command prints the
best-example similarity of in-domain and out-of-domain questions, the threshold between them,
its accuracy and the questions routed to the wrong channel. It never rewrites thoth.toml.

Exit codes: 0 done; 1 bad set, no channels or embedder unavailable; 4 no workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from thoth.cli.common import JsonOpt, emit_json, errors, out
from thoth.config import CALIBRATION_SET
from thoth.errors import ThothError
from thoth.workspace import Workspace

if TYPE_CHECKING:
    from thoth.answer.calibration import FoundCalibration

DEFAULT_SET = Path(CALIBRATION_SET)

WsOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace root.")]


def register(app: typer.Typer) -> None:
    channels_app = typer.Typer(no_args_is_help=True, help="Channel routing of questions.")
    app.add_typer(channels_app, name="channels")
    channels_app.command("calibrate")(calibrate_cmd)


def calibrate_cmd(
    labelled_set: Annotated[
        Path | None,
        typer.Option(
            "--set",
            help=f"Labelled questions (YAML). Default: {DEFAULT_SET} in the workspace.",
        ),
    ] = None,
    workspace: WsOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Score labelled questions against the channel examples and suggest the threshold."""
    from thoth.answer.routing import (
        MIN_POSITIVES,
        ChannelRouter,
        calibrate,
        load_calibration_set,
    )
    from thoth.embed.base import EmbedderError
    from thoth.runtime import open_embedder

    with errors(as_json):
        ws = Workspace.open(workspace)
        path = labelled_set or ws.root / DEFAULT_SET
        labelled = load_calibration_set(path)
        configured = ws.settings.answers.routing.channel_threshold
        try:
            embedder = open_embedder(ws)
            router = ChannelRouter(
                ws.settings.channels, embedder, configured, language=ws.settings.language
            )
            result = calibrate(router, labelled)
            relevance = _relevance(ws, labelled)
        except EmbedderError as exc:
            raise ThothError(
                f"the embedder did not answer ({exc}) -> calibration needs embeddings; "
                "check [embedding] in thoth.toml and that the model or server is up"
            ) from exc
    data: dict[str, Any] = {
        "ok": True,
        "set": str(path),
        "configured_threshold": configured,
        "configured_margin": ws.settings.answers.routing.channel_margin,
        **result.as_dict(),
        "configured_min_similarity": ws.settings.answers.min_similarity,
        "relevance": relevance.as_dict() if relevance else None,
    }
    if as_json:
        emit_json(data)
        return
    _print_distributions(
        "questions",
        ("in domain (routed right)", data["in_domain"]),
        ("out of domain", data["out_of_domain"]),
    )
    out.print(
        f"Suggested threshold: [bold]{result.threshold:.3f}[/] ({_verdict(result.separated)}), "
        f"accuracy {result.accuracy:.0%} on {len(result.per_question)} questions."
    )
    if result.expected_routed is not None and result.expected_routed.of:
        est = result.expected_routed
        out.print(
            f"Expected on new in-domain questions (leave-one-out): {est.accepted} of {est.of} "
            f"routed to their channel ({est.accepted / est.of:.0%})."
        )
    for row in result.misrouted:
        out.print(
            f"  misrouted: {escape(row['question'])!r} expected {row['expected']}, closest "
            f"{row['closest']} ({row['score']:.3f}) -> improve that channel's examples",
            highlight=False,
        )
    hint = (
        f"Configured threshold: {configured:.3f}. To change it set "
        f"`channel_threshold = {result.threshold:.2f}` under [answers.routing] in thoth.toml."
    )
    out.print(escape(hint), highlight=False)
    spread = (
        f"one spread of the leads of {len(result.in_domain)} questions routed right; "
        f"{result.widened} of them lead by less and would search every channel"
        if result.margin
        else f"fewer than {MIN_POSITIVES} questions routed right: no spread to measure"
    )
    margin_hint = (
        f"Suggested margin: {result.margin:.3f} ({spread}). Configured: "
        f"{ws.settings.answers.routing.channel_margin:.3f}; set `channel_margin = "
        f"{result.margin:.3f}` under [answers.routing] to use it."
    )
    out.print(escape(margin_hint), highlight=False)
    if relevance is None:
        out.print(
            "No active index generation: run `tht docs sync` to calibrate the relevance floor."
        )
        return
    _print_distributions(
        "closest fragment",
        ("in domain", data["relevance"]["in_domain"]),
        ("out of domain", data["relevance"]["out_of_domain"]),
    )
    table = Table("relevance floor", "false nothing_found", "false found")
    for label, rates in (
        (f"configured ({_floor(relevance.configured)})", relevance.at_configured),
        (f"suggested ({_floor(relevance.threshold)})", relevance.at_suggested),
    ):
        table.add_row(label, _rate(rates.false_nothing_found), _rate(rates.false_found))
    out.print(table)
    for line in relevance.wrong(relevance.threshold):
        out.print(f"  {line}", highlight=False, markup=False)
    if relevance.expected_found is not None and relevance.expected_found.of:
        est = relevance.expected_found
        out.print(
            f"Expected on new answerable questions (leave-one-out): {est.accepted} of {est.of} "
            f"found ({est.accepted / est.of:.0%})."
        )
    out.print(
        f"Suggested relevance floor: [bold]{relevance.threshold:.3f}[/] "
        f"({_verdict(relevance.separated)}) for the questions the term check lets through. "
        + escape(
            f"Configured: {ws.settings.answers.min_similarity} "
            f"(in effect: {_floor(relevance.configured)}). Set `min_similarity = "
            f"{relevance.threshold:.2f}` under [answers] to use it."
        ),
        highlight=False,
    )


def _floor(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _rate(rate: tuple[int, int]) -> str:
    part, whole = rate
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "-"


def _relevance(ws: Workspace, labelled: list[tuple[str, str | None]]) -> FoundCalibration | None:
    """Every labelled question searched over every label (the corpus, not a caller's view),
    with both relevance signals. None when nothing is published yet."""
    from thoth.answer.calibration import Observed, calibrate_found
    from thoth.runtime import knowledge_search, open_runtime

    rt = open_runtime(ws)
    search = knowledge_search(ws, rt)
    try:
        if rt.state.active_generation(ws.settings.workspace) is None:
            return None
        observed: list[Observed] = []
        for question, expected in labelled:
            found = search.search(question, labels=list(ws.settings.answers.labels))
            if found.status == "failed":
                raise ThothError(f"calibration search failed: {found.error_code}: {found.error}")
            relevance = found.relevance
            observed.append(
                Observed(
                    question,
                    answerable=expected is not None,
                    similarity=found.best_similarity,
                    missing=tuple(relevance.missing) if relevance else (),
                )
            )
        return calibrate_found(observed, search.min_similarity)
    finally:
        search.close()
        rt.close()


_STATS = ("n", "min", "p10", "p50", "p90", "max")


def _print_distributions(first_column: str, *rows: tuple[str, dict[str, Any]]) -> None:
    """One table of similarity distributions (in domain, out of domain) with their stats."""
    table = Table(first_column, *_STATS)
    for label, dist in rows:
        table.add_row(label, *(_num(dist[k]) for k in _STATS))
    out.print(table)


def _verdict(separated: bool) -> str:
    return "separated" if separated else "overlapping: best accuracy"


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.3f}"
