"""The events a view's rows record are read from the store's introspection (its columns of a
date type), for the decision's rule on a verb naming which event is counted
(test_ordinary_words.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.analytics.conftest import make_analytics_workspace
from tests.analytics.store import STORE_FILE
from thoth.runtime import open_analytics_store
from thoth.workspace import Workspace


def test_the_date_columns_of_each_view_are_its_events(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    conn = sqlite3.connect(aw.root / STORE_FILE)
    with conn:
        conn.executescript(
            """
            CREATE TABLE episodio (id INTEGER PRIMARY KEY, aperto_il DATE, chiuso_il TIMESTAMP,
                                   ora TIME, anno INTEGER, nota TEXT);
            CREATE VIEW v_episodi AS SELECT id, aperto_il, chiuso_il, ora, anno, nota
                FROM episodio;
            """
        )
    conn.close()
    store = open_analytics_store(Workspace.open(aw.root))
    try:
        events = store.event_columns()
    finally:
        store.close()
    assert events["analytics.v_episodi"] == ["aperto_il", "chiuso_il"]
    assert events["analytics.v_ricoveri"] == []  # a year is a number, no date
