"""The views file read against the source's columns (`thoth.analytics.refresh_plan`): names as
the source stores them, quoted or folded the way the store's engine folds them."""

from __future__ import annotations

import pytest

from thoth.analytics.refresh_plan import PlanError, read_plan, reserved_relations

# A real management database (BIRD's california_schools) keeps mixed-case and spaced names.
SOURCE = {
    "schools": {"CDSCode": "text", "County Name": "text", "AdmEmail1": "text", "zip": "text"},
}


def test_postgres_quoted_mixed_case_columns_resolve_and_are_the_ones_copied() -> None:
    views = (
        'CREATE VIEW v_schools AS SELECT "CDSCode" AS cds_code, "County Name" AS county, zip '
        "FROM schools;"
    )
    plan = read_plan(views, "views.sql", "postgresql", SOURCE, reserved_relations("v_data_date"))
    assert plan.tables == {"schools": ("CDSCode", "County Name", "zip")}


def test_postgres_an_unquoted_name_folds_to_lower_case_as_postgresql_folds_it() -> None:
    # PostgreSQL reads CDSCode unquoted as cdscode, which this source does not have.
    views = "CREATE VIEW v_schools AS SELECT CDSCode AS cds_code FROM schools;"
    with pytest.raises(PlanError, match="could not be resolved"):
        read_plan(views, "views.sql", "postgresql", SOURCE, reserved_relations("v_data_date"))


def test_sqlite_names_match_whatever_their_case_and_the_stored_name_is_copied() -> None:
    views = (
        'CREATE VIEW v_schools AS SELECT cdscode AS cds_code, "County Name" AS county FROM schools;'
    )
    plan = read_plan(views, "views.sql", "sqlite", SOURCE, reserved_relations("v_data_date"))
    assert plan.tables == {"schools": ("CDSCode", "County Name")}
