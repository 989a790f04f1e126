"""The one secret scanner: nothing that looks like a credential may be published or served.

`find_secrets(text)` returns one `Finding` (line number, kind) per line that carries a secret,
never the secret itself. It combines two rule sets:

- the vendor-token plugins of `detect-secrets` (AWS, GitHub, GitLab, Slack, Stripe, private
  keys, JSON Web Tokens, ...), run in-process line by line, without baselines, settings files
  or verification (no network);
- Thoth's own rules for the way people write secrets in Italian and English notes and
  documents: sentences ("la password del database è …", "parola chiave: …", "the password
  is …"), `key = value` assignments with any key ending in password / pwd / secret / token /
  api key (environment variables such as PGPASSWORD= and MYSQL_PWD= included), connection URLs
  with a password for any scheme (an empty user too: `redis://:pass@host`), HTTP
  `Authorization: Basic|Bearer` headers, and Markdown or CSV tables whose header names a
  password, secret or token column (or whose row names a password, next to its value).

What is *not* a secret (docs/secrets.md lists every rule and measures them): the word used
without a value ("reset your password", "la password deve essere cambiata"); placeholders and
references (`<your password>`, `***`, `xxxx`, `${DB_PASSWORD}`, `{{ vault_pw }}`,
`os.environ[...]`, `REDACTED`); SQL about passwords (`password_hash IS NULL`); settings about
them (`password_min_length = 12`). A well-known default password (`changeme`, `admin`, ...)
written as the value of a password IS a secret: on a system nobody changed, it works.
`detect-secrets`' high-entropy plugins are not used: on prose they flag almost every
paragraph (docs/secrets.md), and Thoth's rules already judge the values they would find.
"""

from __future__ import annotations

import csv
import hashlib
import html
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from thoth.errors import Problem


@dataclass(frozen=True, order=True)
class Finding:
    line: int  # 1-based; lines are separated by "\n" only, as an editor counts them
    kind: str  # what was recognised, e.g. "password assignment"; never the value
    # sha256 (16 hex) of the text the finding was made on, markup reduced and spaces collapsed:
    # what a reviewed exemption names instead of the text (`secret_digest`).
    digest: str = field(default="", compare=False)


@dataclass(frozen=True, order=True)
class CellFinding:
    row: int  # 0-based, in the grid given to `find_cell_secrets`
    column: int
    kind: str
    digest: str = field(default="", compare=False)


def secret_digest(text: str) -> str:
    """The hash a finding and its exemption share: of the matched text with its markup reduced
    and its whitespace collapsed, so a re-wrapped line or re-rendered table keeps it."""
    normal = " ".join(_LIST_MARK.sub("", reduce_markup(text)).split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def find_secrets(text: str) -> list[Finding]:
    """One finding per line that carries a secret, in line order.

    Each line is read as written and with its markup reduced to words (`reduce_markup`), so a
    keyword or a value split by emphasis, a link or an inline tag is still read whole; a line
    that is only a label ("Password:", a definition term) is read with the next line, and a
    Markdown table's label cells with the cell beside or below them (`find_cell_secrets`)."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    found: dict[int, Finding] = {}
    for number, table_kind, digest in _table_findings(lines):
        found.setdefault(number, Finding(number, table_kind, digest))
    reduced = [reduce_markup(line) for line in lines]
    for number, line in enumerate(lines, start=1):
        if number in found or not line.strip():
            continue
        plain = reduced[number - 1]
        kind = _line_kind(line)
        if kind is None and plain != line:
            kind = _line_kind(plain)
        if kind is None:
            kind = _flat_pair_kind(plain)
        if kind is not None:
            found[number] = Finding(number, kind, secret_digest(line))
    for label_at, value_at, kind in _stacked_pairs(reduced):
        matched = f"{reduced[label_at]} {reduced[value_at]}"
        found.setdefault(value_at + 1, Finding(value_at + 1, kind, secret_digest(matched)))
    return [found[number] for number in sorted(found)]


def secret_problems(
    text: str, where: str, locate: str = "line {line}", hint: str = ""
) -> list[Problem]:
    """One `credential` Problem per finding in `text`, naming `where` and the place: `locate`
    with `{line}` filled in (e.g. "page 3, line {line} of its text"). Never the value."""
    return [
        Problem(
            where,
            f"contains what looks like a credential ({f.kind}) on {locate.format(line=f.line)}",
            hint=hint or "remove the secret; it must never be published",
            code="credential",
        )
        for f in find_secrets(text)
    ]


# --------------------------------------------------------------------------------------------
# Values: a secret, or a placeholder / reference / word?

# Written as a password's value, these are credentials: they work on a system nobody changed.
_DEFAULT_PASSWORDS = frozenset(
    {
        *("changeme", "changeit", "admin", "root", "guest", "letmein", "qwerty", "welcome"),
        *("123456", "12345678", "password1", "passw0rd", "p4ssw0rd"),
    }
)
_PLACEHOLDER_WORDS = frozenset(
    """
    password passwd pwd pass secret token none null nil true false yes no si sì required
    optional obbligatoria obbligatorio facoltativa facoltativo redacted hidden omitted masked
    omessa omesso nascosta nascosto riservata riservato example esempio placeholder dummy
    empty vuota vuoto value valore tbd todo n/a na
    sha1 sha-1 sha256 sha-256 sha512 sha-512 md5 bcrypt argon2 argon2id pbkdf2 scrypt ntlm
    ntlmv2 kerberos utf8 utf-8 base64 aes256 2fa mfa otp totp
    """.split()  # noqa: SIM905 (a word list reads better as words)
)
# Words that end a line after "password:" or "the password is" and say something about the
# password, not what it is: with them the line is prose (an unquoted single word that ends the
# line and is none of these is taken for the password itself).
_PROSE_WORDS = frozenset(
    """
    scaduta scaduto scadute cambiata cambiato modificata reimpostata resettata errata errato
    sbagliata sbagliato corretta corretto valida valido invalida invalido obsoleta temporanea
    provvisoria forte debole sicura sicuro lunga corta personale unica diversa uguale nuova
    vecchia necessaria richiesta sconosciuta bloccata disabilitata attiva cifrata criptata
    vedi vault cassaforte allegata inviata comunicata
    expired changed reset wrong incorrect correct valid invalid obsolete temporary strong weak
    secure long short personal unique different same new old needed mandatory unknown locked
    disabled enabled active encrypted hashed see attached sent provided set unset stored
    """.split()  # noqa: SIM905
)
_MASK = re.compile(r"^[*xX•·.…#_\-?]+$")
_REFERENCE = re.compile(
    r"""^(?:[$%&@]|\{|<|\[|\()          # $VAR ${VAR} $(cmd) %(x)s {{ x }} <your password> [..] (..)
    |\{\{|\$\{|%\(|os\.environ|getenv|process\.env|environ\[|vault:|secret:|ENC\[
    |^\w+(?:\.\w+)*\(                   # a call: getpass.getpass(), crypt(...)
    """,
    re.VERBOSE,
)
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")  # settings.API_KEY
_NUMBERISH = re.compile(r"^[\d.,:/\-+%€$ ]+$")  # dates, times, amounts
_KEYWORD_IN_VALUE = re.compile(r"(?i)password|passwd|pwd|secret|token|chiave|segret")
_TRAILING = ".,;:!?)]}»\"'`*"


def _clean(value: str) -> str:
    return value.strip().strip("`*_").rstrip(_TRAILING).strip()


def _is_placeholder(value: str) -> bool:
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or _MASK.match(value) or _REFERENCE.search(value):
        return True
    if _DOTTED_NAME.match(value):
        return True
    # "your-password-here", "la_tua_password", "<password>": a keyword and no digit.
    return bool(_KEYWORD_IN_VALUE.search(value)) and not any(c.isdigit() for c in value)


def _looks_secret(value: str) -> bool:
    """Unquoted values in sentences and after a colon: a digit, a symbol, or inner capitals,
    i.e. not a word of the sentence ("scaduta", "case-sensitive", "stored")."""
    if len(value) < 6 or _NUMBERISH.match(value):
        return False
    if any(c.isdigit() for c in value):
        return any(c.isalpha() for c in value) or len(value) >= 6
    if any(not c.isalnum() and c not in "-'’" for c in value):
        return True
    inner = value[1:]
    return any(c.isupper() for c in inner) and any(c.islower() for c in value)


def _ends_line(line: str, end: int) -> bool:
    """Nothing but punctuation after `end`: the value is the line's last word."""
    return not line[end:].strip(" \t.;,!)]}»\"'`*")


def _plain_word_secret(raw: str) -> bool:
    """A single word that ends its line after "password:" or "the password is": the
    password itself, unless it is a placeholder, a word about the password, or a compound
    of words ("case-sensitive")."""
    value = _clean(raw)
    if len(value) < 4 or not value.isalpha():
        return False
    low = value.lower()
    return low not in _PROSE_WORDS and low not in _PLACEHOLDER_WORDS


def _is_secret_value(raw: str, strict: bool, quoted: bool = False) -> bool:
    value = raw.strip() if quoted else _clean(raw)
    if not value or (" " in value and not quoted):
        return False
    if value.lower() in _DEFAULT_PASSWORDS:
        return True
    if len(value) < 4 or _is_placeholder(value):
        return False
    if quoted:
        return not (" " in value and len(value.split()) > 3)  # a quoted sentence is prose
    if value.isdigit():
        return len(value) >= 6  # a PIN-like number, not a setting ("= 12", ": 90")
    return _looks_secret(value) if strict else True


# --------------------------------------------------------------------------------------------
# Line rules

_PW = r"password|passwd|passwort|passphrase|pwd|parola[ _]chiave|parola\s+d['’]ordine"
_SECRET = (
    r"secret|segreto|token|api[ _\-]?key|apikey|chiave[ _](?:api|segreta|di[ _]accesso)|"
    r"access[ _\-]?key|private[ _\-]?key|client[ _\-]?secret"
)
# A key of an assignment: any identifier whose last component names a password or a secret.
_KEY = re.compile(
    r"""(?ix)
    (?<![\w.])
    (?P<key>
        (?:[a-z0-9]+[_.\-])*[a-z0-9]*
        (?:password|passwd|passwort|passphrase|pwd|secret|token|apikey)
      | (?:[a-z0-9]+[_.\-])*
        (?:api[_\-\ ]?key|access[_\-]?key|private[_\-]?key|secret[_\-]?key|pass|pw)
      | parola\ chiave | parola\s+d['’]ordine | chiave\ (?:api|segreta)
    )
    (?![\w\-])
    [*_`"'\]]*\s*(?P<sep>=>|:=|=|:)\s*
    (?P<value>"[^"]*"|'[^']*'|`[^`]*`|[^\s;,'"`|]+)
    """
)
# "la password del database è X", "the password for etl is X", "parola chiave: X"
_SENTENCE = re.compile(
    rf"""(?ix)
    \b(?P<kw>{_PW}|{_SECRET})\b
    (?:\s+[\w'’.@/\-]+){{0,7}}?
    \s*(?:\b(?:è|e'|era|sarà|resta|rimane|vale|is|was|remains|will\s+be)\b|(?<=\s)è)\s*:?\s*
    (?P<value>"[^"]*"|'[^']*'|`[^`]*`|\S+)
    """
)
# "Password iniziale: X", "password di etl_loader: X", "Token API per il meteo: X"
_LABEL = re.compile(
    rf"""(?ix)
    \b(?:{_PW}|{_SECRET})\b
    (?:\s+[\w'’.\-]+){{1,3}}?
    \s*:\s*(?P<value>"[^"]*"|'[^']*'|`[^`]*`|\S+)
    """
)
# "password Admin_2024", "usa la password `X`", "PASSWORD 'x'" (SQL), "IDENTIFIED BY 'x'"
_DIRECT = re.compile(
    rf"""(?ix)
    (?:\b(?:{_PW})|\bidentified\s+by)
    \s+(?P<value>"[^"]*"|'[^']*'|`[^`]*`|\S+)
    """
)
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://(?P<user>[^\s:/@?#]*):(?P<value>[^\s@/?#]+)@\S")
_HEADER = re.compile(
    r"(?i)\b(?:proxy-)?authorization\s*[:=]\s*(?:basic|bearer|token|digest)\s+"
    r"(?P<value>[^\s\"'<>]+)"
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/=\-]{16,})")
_CLI_USER = re.compile(r"(?i)(?:^|\s)(?:-u|--user)\s+['\"]?[^\s:'\"$]+:(?P<value>[^\s'\"]+)")
_MYSQL_P = re.compile(r"(?i)\bmysql(?:dump)?\b.*\s-p(?P<value>[^\s]+)")
_VENDOR = re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}")  # Anthropic and OpenAI keys
_TRIGGER = re.compile(
    r"(?i)pass|pwd|parola|secret|segret|token|key|chiave|auth|bearer|://|identified|-u\s|sk-"
)

_PW_KEY = re.compile(rf"(?i)(?:{_PW}|pass|pw)$")


def _quoted(value: str) -> tuple[str, bool]:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1], True
    return value, False


def _line_kind(line: str) -> str | None:
    if _TRIGGER.search(line):
        kind = _thoth_line_kind(line)
        if kind is not None:
            return kind
    return _plugin_kind(line)


def _thoth_line_kind(line: str) -> str | None:
    for m in _KEY.finditer(line):
        value, quoted = _quoted(m["value"])
        strict = m["sep"] == ":" and not quoted
        lone = strict and _ends_line(line, m.end()) and _plain_word_secret(value)
        if lone or _is_secret_value(value, strict, quoted):
            if _PW_KEY.search(m["key"].replace(" ", "")) or "ordine" in m["key"]:
                return "password assignment"
            return "secret or token assignment"
    for m in _URL.finditer(line):
        # In a URL the field says it is a password: three characters are enough.
        url_value = _clean(m["value"])
        if len(url_value) >= 3 and not _is_placeholder(url_value):
            return "connection string with a password"
    for m in _HEADER.finditer(line):
        value = _clean(m["value"])
        if len(value) >= 8 and not _is_placeholder(value):
            return "HTTP authorization header"
    for pattern in (_SENTENCE, _LABEL, _DIRECT):
        for m in pattern.finditer(line):
            value, quoted = _quoted(m["value"])
            lone = (
                pattern is not _DIRECT
                and not quoted
                and _ends_line(line, m.end())
                and _plain_word_secret(value)
            )
            if lone or _is_secret_value(value, strict=True, quoted=quoted):
                return "password in a sentence"
    for m in _BEARER.finditer(line):
        if _looks_secret(m["value"]):
            return "bearer token"
    for pattern in (_CLI_USER, _MYSQL_P):
        for m in pattern.finditer(line):
            if _is_secret_value(m["value"], strict=False):
                return "password on a command line"
    if _VENDOR.search(line):
        return "API key"
    return None


# --------------------------------------------------------------------------------------------
# detect-secrets: its vendor-token plugins, in-process

# Left out, on purpose (docs/secrets.md measures them): the high-entropy plugins (almost every
# paragraph of prose is "high entropy" once unquoted words are searched; quoted values are
# judged by Thoth's own rules), the keyword and URL-credential plugins (Thoth's assignment,
# sentence and URL rules, which know Italian, empty users and placeholders such as
# `user:password@`, replace them) and public IP addresses (not a secret).
_EXCLUDED_PLUGINS = frozenset(
    {
        "Base64HighEntropyString",
        "HexHighEntropyString",
        "KeywordDetector",
        "BasicAuthDetector",
        "IPPublicDetector",
    }
)


@cache
def _plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[type[Any]] = list(get_mapping_from_secret_type_to_class().values())
    chosen = sorted(
        (cls for cls in classes if cls.__name__ not in _EXCLUDED_PLUGINS),
        key=lambda cls: cls.__name__,
    )
    return tuple(cls() for cls in chosen)


# Every token the chosen plugins recognise is one run of at least 11 such characters (the
# shortest, Artifactory's `AP…`, is 11) with a digit, or a longer run (a random token of 20
# characters without a digit is rare but possible), or a private key's armour line. A line
# without one cannot match: the plugins, which cost three times Thoth's rules, are skipped.
_TOKEN_RUN = re.compile(r"[\w\-+/=.:]{20,}|(?=[\w\-+/=.:]*\d)[\w\-+/=.:]{11,}|PRIVATE KEY|PuTTY")


def _plugin_kind(line: str) -> str | None:
    if not _TOKEN_RUN.search(line):
        return None
    for plugin in _plugins():
        # analyze_line never verifies a match unless detect-secrets' global settings enable
        # verification, which Thoth never does: no network.
        if plugin.analyze_line(filename="thoth-text", line=line):
            return str(plugin.secret_type)
    return None


# --------------------------------------------------------------------------------------------
# Markup reduced to words

_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^()\s]*(?:\s+\"[^\"]*\")?\)|\[([^\]]+)\]\[[^\]]*\]")
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\b[^<>]*>")
# Inline elements join the words around them ("Pass<b>word</b>"); any other tag separates.
_INLINE_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "big",
        "cite",
        "code",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "ins",
        "kbd",
        "mark",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "tt",
        "u",
        "var",
    ]
)
# Emphasis marks at a word's edge ("**Password:**", "_x_", "Segr**eta**"), never the
# underscore inside an identifier (db_password); backticks and strike-through anywhere.
_EMPHASIS = re.compile(r"\*\*|~~|`|(?<!\w)[*_]+|[*_]+(?!\w)")


_MARKUP_CHARS = re.compile(r"[\[<&*_~`]")


def reduce_markup(line: str) -> str:
    """A line of Markdown or HTML reduced to the words a reader sees: links to their text,
    inline tags and emphasis removed, other tags to a space, character references decoded."""
    if not _MARKUP_CHARS.search(line):
        return line
    out = line
    if "[" in out:
        out = _MD_LINK.sub(lambda m: m[1] if m[1] is not None else m[2], out)
    if "<" in out:
        out = _TAG.sub(lambda m: "" if m[1].lower() in _INLINE_TAGS else " ", out)
    if "&" in out:
        out = html.unescape(out)
    return _EMPHASIS.sub("", out)


# --------------------------------------------------------------------------------------------
# Labels and the values beside or below them

_PW_WORDS = rf"(?:{_PW})"
_PW_HEADER = re.compile(rf"(?i)^(?:[\w ]*\s)?{_PW_WORDS}(?:\s[\w ]*)?$")
# "Pass" is a password only as a whole label ("Pass:", "PASS"): inside a longer name it is
# the English word ("Xbox Game Pass", "boarding pass", "pass-through").
_PASS_ALONE = re.compile(r"(?i)^pass$")
_SECRET_HEADER = re.compile(rf"(?i)^(?:[\w ]*\s)?(?:{_SECRET})(?:\s[\w ]*)?$")
_NEGATED = re.compile(r"(?i)scadut|expir|change|cambi|reset|hash|policy|regol|rule|lunghezz|length")
_LIST_MARK = re.compile(r"^\s*(?:#{1,6}|[-*+•>]|\d{1,3}[.)])\s+")
# Cells skipped to reach a label's value: merged cells and an empty column read as empty.
_CELL_GAP = 3


def _label_text(text: str) -> str:
    return _LIST_MARK.sub("", reduce_markup(text)).strip().strip("*_` ").rstrip(":").strip()


def _label_kind(text: str) -> bool | None:
    """A text that is only a label naming a password (True) or a secret (False): a few words,
    an optional colon, no value; None otherwise (a sentence, a heading about passwords)."""
    if len(text) > 80 or not _TRIGGER.search(text):  # every label holds a trigger word
        return None
    name = _label_text(text)
    if not name or len(name) > 40 or len(name.split()) > 4 or _NEGATED.search(name):
        return None
    if _PW_HEADER.match(name) or _PASS_ALONE.match(name):
        return True
    if _SECRET_HEADER.match(name):
        return False
    return None


def _label_value_secret(value: str, password: bool) -> bool:
    """A value written after a label, on its own (the next line, the next cell)."""
    value = value.strip()
    if password and _plain_word_secret(value):
        return True
    return _is_secret_value(value, strict=True)


def _flat_pair_kind(line: str) -> str | None:
    """A label and one value on one line with no colon: a PDF row "Access token  t0k3n…", a
    list item "- API key a8F3…". The value must look like a secret."""
    if len(line) > 120 or not _TRIGGER.search(line):
        return None
    tokens = _LIST_MARK.sub("", line).split()
    if not 2 <= len(tokens) <= 5:
        return None
    label, value = " ".join(tokens[:-1]), tokens[-1]
    password = _label_kind(label)
    if password is None or not _is_secret_value(value, strict=True):
        return None
    return "password beside its label" if password else "secret beside its label"


def _stacked_pairs(lines: Sequence[str]) -> Iterator[tuple[int, int, str]]:
    """(label line, value line, kind): a line that is only a label, the next non-blank line
    (at most two blank lines below) a single value — a definition list, a form, a PDF field."""
    for index, line in enumerate(lines):
        password = _label_kind(line) if line.strip() else None
        if password is None:
            continue
        below = index + 1
        while below < len(lines) and below <= index + 3 and not lines[below].strip():
            below += 1
        if below >= len(lines) or below > index + 3:
            continue
        value = _LIST_MARK.sub("", lines[below]).strip()
        if " " in value or _label_kind(value) is not None:
            continue
        if _label_value_secret(value, password):
            kind = "password below its label" if password else "secret below its label"
            yield index, below, kind


def _next_filled(
    rows: Sequence[Sequence[str]], row: int, column: int, down: int, right: int
) -> tuple[int, int] | None:
    for step in range(1, _CELL_GAP + 2):
        r, c = row + down * step, column + right * step
        if r >= len(rows) or c >= len(rows[r]):
            return None
        if rows[r][c].strip():
            return r, c
    return None


def _is_header_row(row: Sequence[str]) -> bool:
    filled = [c for c in row if c.strip()]
    return len(filled) >= 2 and all(len(c) <= 40 and len(c.split()) <= 4 for c in filled)


def find_cell_secrets(rows: Sequence[Sequence[str]], own_text: bool = True) -> list[CellFinding]:
    """Secrets in a grid of cells (a sheet, a table): a cell's own text (`own_text`), and a
    label cell read with the value beside it (to the right) or below it, across merged or
    empty cells (up to three); under a header row's label, every value of its column. One
    finding per cell, at the cell that holds the value."""
    found: dict[tuple[int, int], CellFinding] = {}
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if not cell.strip():
                continue
            if own_text:
                for line in cell.split("\n"):
                    plain = reduce_markup(line)
                    kind = _line_kind(line)
                    if kind is None and plain != line:
                        kind = _line_kind(plain)
                    kind = kind or _flat_pair_kind(plain)
                    if kind is not None:
                        found.setdefault((r, c), CellFinding(r, c, kind, secret_digest(cell)))
                        break
            password = _label_kind(cell)
            if password is None:
                continue
            kind = "password in a table cell" if password else "secret in a table cell"
            # Plain words count as passwords only beside a clear password label or under a
            # header naming a password column; under a label in a body row ("Pass" above
            # "Fail") and after the ambiguous "Pass", a value must look like a secret.
            plain_words = password and not _PASS_ALONE.match(_label_text(cell))
            beside = _next_filled(rows, r, c, 0, 1)
            below = _next_filled(rows, r, c, 1, 0)
            targets = [(t, plain_words) for t in (beside,) if t is not None]
            if below is not None:
                header = _is_header_row(row)
                targets.append((below, plain_words and header))
                column_run = below[0] + 1
                while header and column_run < len(rows) and c < len(rows[column_run]):
                    if not rows[column_run][c].strip():
                        break
                    targets.append(((column_run, c), plain_words))
                    column_run += 1
            for (vr, vc), words in targets:
                value = rows[vr][vc]
                if _label_kind(value) is None and _cell_is_secret(value, words):
                    digest = secret_digest(f"{cell} {value}")
                    found.setdefault((vr, vc), CellFinding(vr, vc, kind, digest))
    return [found[key] for key in sorted(found)]


# --------------------------------------------------------------------------------------------
# Tables in text: Markdown tables cell by cell, CSV-like tables by their header

_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_DELIMITERS = (";", "\t", ",")
_AMOUNT = re.compile(r"^[(\-+]?[$€£]?\s?\d[\d.,' ]*[%)]?$")


def _cells(line: str, delimiter: str) -> list[str] | None:
    if delimiter == "|":
        stripped = line.strip()
        if not stripped.startswith("|"):
            return None
        body = stripped[1:-1] if stripped.endswith("|") and len(stripped) > 1 else stripped[1:]
        return [c.strip() for c in re.split(r"(?<!\\)\|", body)]
    if delimiter not in line:
        return None
    try:
        [row] = list(csv.reader([line], delimiter=delimiter))
    except (csv.Error, ValueError):
        return None
    return [c.strip() for c in row]


def _header_columns(cells: Sequence[str]) -> dict[int, bool] | None:
    """Columns of a header row that name a password (True) or a secret (False); None when the
    row does not look like a header (a cell longer than a few words is prose)."""
    if len(cells) < 2 or any(len(c) > 40 or len(c.split()) > 4 for c in cells):
        return None
    columns = {i: kind for i, cell in enumerate(cells) if (kind := _label_kind(cell)) is not None}
    return columns or None


def _cell_is_secret(cell: str, password_column: bool) -> bool:
    value, quoted = _quoted(reduce_markup(cell).strip())
    if quoted:
        return _is_secret_value(value, strict=False, quoted=True)
    value = value.strip()
    # An amount ("1,234", "(12.5)", "$ 3,100", "4%") is a figure of a table, not a password;
    # a word about the password ("scaduta", "reset") is not the password.
    if _AMOUNT.match(value) and not value.isdigit():
        return False
    if value.lower() in _PROSE_WORDS:
        return False
    # A password column's single-word values are passwords; a token column's ("ricovero" in a
    # table of word frequencies) must look like one.
    return _is_secret_value(value, strict=not password_column)


def _table_findings(lines: Sequence[str]) -> Iterator[tuple[int, str, str]]:
    """(line number, kind, digest) of the secrets in the tables of `lines`."""
    yield from _markdown_tables(lines)
    yield from _delimited_tables(lines)


def _markdown_tables(lines: Sequence[str]) -> Iterator[tuple[int, str, str]]:
    index = 0
    while index < len(lines):
        if _cells(lines[index], "|") is None:
            index += 1
            continue
        grid: list[list[str]] = []
        numbers: list[int] = []
        while index < len(lines):
            cells = _cells(lines[index], "|")
            if cells is None:
                break
            if not _SEPARATOR_ROW.match(lines[index]):
                grid.append(cells)
                numbers.append(index + 1)
            index += 1
        for f in find_cell_secrets(grid, own_text=False):
            yield numbers[f.row], f.kind, f.digest


def _delimited_tables(lines: Sequence[str]) -> Iterator[tuple[int, str, str]]:
    """CSV, semicolon or tab tables: a header naming a password or secret column, the rows
    below it."""
    index = 0
    while index < len(lines):
        found = False
        for delimiter in _DELIMITERS:
            header = _cells(lines[index], delimiter)
            if header is None:
                continue
            columns = _header_columns(header)
            if columns is None:
                continue
            row = index + 1
            while row < len(lines):
                cells = _cells(lines[row], delimiter)
                if cells is None or len(cells) != len(header):
                    break
                for column, is_password in columns.items():
                    if _cell_is_secret(cells[column], is_password):
                        kind = "password" if is_password else "secret"
                        matched = secret_digest(f"{header[column]} {cells[column]}")
                        yield row + 1, f"{kind} in a table cell", matched
                        break
                row += 1
            index = row
            found = True
            break
        if not found:
            index += 1
