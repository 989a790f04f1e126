"""What Thoth's SQL may contain: the functions, operators and type casts it accepts, and the ones
it refuses with a reason. Names are PostgreSQL's, lower case; `pg_catalog.x` is `x`.

The lists are allow-lists: a function or operator not named here is refused. The refused
categories only give a better reason than "not on the list" for what is dangerous."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


AGGREGATES = _names("""
    count sum avg min max bool_and bool_or every any_value string_agg array_agg
    json_agg jsonb_agg json_object_agg jsonb_object_agg bit_and bit_or bit_xor
""")
STATISTICS = _names("""
    stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop covar_samp
    regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy
    percentile_cont percentile_disc mode
""")
WINDOW = _names("""
    row_number rank dense_rank percent_rank cume_dist ntile lag lead
    first_value last_value nth_value
""")
MATH = _names("""
    abs ceil ceiling floor round trunc sign sqrt cbrt power pow exp ln log log10 mod div pi
    degrees radians sin cos tan asin acos atan atan2 sind cosd tand sinh cosh tanh
    width_bucket scale min_scale trim_scale gcd lcm factorial
""")
STRINGS = _names("""
    length char_length character_length octet_length bit_length lower upper initcap
    btrim ltrim rtrim lpad rpad substr substring left right position strpos replace translate
    concat concat_ws split_part repeat reverse format overlay starts_with ascii chr to_hex md5
    encode decode quote_ident quote_literal quote_nullable normalize is_normalized
    regexp_replace regexp_match regexp_matches regexp_substr regexp_count regexp_instr
    regexp_like regexp_split_to_array regexp_split_to_table string_to_array array_to_string
    similar_to_escape
""")
DATES = _names("""
    now age date_part date_trunc extract date_bin timezone overlaps make_date make_time
    make_timestamp make_timestamptz make_interval justify_days justify_hours justify_interval
    isfinite to_timestamp statement_timestamp transaction_timestamp date_add date_subtract
""")
CONVERSIONS = _names("""
    to_char to_number to_date date text numeric int2 int4 int8 float4 float8 bool
    timestamp timestamptz interval time to_json to_jsonb
""")
CONDITIONAL = _names("coalesce nullif greatest least num_nulls num_nonnulls")
ARRAYS_AND_JSON = _names("""
    array_length array_lower array_upper array_ndims cardinality array_position
    array_positions array_append array_prepend array_cat array_remove array_replace unnest
    generate_series generate_subscripts json_build_object jsonb_build_object json_build_array
    jsonb_build_array json_extract_path json_extract_path_text jsonb_extract_path
    jsonb_extract_path_text json_array_length jsonb_array_length json_typeof jsonb_typeof
    json_array_elements jsonb_array_elements json_array_elements_text jsonb_array_elements_text
    json_each jsonb_each json_each_text jsonb_each_text json_object_keys jsonb_object_keys
""")

ALLOWED_FUNCTIONS = (
    AGGREGATES
    | STATISTICS
    | WINDOW
    | MATH
    | STRINGS
    | DATES
    | CONVERSIONS
    | CONDITIONAL
    | ARRAYS_AND_JSON
)


@dataclass(frozen=True)
class Refused:
    """A category of functions refused outright: why, their names and their name prefixes."""

    why: str
    names: frozenset[str]
    prefixes: tuple[str, ...] = ()
    infix: str | None = None


SERVER_INFORMATION = "reveals information about the server, the session or privileges"

REFUSED = (
    Refused(
        "waits (it holds a database connection for as long as it is asked to)",
        _names("pg_sleep pg_sleep_for pg_sleep_until"),
    ),
    Refused(
        "reads or writes the database server's files",
        _names("pg_read_file pg_read_binary_file pg_stat_file loread lowrite"),
        ("pg_ls_", "lo_", "pg_file_"),
    ),
    Refused(
        "opens network connections from the database server",
        frozenset(),
        ("dblink",),
        infix="fdw",
    ),
    Refused(
        "reads or changes the server's configuration or the session's role",
        _names("set_config current_setting pg_reload_conf"),
    ),
    Refused(
        "has a side effect (a sequence, a lock, the transaction, another session)",
        _names("""
            nextval setval currval lastval pg_notify pg_terminate_backend pg_cancel_backend
            pg_rotate_logfile pg_switch_wal pg_promote pg_create_restore_point
        """),
        (
            "pg_advisory",
            "pg_try_advisory",
            "txid_",
            "pg_current_xact",
            "pg_xact_",
            "pg_backup_",
            "pg_stat_reset",
            "pg_replication_",
            "pg_logical_",
            "pg_create_",
            "pg_drop_",
        ),
    ),
    Refused(
        "runs the SQL text it is given, out of reach of this check",
        _names("query_to_json"),
        ("query_to_xml", "cursor_to_xml", "table_to_xml", "schema_to_xml", "database_to_xml"),
    ),
    Refused(
        "is volatile: it gives a different result at every call for the same row",
        _names("""
            random random_normal setseed gen_random_uuid uuidv4 uuidv7 clock_timestamp timeofday
        """),
        ("uuid_generate",),
    ),
    Refused(
        SERVER_INFORMATION,
        _names("""
            version current_user session_user current_role user current_database
            current_catalog current_schema current_schemas inet_server_addr inet_server_port
            inet_client_addr inet_client_port pg_has_role obj_description col_description
            shobj_description format_type
        """),
        ("has_", "to_reg"),
    ),
    Refused(
        "is a PostgreSQL system function (administration or catalog introspection)",
        frozenset(),
        ("pg_",),
    ),
)

OPERATORS = frozenset(
    [
        *[
            "+",
            "-",
            "*",
            "/",
            "%",
            "^",
            "@",
            "|/",
            "||/",
        ],  # arithmetic, absolute value, square and cube root
        *["=", "<>", "<", ">", "<=", ">="],  # comparison (!= is <>)
        "||",  # concatenation
        *["~~", "!~~", "~~*", "!~~*"],  # LIKE, NOT LIKE, ILIKE, NOT ILIKE
        *["~", "!~", "~*", "!~*"],  # regular-expression match
        *["&", "|", "#"],  # bitwise
        *["->", "->>", "#>", "#>>", "@>", "<@", "&&"],  # JSON access, containment, overlap
    ]
)
OPERATOR_HINT = (
    "use arithmetic, comparison, `||`, LIKE/ILIKE, a regular-expression match, IS [NOT] NULL, "
    "BETWEEN, IN, AND/OR/NOT, CASE, COALESCE/NULLIF or a cast"
)

# Casts to these types look objects up in the system catalogs.
CATALOG_TYPES = _names("""
    regclass regproc regprocedure regoper regoperator regtype regrole regnamespace regconfig
    regdictionary regcollation
""")
CATALOG_SCHEMAS = _names("pg_catalog information_schema pg_toast")


def unqualified(names: Iterable[str]) -> str:
    """`pg_catalog.round` -> `round`; any other qualified name stays qualified."""
    parts = [n.lower() for n in names]
    if len(parts) > 1 and parts[0] == "pg_catalog":
        parts = parts[1:]
    return ".".join(parts)


def refused_because(name: str) -> str | None:
    """Why the function `name` is refused outright, or None when it is not (a function in
    another schema is judged by its own name: `public.pg_sleep` is still `pg_sleep`)."""
    name = name.rsplit(".", 1)[-1]
    for category in REFUSED:
        if (
            name in category.names
            or name.startswith(category.prefixes)
            or (category.infix is not None and category.infix in name)
        ):
            return category.why
    return None


def is_catalog_relation(schema: str | None, name: str | None) -> bool:
    schema, name = (schema or "").lower(), (name or "").lower()
    return schema in CATALOG_SCHEMAS or schema.startswith("pg_") or name.startswith("pg_")
