"""The routing decision: which catalog query answers a question, if any, read from what is
asked and not from similarity alone.

Similarity cannot tell "how many" from "what share of", nor "blue" from "brown". So, for each
catalog query, beside the similarity of the question with its description and examples:

- the **measure** asked (thoth.analytics.measure) must agree with the query's declared one;
- the **grouping** asked ("per reparto", "by segment") must be a column of its result;
- the question's dates, years and numbers must all be taken by its parameters (`unbound`),
  and so must every enumerated value it names, whichever query's value it is (a value left
  unread would be a number without its filter), and every word it derives from a value read
  from the store ("pazienti cardiologici" beside `Cardiologia-UTIC`);
- a relation the question states (`relations`: "dopo la visita", "esclusi i codici", "dopo
  il 2022", "since 2023") must be stated by the query's own texts — the same relation before
  the same word, or a bound of the same side its parameters take — else it is a condition on
  the rows or a range the query does not compute;
- its parameters are filled from the question (`extract`): the enumerated values it names
  are evidence that the question is about this query;
- the question's **words** are read against the query's vocabulary (description, examples,
  parameter descriptions, values and synonyms, result labels, the store's columns its figure
  is computed from: "costo" of `sum(costo_euro) AS spesa`): a word none of them explains
  ("blue" beside the values brown and green) counts against it, and a word no query explains
  refuses them all.

A word that no query of the catalog explains may name something the catalog does not know
("età", "boarding", "codice giallo"), or may be ordinary language ("quante persone sono
arrivate", "quanto è costata"). It refuses when it could change *what* is computed
(`substantive`): a name (capitalised inside the question), a word of the store's views and
columns the query does not read (a measure or a filter the store holds), the head of one of
the query's words ("il record di attesa": the record is asked), a word attached to
another content word (a modifier, "ricoveri urgenti", "pediatric visits", or a term of several
unknown words, "parti cesarei"), a complement (after a preposition, or after a form of to have
that possesses: "hanno avuto complicanze"; "ha gestito" is a compound past), a predicate
after a form of to be ("erano urgenti", "were urgent": what the rows are), or the verb after
an auxiliary on rows that record several events ("sono iniziati" beside admissions dated by
admission and discharge: which event is counted). Otherwise it is ordinary — it lowers the
score, is named in the diagnostics (`ordinary`) and does not refuse on its own — but only when
the question asks a figure (a measure word, or a year, date or number the query's parameters
take): a question asking none may be one for the documents. A model's choice has no similarity
to vouch for it: there every unknown word refuses. A word another query explains refuses when
it names a column of the query's own rows that the query does not read ("con un ricovero"
beside the emergency room's visits: the `ricoverato` flag; "hanno abbandonato", the
`abbandono` flag said as a verb), or when it stands right after an auxiliary ("sono stati
dimessi" beside the emergency room's visits: another query's event). Part of a value
("Psichiatria" of "Psichiatria (SPDC)") refuses: the filter it means would be left empty. A
curator who finds a refused word means a query adds it to that query's examples or synonyms.
The score is the similarity, plus `EVIDENCE` per enumerated value named, minus `UNEXPLAINED`
times the share of the question's content words that only other queries explain. `tht analytics
calibrate` sets the threshold on this score, not on the similarity. A query refused by a gate
is never answered with: the next eligible query above the threshold is, else the text path with
the reason. Two eligible queries within the tie margin are a clarification naming both; the
chosen one missing a required value is `needs_parameter`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from thoth.analytics.catalog import CatalogQuery
from thoth.analytics.extract import (
    Extraction,
    Matcher,
    extract,
    month_names,
    numbers_as_digits,
    validate,
    without_values,
)
from thoth.analytics.measure import (
    MONEY_WORDS,
    agrees,
    measure_groups,
    measure_spans,
    without_measure_words,
)

# Score weights (see the module docstring). Small against the bundled embedder's compressed
# similarities (covered 0.93-1.0, not covered 0.80-0.93), so similarity still orders the
# queries; the threshold is calibrated on the resulting score.
EVIDENCE: Final = 0.01
UNEXPLAINED: Final = 0.06

Outcome = Literal["compute", "needs_parameter", "ambiguous", "text"]

# Numbers said in words, most of them written in digits before the question is read
# (`numbers_as_digits`; "due" and "two" stay words): values, never subjects.
_NUMBER_TEXT: Final = (
    "due tre quattro cinque sei sette otto nove dieci undici dodici quindici venti trenta "
    "quaranta cinquanta sessanta novanta cento mille two three four five six seven eight "
    "nine ten twelve fifteen twenty thirty forty fifty sixty ninety hundred thousand"
)
# Function words the stopword lists keep (forms of to be / to have, "each", "which"): they
# say nothing about what is measured.
_FUNCTION_WORDS: Final = frozenset(
    re.findall(
        r"\w+",
        "stato stata stati state sono era erano siamo hanno avuto avuta avuti avute fatto "
        "fatta fatti fatte ciascun ciascuno ciascuna ogni qual quale quali cosa come ecco "
        "been were was have had has each every which what there their does did done "
        # generic verbs of a request, in both languages
        "give please show tell taken take place made make used use get got happened happen "
        "occurred recorded registered quel quei quegli quelli quelle quello quella questo questa "
        "questi queste dammi dimmi "
        "indica fornisci registrato registrata registrati "
        "sai sapete dire dirmi dirci dici dica puoi può potresti potrebbe vorrei voglio "
        "sapere conoscere calcola calcolare could would like know "
        # grouping words: the grouping is read apart
        "per by for "
        # relative periods: the parameters' business too
        "scorso scorsa passato passata corrente precedente ultimo ultima ultimi ultime "
        "last previous current past this "
        # the frame of a period ("nel corso del 2023", "nell'arco del 2024", "during 2024")
        "corso arco durante during throughout course "
        # courtesy
        "favore cortesia kindly "
        # comparisons and number words: constraints the parameters read, not subjects
        "sopra sotto oltre entro almeno circa tra fra dopo prima fino above below over under "
        "more less than least after before within between since until about " + _NUMBER_TEXT,
    )
)

# A grouping or a target: "per reparto", "by segment", "for each country", and "which year",
# "quale reparto", "peak month" (the answer is a row of that column, not a filter on it).
_GROUPING: Final = re.compile(
    r"\b(?:per\s+(?:ogni|ciascun[oa]?)|for\s+each|broken\s+down\s+by|grouped\s+by|"
    r"split\s+by|per|by|which|what|qual|quale|quali|peak|picco)\s+((?:[\w'-]+\s+){0,2}[\w'-]+)",
    re.IGNORECASE,
)

# Idioms that group as "per" / "by" does ("a seconda del codice", "in base al reparto",
# "depending on the ward"): read as it before the grouping and the content words are.
_GROUPING_IDIOMS: Final = re.compile(
    r"\b(?:in\s+base\s+a(?:l|llo|lla|i|gli|lle|ll)?|a\s+seconda\s+d(?:el|ello|ella|ei|egli|"
    r"elle|ell|i)|depending\s+on(?:\s+the)?|according\s+to(?:\s+the)?)(?:\s+|['’])",
    re.IGNORECASE,
)


# A participle of dividing or grouping before per/by only says "broken down by" ("divisi per
# codice", "suddivise per reparto", "ripartiti per", "raggruppati per", "disaggregati per",
# "separati per"; "divided by", "broken down by", "split by", "grouped by", "separated by",
# "disaggregated by", "segmented by"): the grouping per/by asks, no condition on the rows.
# ("Distinti per" is left out: "distinti" is a distinct count, `measure.py`.)
_GROUPING_PARTICIPLES: Final = re.compile(
    r"\b(?:(?:suddivis|divis|ripartit|raggruppat|disaggregat|aggregat|separat|spacchettat|"
    r"segmentat)[oaie]|divided|broken\s+down|split|grouped|separated|disaggregated|"
    r"aggregated|segmented|bucketed)\s+(?=(?:per|by)\b)",
    re.IGNORECASE,
)


def _grouping_idioms(question: str) -> str:
    """The question as the grouping and content words are read: grouping idioms as "per",
    grouping participles and quantifiers before their noun dropped."""
    plain = _GROUPING_PARTICIPLES.sub("", _GROUPING_IDIOMS.sub(" per ", question))
    return _QUANTIFIER.sub(r"\1", plain)


# A period said as an adjective groups by it as "per mese" does ("accessi mensili", "monthly
# admissions"): the noun it stands for, in both languages, read like a grouping word — unless
# the question asks an average ("consumo medio mensile": the average per month). ("Annual" is
# left out: "tasso annuo" is one year's figure, not a breakdown by year.)
_PERIODIC: Final = tuple(
    (re.compile(rf"\b(?:{adjective})\b", re.IGNORECASE), nouns)
    for adjective, nouns in (
        (r"mensil[ei]|monthly", ("mese", "month")),
        (r"trimestral[ei]|quarterly", ("trimestre", "quarter")),
        (r"settimanal[ei]|weekly", ("settimana", "week")),
        (r"giornalier[oaie]|quotidian[oaie]|daily", ("giorno", "day")),
    )
)

# Words that ask for a row ("which customer", "who", "quale reparto", "chi"); "qual è il
# reparto" asks one through the dimension it names (the grouping), "qual è il consumo" does not.
# "who" also joins a relative clause ("the customers who pay"): only a clause's first word asks.
_WHICH: Final = re.compile(
    r"\b(?:which|quale|quali|chi)\b|(?:^|[,;:(]\s*)(?:who|whom|whose)\b", re.IGNORECASE
)

# A figure answers how much, never how or why: a question asking the method, the rule or the
# reason ("come si calcola la degenza media?", "why is the wait longer?") is for the documents,
# whatever measure it names. "How many/much/long/often" ask a quantity and are not matched.
_HOW_WHY: Final = re.compile(
    r"^\W*(?:(?:e|ma|and|but|so)\s+)?(?:come\b|com['’]|in\s+(?:che|quale)\s+modo\b|"
    r"perch[eé]\b|per\s+quale\s+(?:motivo|ragione)\b|why\b|"
    r"how\b(?!\s+(?:many|much|long|often|far|old|big|large|high|low|frequently)\b))",
    re.IGNORECASE,
)

# "Contano come", "is counted as": whether rows of one kind belong to another is a rule of the
# definitions, which no count answers ("I ricoveri in day hospital contano come ricoveri?").
_COUNTS_AS: Final = re.compile(
    r"\b(?:cont(?:a|ano|ato|ati|ata|ate|are)|count(?:s|ed)?)\s+(?:come|as)\b", re.IGNORECASE
)

_WORD: Final = re.compile(r"[^\W\d_]{3,}")
# The question's tokens in order, for adjacency: words (elisions split at the apostrophe),
# numbers, and punctuation (a break: "Pediatria, quanti" are not attached).
_TOKEN: Final = re.compile(r"[^\W_]+|[^\w\s'’]")
_SENTENCE_END: Final = frozenset(".?!:;")
# Words that join a measured noun to its complement ("tempo medio di attesa", "the highest
# amount of revenue").
_TARGET_WORDS: Final = frozenset(["which", "quale", "quali", "what"])
_LINKS: Final = frozenset(
    ["di", "del", "della", "dello", "dei", "degli", "delle", "dell", "d", "of"]
)
# Prepositions and articles: a word no query explains right after a preposition (an article
# between them aside) is a complement — "di sera", "dei turisti", "per gli antibiotici", "at
# night", "on statins" — that names a part of the rows or of the figure, not ordinary language.
_PREPOSITIONS: Final = frozenset(
    re.findall(
        r"\w+",
        "di del della dello dei degli delle dell d da dal dalla dallo dai dagli dalle dall "
        "per con col coi in nel nella nello nei negli nelle nell su sul sulla sullo sui sugli "
        "sulle sull tra fra a al alla allo ai agli alle all senza verso presso "
        "of for with on at in from among without per via",
    )
)
# ... and so is one right after a form of to have: what the rows have ("hanno avuto
# complicanze", "hanno fratture", "had infections") is a part of them — unless "ha"/"has"
# before a past participle is the compound past ("ha gestito", "has handled": `_PARTICIPLE`).
_HAVE: Final = frozenset(
    re.findall(r"\w+", "ha hanno aveva avevano avuto avuta avuti avute has have had having")
)
# The forms of to have that can make a compound past (the others, "avuto", "had", possess).
_HAVE_AUXILIARY: Final = frozenset(re.findall(r"\w+", "ha hanno aveva avevano has have"))
# A regular past participle: with avere it is invariable (-ato, -ito, -uto: "hanno gestito",
# while a plural noun after "hanno" is possessed, "hanno crediti"); in English -ed. An
# irregular one ("ha chiuso") stays a complement: a refusal, the acceptable error.
_PARTICIPLE: Final = re.compile(r"\w{3,}(?:ato|ito|uto)|\w{3,}ed")
# Auxiliaries: the word after one is the verb of a compound tense or a passive ("sono
# iniziati", "si sono chiusi", "sono stati ammessi", "were opened", "ha chiuso"), which says
# what happened to the rows: on rows with several events, which of them is meant.
_AUXILIARIES: Final = frozenset(
    re.findall(
        r"\w+",
        "sono è era erano fu furono siano stato stata stati state "
        "ha hanno aveva avevano abbia abbiano is are was were be been being has have",
    )
)
# The forms of to be: the word after one is a participle (a compound tense or a passive, "sono
# giunti", "were opened"), or a predicate, what the rows are ("erano urgenti", "were urgent"):
# a condition on them.
_BE: Final = frozenset(
    re.findall(
        r"\w+",
        "sono è era erano fu furono sia siano stato stata stati state "
        "is are was were be been being",
    )
)
# The endings of a regular participle, Italian with its plurals and feminines (-ato, -iti,
# -uta ...) or English (-ed).
_REGULAR_ENDINGS: Final = r"[aiu]t[oaie]|ed"
# A participle, regular (`_PARTICIPLE`, with the Italian plurals and feminines), of the common
# irregular Italian endings ("giunti", "rimasti", "dimessi", "chiusi", "visti", "morti",
# "fatti", "presi", "aperti") or English in -ed or -en ("seen", "taken"); other irregular ones
# ("left", "met") are read as predicates: a refusal, the acceptable error.
_ANY_PARTICIPLE: Final = re.compile(
    rf"\w{{2,}}(?:{_REGULAR_ENDINGS}|unt[oaie]|ast[oaie]|ess[oaie]|[iu]s[oaie]|ist[oaie]|ort[oaie]|"
    r"att[oaie]|ett[oaie]|itt[oaie]|olt[oaie]|es[oaie]|ers[oaie]|ert[oaie]|ott[oaie]|en)"
)
# Adverbs say how, not which rows ("è stata complessivamente").
_ADVERB: Final = re.compile(r"\w{3,}(?:mente|ly)")
# Nouns that name a measure generically: the figure is the word after them ("tempo medio
# d'attesa", "the length of stay", "l'importo della spesa").
_GENERIC_MEASURE_NOUNS: Final = frozenset(
    re.findall(
        r"\w+", "tempo tempi durata durate lunghezza importo ammontare time length duration amount"
    )
)
_ARTICLES: Final = frozenset(re.findall(r"\w+", "il lo la i gli le l un uno una the a an"))
# Nouns that name the whole of the rows ("l'insieme dei farmaci", "il complesso dei ricoveri",
# "the whole of the visits"): before di/of they apply no function to what follows.
_WHOLE_NOUNS: Final = frozenset(
    re.findall(r"\w+", "insieme complesso totalità totalita interezza whole entirety totality")
)

# A generic quantifier or determiner before its noun ("nei vari reparti", "per i singoli
# reparti", "across the various wards", "for the different codes"), opening the question or
# after a preposition or an article, puts no condition on the rows. After its noun "diversi"
# and "different" mean distinct ("pazienti diversi"): that place is read as any word's.
_QUANTIFIERS: Final = (
    r"var[ie]|divers[ie]|singol[ie]|rispettiv[ie]|various|several|different|individual|"
    r"respective"
)
_DETERMINER_PLACE: Final = "|".join(
    sorted((_PREPOSITIONS | _ARTICLES) - {"d", "l", "all", "dell", "nell", "sull", "dall"})
)
_QUANTIFIER: Final = re.compile(
    rf"(^\W*|\b(?:{_DETERMINER_PLACE})\s+)(?:{_QUANTIFIERS})\s+(?=[^\W\d_])", re.IGNORECASE
)

# Relations: a preposition that relates the rows to something else puts a condition on them
# ("abbandoni dopo la visita", "accessi esclusi i codici rossi", "visits except red codes"),
# even when every word is the query's own; before a value it asks a range ("dopo il 2022": the
# years after it, "since 2023", "fino al 2024"). Each word names its relation: the same one
# before the same word, said by the query's own texts, is the query's own condition.
_RELATIONS: Final = {
    word: relation
    for relation, words in (
        ("after", "dopo after since"),
        ("before", "prima before"),
        ("without", "senza without"),
        ("except", "tranne eccetto salvo escluso esclusa esclusi escluse except excluding"),
        ("beyond", "oltre sopra beyond over above"),
        ("below", "sotto under below"),
        ("within", "entro within"),
        ("until", "fino until till"),
        ("during", "durante during"),
        # a negation denies what follows: the complement of the rows it names
        ("not", "non mai nessun nessuno nessuna né not never neither nor"),
    )
    for word in words.split()
}
# ... and words that relate only to a value ("più di 30", "at least 3", "dal 2023", "superiore
# a 200"; "più accessi" is no relation), said of a number, a date or a year.
_VALUE_RELATIONS: Final = {
    word: relation
    for relation, words in (
        ("above", "più almeno superiore superiori maggiore more least from da dal dalla dall dai"),
        ("below", "meno inferiore inferiori minore less"),
    )
    for word in words.split()
}
# Which side of a value each relation asks: a query's parameter takes a bound of one side
# (`from_date`, "since 2012-08-25"); "during" is the frame of a period, no bound at all.
_SIDE: Final = {
    "after": "up",
    "beyond": "up",
    "above": "up",
    "before": "down",
    "below": "down",
    "within": "down",
    "until": "down",
    "without": "out",
    "except": "out",
    "during": None,
    "not": "out",
}
# Words that make a relation word one: "prima" is a preposition before di/che ("prima della
# visita"; "la prima visita" is an adjective), "fino" before a ("fino al 2024").
_RELATION_NEEDS: Final = {
    "prima": frozenset([*_LINKS, "che"]),
    "fino": frozenset(["a", "al", "alla", "allo", "ai", "agli", "alle", "all"]),
    "least": None,  # "at least": read from the word before
    # comparatives relate with di/than ("più di 30", "more than 500"; "di meno a settembre"
    # is the least), adjectives with a ("superiore a 200")
    **dict.fromkeys(["più", "meno"], _LINKS),
    **dict.fromkeys(["more", "less"], frozenset(["than"])),
    **dict.fromkeys(
        ["superiore", "superiori", "inferiore", "inferiori", "maggiore", "minore"],
        frozenset(["a", "al", "alla", "allo", "ai", "agli", "alle", "all"]),
    ),
}
# Words skipped between a relation and what it relates ("dopo il 2022", "more than 500",
# "prima di essere visitati", "superiore a 200").
_RELATION_LINKS: Final = frozenset(
    [*_ARTICLES, *_LINKS, "a", "al", "alla", "allo", "ai", "agli", "alle", "all", "than", "che"]
)
_MONTH_WORDS: Final = frozenset().union(*(month_names(m) for m in range(1, 13)))
# Numbers said in words ("entro trenta giorni"): values, as digits are.
_NUMBER_WORDS: Final = frozenset(_NUMBER_TEXT.split())
# Said by a query of its own bound ("from a date on", "dal 24/08/2012"), too common in questions
# to read as one there ("visits from 2023", "da parte dei").
_DECLARING_ONLY: Final = frozenset(["from", "da"])

# A parameter described as a bound ("Giorni minimi di degenza", "Total price the transaction
# exceeds", "Importo massimo") takes the values on that side of it.
_BOUND_WORDS: Final = {
    **dict.fromkeys(
        re.findall(r"\w+", "minimo minima minimi minime minimum min exceeds supera"), "up"
    ),
    **dict.fromkeys(re.findall(r"\w+", "massimo massima massimi massime maximum max"), "down"),
}

# A relation the text states: (the phrase as written, the relation, the value or the words it
# relates to, whether that is a value).
Relation = tuple[str, str, tuple[str, ...], bool]


def relations(text: str, matcher: Matcher, declaring: bool = False) -> tuple[Relation, ...]:
    """The relations `text` states (`_RELATIONS`): a relation word, then, past articles, links
    and function words, a value (a number, a number word, a year, a month) or what it relates
    to: a content word and the one after it, articles and links between aside ("senza
    aspettare la visita"). `declaring`: a query's own text, where "from" and "da" state a bound
    too."""
    tokens: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(text):
        spans.append(m.span())
        tokens.append(m[0].casefold() if m[0][0].isalnum() else "")
    found: list[Relation] = []
    for i, word in enumerate(tokens):
        relation = _RELATIONS.get(word)
        value_only = relation is None
        if value_only:
            if word in _DECLARING_ONLY and not declaring:
                continue
            relation = _VALUE_RELATIONS.get(word)
        if relation is None:
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        needs = _RELATION_NEEDS.get(word, ())
        if (needs and following not in needs) or (
            word == "least" and (i == 0 or tokens[i - 1] != "at")
        ):
            continue
        targets: list[str] = []
        last = i
        for j in range(i + 1, min(len(tokens), i + 8)):
            target = tokens[j]
            if not target:
                break  # punctuation: nothing more related
            if not targets and (
                target.isdigit() or target in _MONTH_WORDS or target in _NUMBER_WORDS
            ):
                found.append((text[spans[i][0] : spans[j][1]], relation, (target,), True))
                break
            if target in _RELATION_LINKS or (
                not targets and (target in _FUNCTION_WORDS or not matcher.is_content(target))
            ):
                continue
            if value_only or not _WORD.fullmatch(target) or target in _FUNCTION_WORDS:
                break
            if not matcher.is_content(target):
                break
            targets.append(target)
            last = j
            if len(targets) == 2:
                break
        if targets:
            found.append((text[spans[i][0] : spans[last][1]], relation, tuple(targets), False))
    return tuple(found)


@dataclass(frozen=True)
class Fit:
    """How one catalog query fits one question."""

    query_id: str
    similarity: float
    score: float
    extraction: Extraction
    evidence: int  # enumerated values of the question this query's parameters take
    unexplained: tuple[str, ...]  # the question's words its vocabulary does not explain
    foreign: tuple[str, ...]  # of those, the ones no query explains that could change the figure
    refused: str | None  # why it cannot answer (a gate), None when it can
    # Result columns that break the figure down by something the question does not name
    # (per month, when it asked the year's total): between equal fits, fewer is closer.
    unasked: tuple[str, ...] = ()
    # Words no query explains that are ordinary language (`substantive`): they lower the
    # score and do not refuse.
    ordinary: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "similarity": round(self.similarity, 4),
            "score": round(self.score, 4),
            "evidence": self.evidence,
            "unexplained": list(self.unexplained),
            "foreign": list(self.foreign),
            "ordinary": list(self.ordinary),
            "refused": self.refused,
            "unasked": list(self.unasked),
        }


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    query_id: str | None = None
    candidates: tuple[str, ...] = ()  # ambiguous: the queries that fit equally
    reason: str | None = None  # text: why no query answers (a gate, or the threshold)
    fits: tuple[Fit, ...] = ()  # ranked by score
    asked: frozenset[str] = frozenset()
    grouping: tuple[str, ...] = ()
    extraction: Extraction | None = None  # of the chosen query
    refused_above: bool = False  # a query above the threshold was refused by a gate
    threshold: float | None = None
    reason_query: str | None = None  # the query whose refusal is the reason

    @property
    def best(self) -> Fit | None:
        return self.fits[0] if self.fits else None

    def as_dict(self, visible: Collection[str] | None = None) -> dict[str, Any]:
        """`visible`: the query ids the caller may see (None: all). A query outside them is
        never named, not even in a reason: as for a document the caller may not see."""

        def shown(qid: str | None) -> bool:
            return visible is None or qid is None or qid in visible

        return {
            "outcome": self.outcome,
            "query_id": self.query_id if shown(self.query_id) else None,
            "candidates": [c for c in self.candidates if shown(c)],
            "reason": self.reason
            if shown(self.reason_query)
            else "no catalog query the request may see computes it",
            "measure_asked": sorted(self.asked),
            "grouping_asked": list(self.grouping),
            "threshold": self.threshold,
            "fits": [f.as_dict() for f in self.fits if shown(f.query_id)][:5],
        }


@dataclass(frozen=True)
class Reading:
    """What one question asks, read once for every query: its measure words, the grouping or
    row it asks, its content words, and the catalog's values it names."""

    question: str
    stems: frozenset[int]  # of the whole question, both languages
    groups: tuple[frozenset[str], ...]
    grouping: tuple[str, ...]
    words: tuple[str, ...]
    named: tuple[tuple[str, str, str, str], ...]  # as Vocabulary.values
    # The question's tokens in order (folded; "" for punctuation) and whether each was
    # capitalised inside a sentence (a name).
    tokens: tuple[str, ...] = ()
    capitalised: frozenset[str] = frozenset()
    # The words next to a measure word, or joined to it by di/of: what is measured or counted.
    measured: frozenset[str] = frozenset()
    # The word after which/quale/quali: the row the question asks for ("in quale mese").
    targets: frozenset[str] = frozenset()
    # The relations it states ("dopo la visita", "dopo il 2022"): conditions on the rows and
    # ranges of values, each the query's own only if its own texts state it.
    relations: tuple[Relation, ...] = ()

    @property
    def asked(self) -> frozenset[str]:
        return frozenset().union(*self.groups)


@dataclass
class Vocabulary:
    """The stems a catalog's queries are written with (cached per served catalog)."""

    matcher: Matcher
    per_query: dict[str, frozenset[int]] = field(default_factory=dict)
    words: dict[str, frozenset[str]] = field(default_factory=dict)  # folded words, per query
    columns: dict[str, frozenset[int]] = field(default_factory=dict)  # non-quantity columns
    dimensions: frozenset[int] = frozenset()  # every such column and parameter name
    dimension_words: frozenset[str] = frozenset()
    column_words: dict[str, frozenset[str]] = field(default_factory=dict)  # non-quantity
    enum_stems: frozenset[int] = frozenset()
    # Every enumerated value and synonym of the catalog: (its text, the value, the query and
    # parameter it belongs to).
    values: list[tuple[str, str, str, str]] = field(default_factory=list)
    definitions: dict[str, frozenset[int]] = field(default_factory=dict)  # query -> description
    all_stems: frozenset[int] = frozenset()
    all_words: frozenset[str] = frozenset()
    # Stems found only inside enumerated values and synonyms ("psichiatria" of "Psichiatria
    # (SPDC)"): a question naming one without the whole value names part of a value.
    value_only: frozenset[int] = frozenset()
    # The words of the values read from the store (`values_from`) and of their synonyms, each
    # with its value: names of the data ("Cardiologia-UTIC", "pediatrics"), so a question's
    # word derived from one ("pazienti cardiologici") names that value, whatever else says it.
    store_words: dict[str, str] = field(default_factory=dict)
    # Per query, the store's words it does not read: the names of the store's views and of
    # the columns of its own views ("permanenza_minuti" beside "attesa_minuti"), less the
    # names its SQL reads ("costo_euro" names what it sums). Another population or another
    # figure of the rows it counts.
    unread: dict[str, tuple[frozenset[int], frozenset[str]]] = field(default_factory=dict)
    # ... and every name of the store it does not read (for a word no query explains: a
    # figure the store holds and the catalog does not compute).
    unread_anywhere: dict[str, tuple[frozenset[int], frozenset[str]]] = field(default_factory=dict)
    # Per query, the words of its figures (the name, label and unit of each quantity or amount
    # column; money words for an amount): "soldi", "euro", "giorni" name what it measures.
    figures: dict[str, tuple[frozenset[int], frozenset[str]]] = field(default_factory=dict)
    # Per query, the columns of a date type of the views it reads (the store's introspection):
    # more than one is rows with several events (an admission is admitted and discharged), and
    # a question's verb may name the event its figure is not counted by.
    events: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Per query, the relations its description, examples and parameter descriptions state
    # ("prima della visita", "since 2012-08-25"): the conditions and bounds it computes.
    own_relations: dict[str, tuple[Relation, ...]] = field(default_factory=dict)
    # ... and the sides of a value its parameters take: a relation before a value in its own
    # texts, or a parameter described as a bound (a relation or minimum/maximum word in it).
    bounds: dict[str, frozenset[str]] = field(default_factory=dict)
    # Per query, the pairs of adjacent words of its description, examples, parameter
    # descriptions and result labels ("high schools"): a term it names, whose first word
    # modifies the second.
    phrases: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        queries: Mapping[str, CatalogQuery],
        choices: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]],
        matcher: Matcher,
        schema_names: Mapping[str, Sequence[str]] | None = None,
        event_columns: Mapping[str, Sequence[str]] | None = None,
    ) -> Vocabulary:
        """`schema_names`: the store's views (`schema.view`) and their columns' names
        (snake_case is read as words), whose words could change what a query computes;
        `event_columns`: per view, its columns of a date type (the events its rows record)."""
        vocab = cls(matcher)
        enum: set[int] = set()
        said: set[int] = set()  # every stem outside values and synonyms
        for qid, query in queries.items():
            texts = [*query.routing_texts()]
            said |= frozenset().union(*(matcher.stems(t) for t in texts))
            for name, param in query.parameters.items():
                texts += [name.replace("_", " "), param.description]
                said |= matcher.stems(f"{name.replace('_', ' ')} {param.description}")
                for value, words in choices.get(qid, {}).get(name, {}).items():
                    texts += [value, *words]
                    for text in (value, *words):
                        stems = matcher.stems(text)
                        enum |= stems
                        if stems:
                            vocab.values.append((text, value, qid, name))
                        if param.values_from is not None:
                            for word in _WORD.findall(text.casefold()):
                                if matcher.is_content(word):
                                    vocab.store_words.setdefault(word, value)
            grouped: set[int] = set()
            grouped_words: set[str] = set()
            measured: list[str] = []
            sources = _figure_sources(query)
            for name, column in query.result.columns.items():
                named = f"{name.replace('_', ' ')} {column.label}"
                money = " ".join(MONEY_WORDS) if column.kind == "amount" else ""
                # "costo" of sum(costo_euro) AS spesa: the figure's own words
                source = (
                    " ".join(n.replace("_", " ") for n in sources.get(name, ()))
                    if column.kind in ("quantity", "amount")
                    else ""
                )
                texts.append(f"{named} {column.unit or ''} {money} {source}")
                said |= matcher.stems(f"{named} {column.unit or ''} {money} {source}")
                if column.kind in ("quantity", "amount"):
                    measured.append(f"{named} {column.unit or ''} {money} {source}")
                if column.kind != "quantity":
                    grouped |= matcher.stems(named)
                    grouped_words |= set(_WORD.findall(named.casefold()))
            vocab.phrases[qid] = frozenset(
                pair
                for t in texts
                for pair in itertools.pairwise(_WORD.findall(t.casefold()))
                if all(matcher.is_content(w) for w in pair)
            )
            vocab.per_query[qid] = frozenset().union(*(matcher.stems(t) for t in texts))
            vocab.words[qid] = frozenset(_WORD.findall(" ".join(texts).casefold()))
            vocab.columns[qid] = frozenset(grouped)
            vocab.column_words[qid] = frozenset(grouped_words)
            vocab.definitions[qid] = matcher.stems(query.description)
            vocab.own_relations[qid] = tuple(
                r
                for text in (
                    query.description,
                    *query.examples,
                    *(p.description for p in query.parameters.values()),
                )
                for r in relations(text, matcher, declaring=True)
            )
            described = [
                w
                for p in query.parameters.values()
                for w in _WORD.findall(p.description.casefold())
            ]
            sides = {_SIDE[r] for _, r, _, v in vocab.own_relations[qid] if v}
            sides |= {_BOUND_WORDS[w] for w in described if w in _BOUND_WORDS}
            sides |= {
                _SIDE[r]
                for w in described
                if (r := _RELATIONS.get(w) or _VALUE_RELATIONS.get(w))
                and _SIDE[r] in ("up", "down")
            }
            vocab.bounds[qid] = frozenset(s for s in sides if s)
            figure_text = " ".join(measured)
            vocab.figures[qid] = (
                matcher.stems(figure_text),
                frozenset(_WORD.findall(figure_text.casefold())),
            )
        vocab.enum_stems = frozenset(enum)
        vocab.dimensions = frozenset().union(
            *vocab.columns.values(),
            *(
                matcher.stems(name.replace("_", " "))
                for query in queries.values()
                for name in query.parameters
            ),
        )
        vocab.dimension_words = frozenset().union(
            *vocab.column_words.values(),
            *(
                _WORD.findall(name.replace("_", " "))
                for query in queries.values()
                for name in query.parameters
            ),
        )
        vocab.all_stems = frozenset().union(*vocab.per_query.values())
        vocab.all_words = frozenset().union(*vocab.words.values())
        vocab.value_only = frozenset(enum - said)
        views = schema_names or {}
        for qid, query in queries.items():

            def reads(name: str, sql: str = query.sql) -> bool:
                return re.search(rf"\b{re.escape(name)}\b", sql, re.IGNORECASE) is not None

            own = [v for v in views if reads(v.rsplit(".", 1)[-1])]
            names = [v.rsplit(".", 1)[-1] for v in views if v not in own]
            names += [c for v in own for c in views[v] if not reads(c)]
            elsewhere = [c for v in views if v not in own for c in views[v]]
            said_by_sql = " ".join(
                re.sub(r"_+", " ", n)
                for n in [*(v.rsplit(".", 1)[-1] for v in own), *(c for v in own for c in views[v])]
                if reads(n)
            )
            vocab.unread[qid] = _pool(names, said_by_sql, matcher)
            vocab.events[qid] = tuple(c for v in own for c in (event_columns or {}).get(v, ()))
            vocab.unread_anywhere[qid] = _pool([*names, *elsewhere], said_by_sql, matcher)
        return vocab

    def read(self, question: str) -> Reading:
        asked = self.matcher.stems(question)
        groups = measure_groups(question)
        tokens: list[str] = []
        capitalised: set[str] = set()
        spans: list[tuple[int, int]] = []
        start = True  # at a sentence's first word, whose capital marks no name
        for m in _TOKEN.finditer(question):
            token = m[0]
            spans.append(m.span())
            if not token[0].isalnum():
                tokens.append("")
                start = start or token in _SENTENCE_END
                continue
            if token[0].isupper() and not start:
                capitalised.add(token.casefold())
            start = False
            tokens.append(token.casefold())
        measured: set[str] = set()
        for begin, end in measure_spans(question):
            before = [i for i, (_, e) in enumerate(spans) if e <= begin]
            after = [i for i, (b, _) in enumerate(spans) if b >= end]
            if before:
                measured.add(tokens[before[-1]])
            # the next word, then across di/of ("picco di consumo", "amount of revenue")
            for i in after[:4]:
                if tokens[i] in _LINKS:
                    continue
                measured.add(tokens[i])
                if i + 1 >= len(tokens) or tokens[i + 1] not in _LINKS:
                    break
        plain = _grouping_idioms(question)
        words = content_words(plain, self.matcher)
        return Reading(
            question,
            asked,
            groups,
            self.grouping(plain, averaged=any("average" in g for g in groups)),
            words,
            tuple(v for v in self.values if self.matcher.within(v[0], asked)),
            tuple(tokens),
            frozenset(capitalised),
            frozenset(measured - {""}),
            frozenset(
                b for a, b in itertools.pairwise(tokens) if a in _TARGET_WORDS and b and b in words
            ),
            relations(question, self.matcher),
        )

    def substantive(self, reading: Reading, word: str, query_id: str) -> str | None:
        """Why a word no query explains could change what `query_id` computes, or None when
        it is ordinary language (see the module docstring)."""
        if word in reading.capitalised:
            return "a name"
        if word in reading.measured and not self._generic_of_figure(reading, word, query_id):
            return "what is measured"
        if word in reading.targets:
            return "what is asked for"
        if word not in _GENERIC_MEASURE_NOUNS | _WHOLE_NOUNS and self._head_of_own_word(
            reading, word, query_id
        ):
            return "what is measured (the head of a word of the query)"
        stems, words = self.unread_anywhere.get(query_id, (frozenset(), frozenset()))
        if _explained_or_derived(word, stems, words, self.matcher):
            return "a word of the store's views"
        content = set(reading.words)
        for i, token in enumerate(reading.tokens):
            if token != word:
                continue
            before = [t for t in reading.tokens[:i] if t not in _ARTICLES or t in _PREPOSITIONS]
            # "a" and "in" are both; "da parte dei": the preposition before the article counts
            if i and before and before[-1] in _PREPOSITIONS:
                return "a complement (after a preposition)"
            previous = reading.tokens[i - 1] if i else ""
            if (
                previous in _BE
                and not _ANY_PARTICIPLE.fullmatch(word)
                and not _ADVERB.fullmatch(word)
            ):
                return f"what the rows are (a predicate after '{previous}')"
            events = self.events.get(query_id, ())
            if previous in _AUXILIARIES and len(events) > 1:
                return (
                    f"which event of the rows: a verb after '{previous}', and they record "
                    f"{' and '.join(events)}"
                )
            if i and before and before[-1] in _HAVE:
                if not (before[-1] in _HAVE_AUXILIARY and _PARTICIPLE.fullmatch(word)):
                    return "what the rows have (after a form of to have)"
                # A compound past ("ha gestito il pronto soccorso"): its subject or object,
                # the next word, must be the query's own ("hanno pagato i pazienti" names
                # who paid, another part of the figure).
                follows = self._next_word(reading, i)
                if follows and not _explained(
                    follows,
                    self.per_query.get(query_id, frozenset()),
                    self.words.get(query_id, frozenset()),
                    self.matcher,
                ):
                    return f"who or what '{word}' is of ('{follows}', after a form of to have)"
            neighbours = reading.tokens[max(0, i - 1) : i] + reading.tokens[i + 1 : i + 2]
            if any(n in content for n in neighbours):
                return "attached to another content word"
        return None

    def _head_of_own_word(self, reading: Reading, word: str, query_id: str) -> bool:
        """Whether `word` is followed, past di/of and articles, by a content word the query
        explains: "il record di attesa", "the record of visits" ask the record, of which the
        query's word is only the complement."""
        own = self.per_query.get(query_id, frozenset())
        own_words = self.words.get(query_id, frozenset())
        for i, token in enumerate(reading.tokens):
            if token != word or i + 1 >= len(reading.tokens):
                continue
            if reading.tokens[i + 1] not in _LINKS:
                continue
            for after in reading.tokens[i + 2 : i + 4]:
                if after in _ARTICLES:
                    continue
                if after in reading.words and _explained(after, own, own_words, self.matcher):
                    return True
                break
        return False

    @staticmethod
    def _next_word(reading: Reading, i: int) -> str | None:
        """The word after token `i`, articles aside; None at a preposition, a number, a
        function word or the end (nothing named there)."""
        for token in reading.tokens[i + 1 :]:
            if token in _ARTICLES and token not in _PREPOSITIONS:
                continue
            if not token or token in _PREPOSITIONS or token in _FUNCTION_WORDS:
                return None
            return token if _WORD.fullmatch(token) else None
        return None

    def unstated_relations(
        self, reading: Reading, query_id: str
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The question's relations `query_id`'s own texts do not state: conditions on the rows
        (the same relation before one of the same words is its own: "prima della visita" of
        a wait described so, "senza aspettare la visita" of "senza essere visitati") and
        ranges (`bounds`: a relation of the same side before a value in its own texts, "since
        2012-08-25", or a parameter described as a bound, "Giorni minimi di degenza", takes
        it; "durante il 2024" is a period)."""
        own = self.own_relations.get(query_id, ())
        conditions: list[str] = []
        ranges: list[str] = []
        for phrase, relation, target, value in reading.relations:
            if value:
                side = _SIDE[relation]
                if side is not None and side not in self.bounds.get(query_id, frozenset()):
                    ranges.append(phrase)
            elif not any(
                not v and r == relation and any(self._same_word(a, b) for a in target for b in t)
                for _, r, t, v in own
            ):
                conditions.append(phrase)
        return tuple(conditions), tuple(ranges)

    def _same_word(self, word: str, other: str) -> bool:
        """Stemmed alike, or one the other inflected as a participle or a noun ("visita",
        "visitati"): the shorter, but for its last letter, begins the longer (5 letters at
        least)."""
        if _explained(word, self.matcher.stems(other), frozenset([other]), self.matcher):
            return True
        return _same_root(word, other)

    def another_figure(self, word: str, query_id: str) -> bool:
        """Whether the word names the figure of another query (its quantity's name, label or
        unit), not one of `query_id`'s: "quanti soldi" of a count of visits."""
        if _explained(word, *self.figures.get(query_id, (frozenset(), frozenset())), self.matcher):
            return False
        return any(
            _explained(word, stems, words, self.matcher)
            for qid, (stems, words) in self.figures.items()
            if qid != query_id
        )

    def _generic_of_figure(self, reading: Reading, word: str, query_id: str) -> bool:
        """Whether `word` is a generic measure noun ("tempo", "length") whose complement, the
        next content word after a measure word and di/of, names the query's own figure:
        "tempo medio d'attesa" is the average wait, "tempo medio di visita" is not."""
        if word not in _GENERIC_MEASURE_NOUNS:
            return False
        stems, words = self.figures.get(query_id, (frozenset(), frozenset()))
        for i, token in enumerate(reading.tokens):
            if token != word:
                continue
            for after in reading.tokens[i + 1 : i + 5]:
                if after in _LINKS or after in _ARTICLES or measure_groups(after):
                    continue
                if after and _explained(after, stems, words, self.matcher):
                    return True
                break
        return False

    def unread_word(self, word: str, query_id: str) -> bool:
        """Whether the word names a view of the store or a column of the query's own views
        that the query does not read."""
        stems, words = self.unread.get(query_id, (frozenset(), frozenset()))
        return _explained_or_derived(word, stems, words, self.matcher)

    def partial_values(self, reading: Reading) -> tuple[str, ...]:
        """The question's words found only inside enumerated values, none of whose values the
        question names whole ("Psichiatria" for "Psichiatria (SPDC)"): the filter it means
        would be left unapplied, and an optional one would answer for everything."""
        named = frozenset().union(*(self.matcher.stems(text) for text, *_ in reading.named))
        return tuple(
            w
            for w in reading.words
            if self.matcher.within(w, self.value_only) and not self.matcher.within(w, named)
        )

    def store_value_of(self, word: str) -> str | None:
        """The value read from the store one of whose words `word` is, stemmed alike or with
        another ending ("cardiologici" of "Cardiologia-UTIC", "pediatrici" of a synonym
        "pediatrics"), or None."""
        for other, value in self.store_words.items():
            if self.matcher.within(word, self.matcher.stems(other)) or _akin(word, other):
                return value
        return None

    def unapplied(self, reading: Reading, query_id: str, extraction: Extraction) -> tuple[str, ...]:
        """Values the question names (a value or synonym of any query, all of its words) that
        this query does not apply: not among the values it took, not in its own definition.
        Computing anyway would answer without that filter ("slovacche" unread: both countries)."""
        taken = frozenset().union(
            *(
                self.matcher.stems(text)
                for text, value, qid, name in reading.named
                if qid == query_id and extraction.values.get(name) == value
            )
        )
        own = self.definitions.get(query_id, frozenset())
        named = [
            value
            for text, value, _, _ in reading.named
            if not self.matcher.within(text, taken) and not self.matcher.within(text, own)
        ]
        return tuple(dict.fromkeys(named))

    def foreign(self, words: Sequence[str]) -> tuple[str, ...]:
        """The words no query of the catalog explains."""
        return tuple(
            w for w in words if not _explained(w, self.all_stems, self.all_words, self.matcher)
        )

    def grouping(self, question: str, averaged: bool = False) -> tuple[str, ...]:
        """The words the question groups by or asks for ("per reparto", "which year", "peak
        month"): words after per/by/which/... that name a dimension of the catalog (a
        non-quantity result column or a parameter) and are no value. A query answers only if
        its result has that column: a month filter does not say which month."""
        found: list[str] = []
        # "average monthly consumption" is an average per month, not a breakdown by month
        periods = [
            " ".join(nouns)
            for pattern, nouns in _PERIODIC
            if not averaged and pattern.search(question)
        ]
        for words in (*(m[1] for m in _GROUPING.finditer(question)), *periods):
            for word in words.casefold().split():
                stems = self.matcher.stems(word)
                if not stems or stems & self.enum_stems:
                    continue
                if self.matcher.within(word, self.dimensions) or any(
                    _akin(word, d) for d in self.dimension_words
                ):
                    found.append(word)
        return tuple(dict.fromkeys(found))

    def groups_as_asked(self, query_id: str, grouping: Sequence[str]) -> bool:
        own = self.columns.get(query_id, frozenset())
        words = self.column_words.get(query_id, frozenset())
        return all(self.matcher.within(w, own) or any(_akin(w, c) for c in words) for w in grouping)

    def named(self, reading: Reading, text: str) -> bool:
        """Whether the question names `text` (a column's name and label): one of its words,
        stemmed alike or the same word inflected."""
        wanted = [w for w in _WORD.findall(text.casefold()) if self.matcher.stems(w)]
        return any(
            self.matcher.within(w, reading.stems) or any(_akin(w, q) for q in reading.words)
            for w in wanted
        )


def _figure_sources(query: CatalogQuery) -> dict[str, tuple[str, ...]]:
    """Per result column, the store's columns its select expression reads ("costo_euro" of
    `round(sum(costo_euro), 2) AS spesa`): what the figure is computed from, whose words name
    it. SQL sqlglot cannot read (a dialect's own syntax) gives none: its figure is then named
    by its result columns only, and fewer words are explained (a refusal, never a number)."""
    try:
        tree = sqlglot.parse_one(query.sql)
    except SqlglotError:
        return {}
    if not isinstance(tree, exp.Select):
        return {}
    return {
        e.alias_or_name: tuple(dict.fromkeys(c.name for c in e.find_all(exp.Column)))
        for e in tree.expressions
    }


def _pool(
    names: Sequence[str], read: str, matcher: Matcher
) -> tuple[frozenset[int], frozenset[str]]:
    """The stems and words of snake_case `names`, less those of the names a query reads (a
    word of a name the query reads, "costo" of costo_euro, is its own)."""
    words = " ".join(re.sub(r"_+", " ", n) for n in names)
    read_stems = matcher.stems(read)
    stems = frozenset(s for s in matcher.stems(words) if s not in read_stems)
    return stems, frozenset(set(_WORD.findall(words.casefold())) - set(_WORD.findall(read)))


def content_words(question: str, matcher: Matcher) -> tuple[str, ...]:
    """The question's words that carry meaning: no measure word, no stopword or function
    word, no number, date, month or quarter (those are the parameters' business)."""
    words = _WORD.findall(without_values(without_measure_words(question)).casefold())
    return tuple(
        w for w in dict.fromkeys(words) if w not in _FUNCTION_WORDS and matcher.is_content(w)
    )


def _unexplained(words: Sequence[str], qid: str, vocab: Vocabulary) -> tuple[str, ...]:
    """The words neither stemmed alike nor sharing a long prefix ("reparti" / "reparto": the
    light stemmer keeps them apart) with a word of the query's vocabulary."""
    own = vocab.per_query.get(qid, frozenset())
    own_words = vocab.words.get(qid, frozenset())
    return tuple(w for w in words if not _explained(w, own, own_words, vocab.matcher))


def _explained(word: str, stems: frozenset[int], words: frozenset[str], matcher: Matcher) -> bool:
    return bool(matcher.within(word, stems)) or any(_akin(word, v) for v in words)


def _same_root(word: str, other: str) -> bool:
    """One word the other inflected as a participle or a verb ("visita" / "visitati",
    "abbandono" / "abbandonato", "abbandonano"): the shorter, but for its last letter, begins
    the longer (5 letters at least). The Italian stemmer keeps a noun and its verb's forms
    apart; the English one joins them already ("abandoned", "abandonment")."""
    shorter, longer = sorted((word, other), key=len)
    stem = shorter[:-1] if len(shorter) > 5 else shorter
    return len(stem) >= 5 and longer.startswith(stem)


def _explained_or_derived(
    word: str, stems: frozenset[int], words: frozenset[str], matcher: Matcher
) -> bool:
    """`_explained`, or the word is one of `words` inflected as a verb (`_same_root`): the
    store's names are nouns ("abbandono", "ricoverato"), a question says what happened to
    the rows with a verb ("hanno abbandonato")."""
    return _explained(word, stems, words, matcher) or any(_same_root(word, w) for w in words)


def _akin(word: str, other: str) -> bool:
    """The same word with another ending vowel or letter (reparto/reparti, usciti/uscita):
    a common prefix of at least 4 letters, at most one letter left on each side."""
    k = 0
    for a, b in zip(word, other, strict=False):
        if a != b:
            break
        k += 1
    return k >= 4 and len(word) - k <= 1 and len(other) - k <= 1


def fit(
    reading: Reading,
    query: CatalogQuery,
    similarity: float,
    choices: Mapping[str, Mapping[str, Sequence[str]]],
    vocab: Vocabulary,
    proposed: Mapping[str, object] | None = None,
) -> Fit:
    """How `query` fits the question read (`proposed`: the model's values, validated instead
    of extracted). A word no query explains refuses the model's choice too: a model always
    finds some plausible query ("parti cesarei" -> the emergency room's abandonments, seen
    with a small model), and a number for a question no query covers is the worst answer."""
    extraction = (
        validate(query, proposed, choices)
        if proposed is not None
        else extract(reading.question, query, choices, vocab.matcher)
    )
    evidence = sum(
        1
        for name, origin in extraction.origin.items()
        if origin == "question" and query.parameters[name].type == "enum"
    )
    unexplained = _unexplained(reading.words, query.id, vocab)
    foreign = vocab.foreign(unexplained)
    ordinary: tuple[str, ...] = ()
    groups = reading.groups
    if "count" not in query.measures:
        # "Quanti euro" on a query whose figure is in euro asks that figure, not a count.
        units = [c.unit for c in query.result.columns.values() if c.unit and c.kind != "category"]
        if any(c.kind == "amount" for c in query.result.columns.values()):
            units += MONEY_WORDS
        groups = measure_groups(reading.question, units) if units else groups
    # A figure is asked: a measure named, or a year, date or number its parameters take. A
    # question asking none may be one for the documents ("come funziona il triage?").
    figure = bool(groups) or any(
        origin == "question" and query.parameters[name].type != "enum"
        for name, origin in extraction.origin.items()
    )
    # A word this query does not explain though another query does, naming a column of the
    # rows it counts that it does not read ("un ricovero" beside the emergency room's visits:
    # the `ricoverato` flag), asks another figure of the same rows.
    neighbour: tuple[str, ...] = ()
    why: dict[str, str | None] = {}
    if proposed is None:
        neighbour = tuple(
            w
            for w in unexplained
            if w not in foreign
            and (
                vocab.unread_word(w, query.id)
                or w in reading.targets
                # what is measured, named as another query's figure
                or (w in reading.measured and vocab.another_figure(w, query.id))
            )
        )
    # A verb after an auxiliary that only other queries use ("sono stati dimessi" beside the
    # emergency room's visits, "were discharged"): what happened to the rows, in another
    # query's terms — another event, a part of the rows this one counts.
    event: tuple[str, ...] = ()
    if proposed is None:
        event = tuple(
            w
            for w in unexplained
            if w not in foreign
            and w not in neighbour
            and (
                _after_auxiliary(reading, w)
                or _participle_of_a_noun(reading, w)
                or _modifies_own_word(reading, w, query.id, vocab)
            )
        )
    if proposed is None and figure:
        # Offline, the similarity to the query's own examples must also reach the threshold:
        # an ordinary word lowers the score and does not refuse on its own.
        why = {w: vocab.substantive(reading, w, query.id) for w in foreign}
        ordinary = tuple(w for w in foreign if why[w] is None)
        foreign = tuple(w for w in foreign if w not in ordinary)
    elsewhere: tuple[str, ...] = ()
    unstated: tuple[str, ...] = ()
    if proposed is not None:
        # A word the model bound to a parameter is explained by that binding; validation
        # judges the value ("Neurologia" is not an allowed value: asked, not refused).
        bound = {
            w.casefold() for v in proposed.values() if isinstance(v, str) for w in _WORD.findall(v)
        }
        # A word the chosen query does not explain while another query does: the model took
        # a neighbour ("pembrolizumab" -> the emergency room's abandonments, seen with a
        # small model; every word was known to some query, so no word was unknown).
        elsewhere = tuple(w for w in unexplained if w not in foreign and w.casefold() not in bound)
        foreign = tuple(w for w in foreign if w.casefold() not in bound)
        # A number, year or date the model binds must be the one the question states.
        stated = extract(reading.question, query, choices, vocab.matcher)
        unstated = tuple(
            f"{name} = {value}"
            for name, value in extraction.values.items()
            if extraction.origin.get(name) == "model"
            and query.parameters[name].type != "enum"
            and (stated.origin.get(name) != "question" or stated.values.get(name) != value)
        )
    # A dimension the question gives one value of ("per l'anno 2022", "nell'anno 2023") names
    # that filter, not a breakdown by it.
    given = [
        vocab.matcher.stems(name.replace("_", " "))
        for name, origin in extraction.origin.items()
        if origin in ("question", "model")
    ]
    grouping = tuple(
        w
        for w in reading.grouping
        if not any(vocab.matcher.within(w.split("'")[-1], s) for s in given)
    )
    score = (
        similarity
        + EVIDENCE * evidence
        - UNEXPLAINED * len(unexplained) / max(1, len(reading.words))
    )
    refused: str | None = None
    partial = vocab.partial_values(reading)
    conditions, ranges = vocab.unstated_relations(reading, query.id)
    if _HOW_WHY.match(reading.question):
        refused = (
            "the question asks how or why (a method, a rule or a reason), which no figure "
            "answers: the documents do"
        )
    elif _COUNTS_AS.search(reading.question):
        refused = (
            "the question asks whether something counts as another (a rule of the "
            "definitions), which no count answers: the documents do"
        )
    elif not agrees(groups, query.measures):
        said = " and ".join("/".join(sorted(g)) for g in groups)
        refused = (
            f"measure mismatch: the question asks {said}; "
            f"{query.id} computes {', '.join(sorted(query.measures))}"
        )
    elif grouping and not vocab.groups_as_asked(query.id, grouping):
        by = " ".join(grouping)
        refused = f"grouping mismatch: {query.id} does not group its result by {by}"
    elif _names_a_winner(query, groups) and not (_WHICH.search(reading.question) or grouping):
        first = next(iter(query.result.columns.values()))
        refused = (
            f"the question asks a value; {query.id} answers which {first.label.casefold()} "
            "(ask which/who for it)"
        )
    elif extraction.unbound:
        refused = (
            f"unbound: {', '.join(extraction.unbound)} in the question is no parameter of "
            f"{query.id}"
        )
    elif ranges:
        refused = (
            f"range: the question says {', '.join(repr(p) for p in ranges)}, and {query.id} "
            "takes one value there, not the values on one side of it (none of its examples "
            "or parameters states such a bound)"
        )
    elif conditions:
        refused = (
            f"condition on the rows: the question says {', '.join(repr(p) for p in conditions)}, "
            f"which {query.id}'s description, examples and parameters never state — its figure "
            "would count every row (add the wording to its examples if it computes that)"
        )
    elif unapplied := vocab.unapplied(reading, query.id, extraction):
        refused = (
            f"unapplied value: the question names {', '.join(unapplied)}, which {query.id} "
            "does not apply"
        )
    elif of_values := {
        w: v for w in unexplained if w not in foreign and (v := vocab.store_value_of(w))
    }:
        named = ", ".join(f"{w} ({v})" for w, v in of_values.items())
        refused = (
            f"unapplied value: the question names {named}, a value of the store's data that "
            f"{query.id} does not apply (add the word to the query's examples or synonyms if "
            "it does)"
        )
    elif partial:
        refused = (
            f"partial value: the question names {', '.join(partial)}, part of a value but no "
            "whole value (name the value as the catalog has it, or add a synonym)"
        )
    elif foreign:
        named = ", ".join(f"{w} — {why[w]}" if why.get(w) else w for w in foreign)
        refused = (
            f"unknown words: no catalog query speaks of {named} (add it to the "
            "examples or synonyms of the query that computes it)"
        )
    elif neighbour:
        refused = (
            f"unread column: the question speaks of {', '.join(neighbour)}, which {query.id} "
            "does not explain and which names a view or a column of its rows it does not read "
            "(another figure or another population), the row the question asks for, or what "
            "another query measures"
        )
    elif event:
        refused = (
            f"another event: the question says {', '.join(event)} after an auxiliary or "
            f"next to a noun, a word of another catalog query that {query.id} never uses: "
            "what happened to the rows or which of them (a verb, a modifier: 'high schools'), "
            "so a part of them, not all it counts (add the wording to its examples if it "
            "computes that)"
        )
    elif unstated:
        refused = (
            f"unstated value: the model set {', '.join(unstated)}, which the question does "
            "not say (ask again naming it)"
        )
    elif elsewhere:
        refused = (
            f"neighbour query: the question speaks of {', '.join(elsewhere)}, which "
            f"{query.id} does not explain and another catalog query does"
        )
    unasked = tuple(
        name
        for name, column in query.result.columns.items()
        if column.kind != "quantity"
        and extraction.origin.get(name) != "question"
        and not vocab.named(reading, f"{name.replace('_', ' ')} {column.label}")
    )
    return Fit(
        query.id,
        similarity,
        score,
        extraction,
        evidence,
        unexplained,
        foreign,
        refused,
        unasked,
        ordinary,
    )


def _right_after(reading: Reading, word: str, before: Collection[str]) -> bool:
    """Whether `word` stands, somewhere in the question, right after one of `before`."""
    return any(
        token == word and i > 0 and reading.tokens[i - 1] in before
        for i, token in enumerate(reading.tokens)
    )


def _after_auxiliary(reading: Reading, word: str) -> bool:
    """Whether `word` stands right after an auxiliary (`_AUXILIARIES`): the verb of a compound
    tense or a passive ("hanno abbandonato", "sono stati dimessi", "were discharged")."""
    return _right_after(reading, word, _AUXILIARIES)


# A regular participle or gerund, Italian (-ato/-ito/-uto, -ati, -ata, ...) or English (-ed,
# -ing): beside a noun it says what happened to those rows ("visits ended with the patient
# leaving", "ricoveri abbandonati").
_VERB_FORM: Final = re.compile(rf"\w{{3,}}(?:{_REGULAR_ENDINGS}|ing)")


def _participle_of_a_noun(reading: Reading, word: str) -> bool:
    """Whether `word` is a participle or gerund (`_VERB_FORM`) right after a content word of
    the question ("visits ended", "patient leaving", "ricoveri ordinari abbandonati")."""
    return bool(_VERB_FORM.fullmatch(word)) and _right_after(reading, word, set(reading.words))


def _modifies_own_word(reading: Reading, word: str, query_id: str, vocab: Vocabulary) -> bool:
    """Whether `word` stands right next to a content word `query_id` explains, the two a term
    another query names ("high schools", "scuole superiori" beside a count of schools, where
    another query is on the high schools): a part of the rows it counts, named in another
    query's words. The same place refuses a word no query explains ("attached to another
    content word")."""
    own = vocab.per_query.get(query_id, frozenset())
    own_words = vocab.words.get(query_id, frozenset())
    tokens = reading.tokens
    for i, token in enumerate(tokens):
        if token != word:
            continue
        for j in (i - 1, i + 1):
            if (
                0 <= j < len(tokens)
                and tokens[j] in reading.words
                and tokens[j] != word
                and _explained(tokens[j], own, own_words, vocab.matcher)
                and _a_term_elsewhere(vocab, query_id, min(i, j), max(i, j), tokens)
            ):
                return True
    return False


def _a_term_elsewhere(
    vocab: Vocabulary, query_id: str, first: int, second: int, tokens: Sequence[str]
) -> bool:
    """Whether the question's words at `first` and `second` (adjacent) are, stemmed, a pair
    of adjacent words of another query's texts: a term that query names ("high schools" of
    a query on the high schools), so a part of what the two words' head names. A noun next
    to the query's word that no query's text pairs with it ("pazienti riammessi", "patients
    wait") is the question's own wording."""
    stem = vocab.matcher.stems
    a, b = stem(tokens[first]), stem(tokens[second])
    return any(
        stem(x) & a and stem(y) & b
        for qid, pairs in vocab.phrases.items()
        if qid != query_id
        for x, y in pairs
    )


def _names_a_winner(query: CatalogQuery, groups: Sequence[frozenset[str]]) -> bool:
    """A result led by a non-quantity column, one row or ranked for a question asking the most
    or the least: the query names the customer, the ward, the year that ranks first, and
    answers "which", not "how much"."""
    columns = list(query.result.columns.values())
    ranks = any(g & {"maximum", "minimum"} for g in groups)
    return columns[0].kind != "quantity" and (query.result.shape == "row" or ranks)


def decide(
    question: str,
    queries: Mapping[str, CatalogQuery],
    similarities: Mapping[str, float],
    choices: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]],
    vocab: Vocabulary,
    threshold: float,
    tie_margin: float,
) -> Decision:
    """The offline decision over every catalog query (see the module docstring)."""
    reading = vocab.read(numbers_as_digits(question))
    fits = sorted(
        (
            fit(reading, queries[qid], s, choices.get(qid, {}), vocab)
            for qid, s in similarities.items()
        ),
        key=lambda f: (-f.score, f.query_id),
    )
    base = Decision(
        "text",
        fits=tuple(fits),
        asked=reading.asked,
        grouping=reading.grouping,
        threshold=threshold,
    )
    eligible = [f for f in fits if f.refused is None]
    refused_above = [f for f in fits if f.refused is not None and f.score >= threshold]
    best = eligible[0] if eligible else None
    if best is None or best.score < threshold:
        if refused_above:
            first = refused_above[0]
            return replace(
                base, reason=first.refused, refused_above=True, reason_query=first.query_id
            )
        top = fits[0].score if fits else None
        return replace(base, reason=f"no catalog query reaches the threshold (best {top})")
    return _chosen(base, best, eligible[1:], threshold, tie_margin)


def decide_chosen(
    question: str,
    query: CatalogQuery,
    proposed: Mapping[str, object] | None,
    choices: Mapping[str, Mapping[str, Sequence[str]]],
    vocab: Vocabulary,
) -> Decision:
    """The gates on the one query a model chose (no ranking: the model decided)."""
    reading = vocab.read(numbers_as_digits(question))
    chosen = fit(reading, query, 1.0, choices, vocab, proposed)
    base = Decision("text", fits=(chosen,), asked=reading.asked, grouping=reading.grouping)
    if chosen.refused is not None:
        return replace(
            base, reason=chosen.refused, refused_above=True, reason_query=chosen.query_id
        )
    return _chosen(base, chosen, [], None, 0.0)


def _chosen(
    base: Decision, best: Fit, others: Sequence[Fit], threshold: float | None, tie_margin: float
) -> Decision:
    tied = [
        f
        for f in others
        if best.score - f.score <= tie_margin and (threshold is None or f.score >= threshold)
    ]
    if tied:
        # Equal fits: the one that answers the question as asked, not a breakdown of it by
        # something it does not name, if exactly one does; else the question says which.
        fewest = min(len(f.unasked) for f in (best, *tied))
        closest = [f for f in (best, *tied) if len(f.unasked) == fewest]
        if len(closest) > 1:
            names = tuple(f.query_id for f in closest)
            return replace(base, outcome="ambiguous", candidates=names, extraction=best.extraction)
        best = closest[0]
    outcome: Outcome = "compute" if best.extraction.complete else "needs_parameter"
    return replace(base, outcome=outcome, query_id=best.query_id, extraction=best.extraction)
