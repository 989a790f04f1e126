"""Everything an answer says in words of its own, in the workspace's language (it or en).

One table per language, so the extractive answer, the honesty floor and the fixed replies
(numeric questions, failed search) say the same thing the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# What the honesty floor asks a model to reply, alone, when its context does not answer the
# question: a token in no language, so that the declining reply is told apart from an answer
# (an answer cites its context; this reply cites nothing and is not refused for it).
NOT_IN_CONTEXT: Final = "NOT_IN_CONTEXT"


@dataclass(frozen=True)
class Wording:
    caveat_label: str  # marks a caveat line in a fragment's reading text
    caveats_heading: str
    truncated: str  # {fragments} {documents}
    nothing_found: str
    model_found_nothing: str  # {documents}: the model read them and none answers
    all_dropped: str  # {fragments}: the search found evidence, none fitted the context
    search_failed: str  # {code} {error}
    # The numeric path (level 3): what a computed answer, a missing or invalid parameter and
    # a figure no catalog query computes say.
    data_date: str  # {date}
    computed_by: str  # {query} {parameters}
    no_parameters: str
    # The row(s) holding a ranked table's extreme, when the question asks the minimum or the
    # maximum: {figure} the column's label, {value} with its unit, {rows} each row's labels.
    figure_lowest: str
    figure_highest: str
    figure_not_available: str
    figure_maybe_not_available: str  # offline: the similarity band cannot be sure it is a figure
    figure_below_threshold: str  # {query} {score} {threshold}: the closest query, below the cut
    needs_parameter: str  # {query} {names}
    invalid_parameter: str  # {query} {problems}
    ambiguous_query: str  # {candidates}: two catalog queries fit the question equally
    numeric_failed: str  # {code} {error}
    numbers_heading: str  # before the figures' table a model reads
    no_overlap: str  # {documents}: the offline answerer read them and none holds a term
    number_warning: str  # prefix of a caveat quoted next to a sentence with its number
    page: str  # {page}: where in its document a quote is, after its [n] marker
    # A quarter asked, a figure quoted that states another period ({period}: "2024", "nine
    # months"), and the line opening an answer whose every figure is of another period.
    other_period: str
    no_quarter_figure: str
    model_other_period: str  # heads the figures of a model's reply that are another period's
    default_instructions: str
    floor_heading: str
    floor_caveats: str
    floor_ground: str  # an answer from the numbered context, or NOT_IN_CONTEXT alone
    floor_figures: str  # a computed answer: the model words the figures it is given
    floor_periods: str  # a figure is the period its source states, not the one asked
    floor_truncated: str  # {fragments} {documents}
    question_heading: str
    context_heading: str


ITALIAN = Wording(
    caveat_label="Avvertenza",
    caveats_heading="Avvertenze dalle fonti:",
    truncated=(
        "Attenzione: {fragments} frammenti (da {documents} documenti) trovati dalla ricerca "
        "sono stati esclusi per mancanza di spazio: la risposta potrebbe essere incompleta."
    ),
    nothing_found=(
        "Non ho trovato nulla nelle fonti consultabili che risponda alla domanda: "
        "non posso rispondere senza inventare."
    ),
    model_found_nothing=(
        "Il modello di risposta ha letto i documenti trovati dalla ricerca ({documents}) e "
        "nessuno risponde alla domanda: non posso rispondere senza inventare."
    ),
    all_dropped=(
        "La ricerca ha trovato {fragments} frammenti, ma nessuno è entrato nello spazio "
        "disponibile per il contesto: non posso rispondere senza inventare."
    ),
    search_failed=(
        "La ricerca nelle fonti non è riuscita (codice {code}): questa non è una risposta "
        "vuota, le fonti non sono state consultate. Dettaglio: {error}"
    ),
    data_date="dati aggiornati al {date}",
    computed_by="Calcolato dalla query di catalogo {query} ({parameters}).",
    no_parameters="senza parametri",
    figure_lowest="Valore più basso di {figure}: {value}, per {rows}.",
    figure_highest="Valore più alto di {figure}: {value}, per {rows}.",
    figure_not_available=(
        "Il dato richiesto non è disponibile: nessuna query del catalogo analitico lo calcola, "
        "e Thoth non ricava numeri dal testo dei documenti. Dalle fonti testuali:"
    ),
    figure_maybe_not_available=(
        "Nessuna query del catalogo analitico calcola questa domanda: se chiede un dato "
        "numerico dell'archivio, quel dato non è disponibile e Thoth non lo ricava dal testo. "
        "Dalle fonti testuali:"
    ),
    figure_below_threshold=(
        "La query del catalogo analitico più vicina a questa domanda, {query}, ha punteggio "
        "{score}, sotto la soglia {threshold}: Thoth non calcola il dato con una query così "
        "incerta (se è quella giusta, aggiungi la domanda ai suoi esempi o ricalibra con `tht "
        "analytics calibrate`) e non lo ricava dal testo. Dalle fonti testuali:"
    ),
    needs_parameter=(
        "Per calcolare questo dato (query {query}) manca: {names}. Ripeti la domanda indicandolo."
    ),
    invalid_parameter=(
        "Non posso calcolare questo dato (query {query}) con i valori indicati: {problems}."
    ),
    ambiguous_query=(
        "La domanda si adatta ugualmente a più query del catalogo: {candidates}. Ripetila "
        "dicendo quale dato chiedi."
    ),
    numeric_failed=(
        "Il calcolo del dato non è riuscito (codice {code}): nessun numero è stato servito. "
        "Dettaglio: {error}"
    ),
    numbers_heading="Dati calcolati (usa solo questi numeri, con la loro data):",
    no_overlap=(
        "Nessun passo dei documenti trovati dalla ricerca ({documents}) contiene i termini "
        "della domanda: non posso rispondere senza inventare."
    ),
    number_warning="⚠ Attenzione, dato segnalato dalla fonte",
    page="pag. {page}",
    other_period="— indica {period}, nessun trimestre",
    no_quarter_figure=(
        "Nessun valore citato indica il trimestre chiesto: ognuno indica un anno o un periodo "
        "più lungo."
    ),
    model_other_period=(
        "Valori che la fonte indica per un altro periodo, non per il trimestre chiesto:"
    ),
    default_instructions=(
        "Rispondi alla domanda usando solo il contesto numerato qui sotto e cita le fonti "
        "con i loro marcatori [n]."
    ),
    floor_heading=(
        "Regole del servizio (valgono dopo le istruzioni precedenti e prevalgono su di esse):"
    ),
    floor_caveats=(
        "- Riporta ogni avvertenza delle fonti usate così com'è, senza attenuarla; non "
        "presentare mai un dato che una fonte segnala come inaffidabile senza la sua avvertenza."
    ),
    floor_ground=(
        "- Rispondi solo in base al contesto numerato. Se non risponde affatto alla domanda, "
        f"rispondi soltanto {NOT_IN_CONTEXT}, senza altro testo; se risponde solo in parte, "
        "rispondi a quella parte e dì che cosa non dice."
    ),
    floor_figures=(
        "- Rispondi solo in base ai valori qui sotto, così come sono dati; se non rispondono "
        "alla domanda, dillo."
    ),
    floor_periods=(
        "- Un valore è del periodo che la sua fonte indica: se la domanda chiede un periodo "
        "(un trimestre) e la fonte dà il valore di un altro (l'anno, sei o nove mesi), dì di "
        "quale periodo è, senza presentarlo come quello chiesto."
    ),
    floor_truncated=(
        "- {fragments} frammenti (da {documents} documenti) trovati dalla ricerca sono stati "
        "esclusi per mancanza di spazio: dillo, la risposta potrebbe essere incompleta."
    ),
    question_heading="Domanda:",
    context_heading="Contesto:",
)

ENGLISH = Wording(
    caveat_label="Caveat",
    caveats_heading="Caveats from the sources:",
    truncated=(
        "Note: {fragments} fragments (from {documents} documents) found by the search were "
        "left out for lack of space: the answer may be incomplete."
    ),
    nothing_found=(
        "I found nothing in the sources available to you that answers the question: I "
        "cannot answer without inventing."
    ),
    model_found_nothing=(
        "The answer model read the documents the search found ({documents}) and none of "
        "them answers the question: I cannot answer without inventing."
    ),
    all_dropped=(
        "The search found {fragments} fragments, but none fitted in the space available for "
        "the context: I cannot answer without inventing."
    ),
    search_failed=(
        "The search of the sources failed (code {code}): this is not an empty answer, the "
        "sources were not consulted. Details: {error}"
    ),
    data_date="data as of {date}",
    computed_by="Computed by the catalog query {query} ({parameters}).",
    no_parameters="no parameters",
    figure_lowest="Lowest {figure}: {value}, for {rows}.",
    figure_highest="Highest {figure}: {value}, for {rows}.",
    figure_not_available=(
        "The figure asked for is not available: no query of the analytics catalog computes "
        "it, and Thoth does not take numbers from the text of documents. From the text sources:"
    ),
    figure_maybe_not_available=(
        "No query of the analytics catalog computes this question: if it asks for a figure "
        "of the store, that figure is not available and Thoth does not take it from text. From "
        "the text sources:"
    ),
    figure_below_threshold=(
        "The closest query of the analytics catalog, {query}, scored {score}, below the "
        "threshold {threshold}: Thoth does not compute the figure with a query this uncertain "
        "(if it is the right one, add the question to its examples or recalibrate with `tht "
        "analytics calibrate`) and does not take it from text. From the text sources:"
    ),
    needs_parameter=(
        "To compute this figure (query {query}) I need: {names}. Ask again stating it."
    ),
    invalid_parameter="I cannot compute this figure (query {query}) with those values: {problems}.",
    ambiguous_query=(
        "The question fits several catalog queries equally: {candidates}. Ask again saying "
        "which figure you want."
    ),
    numeric_failed=(
        "Computing the figure failed (code {code}): no number was served. Details: {error}"
    ),
    numbers_heading="Computed figures (use only these numbers, with their date):",
    no_overlap=(
        "No passage of the documents the search found ({documents}) holds the question's "
        "terms: I cannot answer without inventing."
    ),
    number_warning="⚠ Warning, figure flagged by the source",
    page="p. {page}",
    other_period="— states {period}, no quarter",
    no_quarter_figure=(
        "No figure quoted states the quarter asked: each states a year or a longer span."
    ),
    model_other_period="Figures their source states for another period, not the quarter asked:",
    default_instructions=(
        "Answer the question using only the numbered context below and cite the sources "
        "with their [n] markers."
    ),
    floor_heading="Rules of this service (they come after the instructions above and prevail):",
    floor_caveats=(
        "- Report every caveat of the sources used as it is, without softening it; never "
        "present a figure a source flags as unreliable without its caveat."
    ),
    floor_ground=(
        "- Answer only from the numbered context. If it does not answer the question at all, "
        f"reply {NOT_IN_CONTEXT} alone, with no other text; if it answers only part of it, "
        "answer that part and say what it does not say."
    ),
    floor_figures=(
        "- Answer only from the figures below, as they are given; if they do not answer the "
        "question, say so."
    ),
    floor_periods=(
        "- A figure is for the period its source states: if the question asks a period (a "
        "quarter) and the source gives another's (the year, six or nine months), say which "
        "period it is for, never present it as the one asked."
    ),
    floor_truncated=(
        "- {fragments} fragments (from {documents} documents) found by the search were left "
        "out for lack of space: say so, the answer may be incomplete."
    ),
    question_heading="Question:",
    context_heading="Context:",
)


def wording_for(language: str) -> Wording:
    """Italian for `it`/`it-IT`, English for anything else."""
    return ITALIAN if language.split("-")[0] == "it" else ENGLISH
