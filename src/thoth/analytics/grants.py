"""`tht analytics grant-sql`: the SQL a DBA runs so that the analytics role sees only the views
of the declared schemas. PostgreSQL then refuses, by privileges, every base table, every other
schema, every write and every DDL; Thoth's views-only check refuses to connect as a role that
can read more (thoth.database.postgres)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql


def _ident(name: str) -> str:
    return sql.Identifier(name).as_string(None)


def _literal(text: str) -> str:
    return sql.Literal(text).as_string(None)


def grant_sql(role: str, schemas: Sequence[str], database: str, password: str = "change-me") -> str:
    """Idempotent where PostgreSQL allows it: run it again after adding a view."""
    r, db = _ident(role), _ident(database)
    lines = [
        "-- Run as the owner of the views (or an administrator). Creates a login role that",
        "-- reads the views of " + ", ".join(schemas) + " and nothing else.",
        "DO $$ BEGIN",
        f"  CREATE ROLE {r} LOGIN PASSWORD {_literal(password)}",
        "    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;",
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$;",
        f"GRANT CONNECT ON DATABASE {db} TO {r};",
        f"ALTER ROLE {r} SET default_transaction_read_only = on;",
        f"ALTER ROLE {r} SET statement_timeout = '30s';",
    ]
    for schema in schemas:
        lines += schema_grants(role, schema, missing_ok=True)
    lines += [
        "-- Thoth refuses to connect if the role can read any base table or any relation",
        "-- outside these schemas. Tables granted to PUBLIC count: revoke them, e.g.",
        "--   REVOKE SELECT ON ALL TABLES IN SCHEMA public FROM PUBLIC;",
    ]
    return "\n".join(lines) + "\n"


def schema_grants(role: str, schema: str, missing_ok: bool = False) -> list[str]:
    """USAGE on `schema` and SELECT on its views only, for `role`; SECURITY DEFINER functions
    closed to it. Also run by `tht analytics refresh` on each new copy, before the swap.
    `missing_ok` (the DBA's script): a schema that does not exist yet — before the first
    refresh, which creates it and grants the role itself — is said in a NOTICE, not an error
    that would stop the script before the rest of it."""
    r, s = _ident(role), _ident(schema)
    usage = [f"GRANT USAGE ON SCHEMA {s} TO {r};"]
    if missing_ok:
        notice = (
            f"schema {schema} does not exist yet: tht analytics refresh creates it and grants "
            f"{role} its views (or run this again once it exists)"
        )
        usage = [
            "DO $$ BEGIN",
            f"  IF to_regnamespace({_literal(_ident(schema))}) IS NULL THEN",
            f"    RAISE NOTICE '%', {_literal(notice)};",
            "  ELSE",
            f"    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', {_literal(schema)}, "
            f"{_literal(role)});",
            "  END IF;",
            "END $$;",
        ]
    return [
        f"-- {schema}: USAGE, and SELECT on its views only (never on a table, even one",
        "-- kept in the same schema); a view reads its tables with its owner's rights.",
        *usage,
        "DO $$ DECLARE v record; BEGIN",
        "  FOR v IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace",
        f"           WHERE n.nspname = {_literal(schema)} AND c.relkind IN ('v', 'm') LOOP",
        f"    EXECUTE format('GRANT SELECT ON %I.%I TO %I', {_literal(schema)}, v.relname, "
        f"{_literal(role)});",
        "  END LOOP;",
        "END $$;",
        "-- A SECURITY DEFINER function runs with its owner's rights, past every grant",
        "-- above: nobody but its owner may call one (PostgreSQL grants EXECUTE to PUBLIC).",
        "DO $$ DECLARE f record; BEGIN",
        "  FOR f IN SELECT p.oid::regprocedure AS sig FROM pg_proc p JOIN pg_namespace n "
        "ON n.oid = p.pronamespace",
        f"           WHERE n.nspname = {_literal(schema)} AND p.prosecdef LOOP",
        "    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f.sig);",
        f"    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', f.sig, {_literal(role)});",
        "  END LOOP;",
        "END $$;",
    ]
