"""`tht demo` / `make demo`: the embedded default end to end on the bundled clinical workspace:
copy it into a fresh Git repository (building its synthetic SQLite clinical warehouse with the
workspace's tools/build_warehouse.py, then its analytics store with tools/build_analytics.py),
import legacy formulas, prepare, validate, show the review items and the diff, resolve the
doubts as caveats, publish an evaluated generation with the bundled embedder and Qdrant Edge,
run a few Evidence searches; then index the declared documents and wiki pages
(`tht docs sync`), answer questions with the offline extractive answerer (`tht ask`) and run
the answer evaluation (`tht eval run`); link a question to the warehouse's SQL; and serve
the workspace over HTTP for one question (`tht serve`: /v1/ask and the web page)."""

from __future__ import annotations

import gzip
import importlib.util
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from thoth.cli import render
from thoth.cli.ask import print_answer
from thoth.cli.common import progress_bar
from thoth.cli.demo_service import demo_mcp, demo_service
from thoth.cli.docs import render_sync
from thoth.cli.schema import render_proposal
from thoth.cli.schema import render_sync as render_schema_sync
from thoth.embed import CACHE_FILE, CachedEmbedder
from thoth.errors import PreconditionError
from thoth.evaluation.answers import load_answer_cases, run_answer_evaluation
from thoth.evidence.corpus import load_corpus
from thoth.evidence.document import render_unit
from thoth.evidence.migrate import import_formulas
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.gitrepo import diff_summary
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_answer_service, open_runtime, sessions_dir, state_dir
from thoth.schema import SchemaSync
from thoth.search.outcome import EvidenceSearchContext
from thoth.session import SessionStore
from thoth.workflow.consult import SessionWorkflow
from thoth.workflow.publish import Publisher
from thoth.workflow.sql import DecisionRefused, decide_checked, run_final_sql
from thoth.workspace import Workspace

DEMO_NAME = "clinical-dwh"
# Next to the demo workspace (not in it: never indexed): the vectors of every passage the demo
# embeds, prepared ahead by examples/prepare_demo_vectors.py so that `make demo` fits in two
# minutes on two cores. Keyed like the embedding cache (embedder identity + text): a text that
# changed, or another embedder, is simply embedded now.
PREPARED_VECTORS = "demo-vectors.sqlite.gz"


def demo_source() -> Path:
    """The bundled workspace: $THOTH_EXAMPLES, else examples/ of the source checkout."""
    base = Path(os.environ.get("THOTH_EXAMPLES", Path(__file__).resolve().parents[3] / "examples"))
    path = base / DEMO_NAME
    if not (path / "thoth.toml").is_file():
        raise PreconditionError(
            f"{path}: demo workspace not found -> run from a source checkout or set "
            "THOTH_EXAMPLES to the folder that holds clinical-dwh/"
        )
    return path


def seed_prepared_vectors(ws: Workspace, prepared: Path) -> int:
    """Unpack `prepared` (a gzip-compressed embedding cache) as the workspace's embedding
    cache, unless it has one; returns the number of vectors it holds (0: nothing seeded)."""
    target = state_dir(ws) / "cache" / CACHE_FILE
    if not prepared.is_file() or target.exists():
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(prepared) as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    with closing(sqlite3.connect(target)) as db:
        (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
    return int(count)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=Thoth demo",
            "-c",
            "user.email=demo@thoth.invalid",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PreconditionError(f"{root}: `git {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout


WAREHOUSE_SCHEMAS = ("adt", "clinical", "lab", "pharmacy", "dwh")
ANALYTICS_STORE = "warehouse/analytics.sqlite"


def build_warehouse(workspace: Path) -> tuple[int, int]:
    """Build the workspace's SQLite warehouse (warehouse/<schema>.sqlite, ignored by Git) with
    the workspace's own tools/build_warehouse.py; returns (tables, rows)."""
    tool = workspace / "tools" / "build_warehouse.py"
    name = "thoth_demo_build_warehouse"
    spec = importlib.util.spec_from_file_location(name, tool)
    if spec is None or spec.loader is None or not tool.is_file():
        raise PreconditionError(f"{tool}: warehouse generator not found -> restore the demo files")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
        paths: dict[str, Path] = module.build(workspace / "warehouse")
        counts: dict[str, int] = module.row_counts(paths)
    finally:
        del sys.modules[name]
    if sorted(paths) != sorted(WAREHOUSE_SCHEMAS):
        raise PreconditionError(f"{tool}: built {sorted(paths)}, expected {WAREHOUSE_SCHEMAS}")
    return len(counts), sum(counts.values())


def build_analytics(workspace: Path) -> tuple[int, int]:
    """Build the workspace's analytics store (warehouse/analytics.sqlite, ignored by Git) from
    its warehouse, with the workspace's own tools/build_analytics.py, as the nightly refresh
    would; returns (views, rows of the base tables). The warehouse must be built first."""
    tool = workspace / "tools" / "build_analytics.py"
    name = "thoth_demo_build_analytics"
    spec = importlib.util.spec_from_file_location(name, tool)
    if spec is None or spec.loader is None or not tool.is_file():
        raise PreconditionError(
            f"{tool}: analytics store builder not found -> restore the demo files"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        try:
            path: Path = module.build(workspace / "warehouse", workspace / ANALYTICS_STORE)
        except FileNotFoundError as exc:  # the warehouse it copies is not built
            raise PreconditionError(f"{tool}: {exc}") from exc
        counts: dict[str, int] = module.row_counts(path)
    finally:
        del sys.modules[name]
    views = [name for name in counts if name.startswith("v_")]
    return len(views), sum(n for name, n in counts.items() if name not in views)


def run_demo(console: Console, keep: Path | None = None) -> Path:
    origin = demo_source()
    target = keep if keep is not None else Path(tempfile.mkdtemp(prefix="thoth-demo-")) / DEMO_NAME
    if target.exists() and any(target.iterdir()):
        raise PreconditionError(f"{target} exists and is not empty -> choose another --keep path")
    shutil.copytree(origin, target, dirs_exist_ok=True)
    tables, rows = build_warehouse(target)
    views, analytics_rows = build_analytics(target)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "Demo workspace: sources only")
    console.print(
        Panel.fit(
            f"Demo workspace: [bold]{target}[/]\n"
            "An Italian clinical data warehouse: loose notes under "
            "evidence/source/, legacy formulas under formulas/.",
            title="Thoth demo",
        )
    )
    console.print(
        f"Clinical data warehouse: {len(WAREHOUSE_SCHEMAS)} SQLite files under warehouse/ "
        f"({tables} tables, {rows:,} synthetic rows) built by tools/build_warehouse.py."
    )
    console.print(
        f"Analytics store: {ANALYTICS_STORE} ({views} views over {analytics_rows:,} rows "
        "copied from the warehouse) built by tools/build_analytics.py."
    )

    ws = Workspace.open(target)
    prepared = seed_prepared_vectors(ws, origin.parent / PREPARED_VECTORS)
    console.print(
        f"Embedding cache seeded with {prepared} passage vectors prepared ahead "
        f"(examples/{PREPARED_VECTORS}); any text not among them is embedded now."
        if prepared
        else f"No prepared vectors (examples/{PREPARED_VECTORS}): every text is embedded now."
    )
    console.rule("1. import legacy formulas")
    imported = import_formulas(ws)
    console.print(
        f"{len(imported.copied)} legacy formulas copied to evidence/source/legacy-formulas/"
    )
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "Import legacy formulas as sources")

    console.rule("2. tht evidence prepare (rule-based restructurer, offline)")
    with progress_bar(console, "prepare") as tick:
        report = prepare(ws, RuleBasedRestructurer(), progress=tick)
    render.prepare_report(console, report)

    console.rule("3. what the curator reviews in Git")
    summary = diff_summary(target, "evidence")
    lines = summary.splitlines()
    by_kind: dict[str, int] = {}
    for line in lines:
        parts = line[3:].split("/")
        if len(parts) > 2 and parts[1] == "curated":
            by_kind[parts[2]] = by_kind.get(parts[2], 0) + 1
    console.print(
        f"{len(lines)} new or changed paths under evidence/: "
        + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items()))
    )
    sample = next((p for p in sorted(report.written) if p.startswith("curated/formula/")), None)
    if sample:
        console.print(Panel((ws.evidence / sample).read_text("utf-8"), title=sample, expand=False))

    console.rule("4. tht evidence validate")
    validation = validate_workspace(ws)
    render.validation_report(console, validation)

    console.rule("5. the curator resolves the review items")
    resolved = accept_doubts_as_caveats(ws)
    console.print(
        f"The demo curator keeps each of the {resolved} doubts as an explicit caveat "
        "(a real curator would also fix some units) and commits the review."
    )
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "Evidence review: doubts kept as caveats")
    validation = validate_workspace(ws)
    render.validation_report(console, validation)

    console.rule("6. tht workspace activate + tht workspace preprocess evidence")
    rt = open_runtime(ws)
    try:
        revision = git(target, "rev-parse", "HEAD").strip()
        rt.state.activate_revision(ws.settings.workspace, revision, activated_by="demo")
        console.print(
            f"Revision {revision[:12]} activated. Building a candidate generation with "
            f"{rt.embedder.identity} (a fragment already in the embedding cache is not "
            "embedded again)..."
        )
        with progress_bar(console, "publish") as tick:
            published = Publisher(
                ws,
                rt.state,
                rt.backend,
                rt.embedder,
                retain=ws.settings.index.retain,
                progress=lambda phase, done, total: tick(phase, done, total),
            ).preprocess(run_by="demo")
        render.render_publish(console, published)

        console.rule("7. tht evidence search")
        search = rt.search()
        for question, purpose, context in DEMO_SEARCHES:
            console.print(f"\n[bold]?[/] {question}  [dim](purpose {purpose})[/]")
            render.render_outcome(console, search.search(question, purpose, context))
        search.close()

        console.rule("8. tht docs sync: documents and wiki pages into the same vectors")
        console.print(
            "Declared sources (thoth.toml \\[\\[sources]]): a PDF with tables, DOCX, XLSX, a Q&A "
            "document, Markdown and HTML, wiki pages in two channels, a confidential folder."
        )
        with progress_bar(console, "sync") as tick:
            synced = DocsSync(ws, rt.state, rt.backend, rt.embedder, progress=tick).run(
                run_by="demo"
            )
        render_sync(console, synced)
        if isinstance(rt.embedder, CachedEmbedder):
            console.print(
                f"Passages so far: {rt.embedder.hits} read from the embedding cache, "
                f"{rt.embedder.misses} embedded now.",
                highlight=False,
            )
    finally:
        rt.close()

    console.rule("9. tht ask: grounded answers, sources, caveats, filters, honest states")
    service = open_answer_service(ws)
    try:
        for note, question, request in DEMO_QUESTIONS:
            shown = f"  [dim]{escape(str(request))}[/]" if request else ""
            console.print(f"\n[dim]{escape(note)}[/]\n[bold]?[/] {escape(question)}{shown}")
            print_answer(console, service.ask(question, **request))

        console.rule("10. tht eval run: retrieval and answer level")
        cases = load_answer_cases(ws.root / ws.settings.answers.evaluation)
        evaluation = run_answer_evaluation(service, cases)
    finally:
        service.close()
    scores = evaluation.summary()
    console.print(
        f"{scores['passed']}/{scores['cases']} reference questions pass "
        f"(retrieval {scores['retrieval_passed']}, answer {scores['answer_passed']})."
    )
    for case in evaluation.cases:
        if case.verdict != "pass":
            console.print(f"  [red]{case.id}[/]: fails at {case.verdict}")
    demo_sql_session(console, ws)
    console.rule("13. tht serve: the same engine over HTTP, for calling systems and the page")
    demo_service(console, ws, DEMO_QUESTIONS[0][1])
    git(target, "commit", "-q", "-am", "Declare the demo's calling system")
    console.rule("14. tht mcp: the same engine as MCP tools, for an assistant")
    demo_mcp(console, ws, DEMO_QUESTIONS[0][1])
    console.print(
        f'\nWorkspace kept at {target}: try `tht ask "..." -w {target}`, '
        f'`tht evidence search "..." --purpose disambiguation -w {target}`, '
        f"`tht verify -w {target}`."
    )
    return target


DEMO_SQL_QUESTION = "Quanti ricoveri ordinari sono stati dimessi da ciascun reparto nel 2024?"
DEMO_REWRITTEN = (
    "Numero di ricoveri in regime ordinario (care_regime 1) con dimissione nel 2024, per "
    "reparto di dimissione"
)
DEMO_FINAL_SQL = """SELECT w.ward_name AS reparto, count(*) AS ricoveri
FROM adt.admission a
JOIN adt.ward w ON w.ward_id = a.discharging_ward_id
WHERE a.care_regime = '1'
  AND a.discharge_date >= '2024-01-01' AND a.discharge_date < '2025-01-01'
GROUP BY w.ward_name
ORDER BY ricoveri DESC, reparto"""


def demo_sql_session(console: Console, ws: Workspace) -> None:
    """Steps 11-12: the warehouse's schema in the index, then one question→SQL session by
    hand: schema linking proposes, the reviewer decides (names and SQL checked by the
    database), the approved SQL runs read-only and leaves a receipt."""
    console.rule("11. tht schema sync: the warehouse's tables and columns in the index")
    with open_runtime(ws) as rt:
        with rt.database() as db, progress_bar(console, "schema") as tick:
            schema = SchemaSync(ws, rt.state, rt.backend, rt.embedder, db, progress=tick).run(
                run_by="demo"
            )
        render_schema_sync(console, schema)

        console.rule("12. a question→SQL session: schema linking, final SQL explained and run")
        session = SessionStore(sessions_dir(ws)).create(DEMO_SQL_QUESTION)
        console.print(f"Session [bold]{session.id}[/]: {escape(DEMO_SQL_QUESTION)}")
        session.append(
            "clarification",
            "concept_clarified",
            subject="ricovero ordinario",
            detail="regime di ricovero 1 (non day hospital)",
            rationale="demo reviewer",
        )
        session.append(
            "rewriting", "question_rewritten", subject=DEMO_REWRITTEN, rationale="demo reviewer"
        )
        found = SessionWorkflow(rt, session).consult("schema_linking")
        assert found.schema is not None
        console.print(
            f"[dim]schema_linking: Evidence receipt seq {found.receipt.seq}, "
            f"{len(found.results)} unit(s): {', '.join(r.evidence_id for r in found.results)}[/]"
        )
        render_proposal(console, found.schema)
        try:
            decide_checked(rt, session, "schema_linking", "table_promoted", subject="adt.wards")
        except DecisionRefused as exc:
            console.print(f"[yellow]A misspelt table is refused:[/] {escape(str(exc))}")
        for type, subject in (
            ("table_promoted", "adt.admission"),
            ("table_promoted", "adt.ward"),
            ("column_promoted", "adt.admission.care_regime"),
            ("column_promoted", "adt.admission.discharge_date"),
            ("column_promoted", "adt.admission.discharging_ward_id"),
            ("column_promoted", "adt.ward.ward_name"),
        ):
            decide_checked(
                rt, session, "schema_linking", type, subject=subject, rationale="demo reviewer"
            )
        decide_checked(
            rt,
            session,
            "final_sql",
            "final_sql_approved",
            subject="ricoveri ordinari dimessi nel 2024 per reparto",
            detail=DEMO_FINAL_SQL,
            rationale="demo reviewer",
        )
        console.print(
            Panel(
                DEMO_FINAL_SQL, title="final SQL: one read-only statement, EXPLAINed", expand=False
            )
        )
        run = run_final_sql(rt, session)
    assert run.result is not None
    grid = Table(show_header=True)
    for column in run.result.columns:
        grid.add_column(column)
    for row in run.result.rows:
        grid.add_row(*(str(v) for v in row))
    console.print(grid)
    receipt = run.receipt
    console.print(
        f"Receipt in the ledger (seq {run.entry.seq}): {receipt.row_count} rows, columns "
        f"{', '.join(receipt.columns)}, {receipt.duration_ms:.1f} ms, data date "
        f"{receipt.data_date}, statement sha256 {receipt.statement_sha256[:12]}; no row is "
        f"stored. Try `tht session show {session.id} -w {ws.root}`."
    )


# (what the question shows, question, request filters)
DEMO_QUESTIONS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "A fact from the PDF manual and its tables: the answer quotes the sentences that "
        "hold it, each with the [n] of its source; every caveat of the cited pages follows.",
        "Qual è il tempo di attesa massimo per un paziente con codice arancione?",
        {},
    ),
    (
        "The wiki page states a 53% growth; its caveat section (in another fragment) says the "
        "figure is inflated. The caveat travels with every fragment and reaches the answer.",
        "Di quanto sono cresciuti gli accessi pediatrici al pronto soccorso nel 2023?",
        {},
    ),
    (
        "A public caller asks about a confidential audit: the audit is filtered out before "
        "similarity (labels fail closed); only public pages compete, and none holds the "
        "audit's subject: nothing_found.",
        "Quale percentuale di SDO aveva una diagnosi principale non corretta nell'audit "
        "interno di codifica 2024?",
        {"labels": ["public"]},
    ),
    (
        "The same question from a caller cleared for confidential documents.",
        "Quale percentuale di SDO aveva una diagnosi principale non corretta nell'audit "
        "interno di codifica 2024?",
        {"labels": ["confidential"]},
    ),
    (
        "Out of domain: below the calibrated relevance floor the answer says nothing was "
        "found (and `sources` is an empty list).",
        "Qual è la ricetta tradizionale del risotto alla milanese?",
        {},
    ),
    (
        "A numeric question: computed by a reviewed catalog query on the analytics store's "
        "views (read-only), with its query, parameters and data date; never taken from text, "
        "so `sources` is absent. The store's figures are labelled internal: asked as an "
        "analyst of the DWH team.",
        "Quanti ricoveri ordinari ha dimesso la Cardiologia nel 2024?",
        {"labels": ["public", "internal"]},
    ),
    (
        "A figure no catalog query computes: the text path answers, and says first that the "
        "number is not available rather than taking one from a document.",
        "Quante ambulanze sono arrivate in pronto soccorso nel 2024?",
        {"labels": ["public", "internal"]},
    ),
    (
        "The question that the old regular-expression fork refused as numeric: no catalog "
        "query computes it, so it is a text question and its document answers it.",
        "Qual è il numero di minuti di attesa massimo per un codice verde?",
        {},
    ),
]


DEMO_SEARCHES: list[tuple[str, str, EvidenceSearchContext | None]] = [
    (
        "Come si calcola l'età del paziente al ricovero?",
        "sql_generation",
        EvidenceSearchContext(limit=3),
    ),
    (
        "pazienti che se ne vanno dal pronto soccorso senza essere visitati",
        "disambiguation",
        EvidenceSearchContext(limit=3),
    ),
    (
        "codice 4 della provenienza del ricovero",
        "schema_linking",
        EvidenceSearchContext(tables=("adt.admission",), limit=3),
    ),
]


def accept_doubts_as_caveats(ws: Workspace) -> int:
    """The demo's stand-in for a curator: every open doubt becomes an explicit caveat of its
    unit (seed §5.4: a doubt may stay only as a reviewed limitation). Real curation also fixes
    content; this keeps the demo short and shows caveats travelling to search results."""
    files, problems = load_corpus(ws.evidence)
    if problems:
        raise PreconditionError(problems[0].render())
    count = 0
    for f in files:
        unit = f.unit
        if not unit.review_items:
            continue
        caveats = [
            *unit.caveats,
            *(f"Da verificare ({i.code}): {i.message}" for i in unit.review_items),
        ]
        count += len(unit.review_items)
        updated = unit.model_copy(update={"caveats": caveats, "review_items": []})
        (ws.evidence / f.rel).write_text(render_unit(updated), encoding="utf-8")
    return count
