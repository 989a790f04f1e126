"""The answer engine: routing, retrieval under one condition, and (elsewhere) answers."""

from thoth.answer.answerers import Answerer, AnswerModelError, make_answerer
from thoth.answer.retrieval import (
    KnowledgeSearch,
    Retrieval,
    RetrievedFragment,
    SearchRequestError,
    parse_request,
    request_fields,
)
from thoth.answer.routing import (
    Calibration,
    ChannelRouter,
    Route,
    calibrate,
    load_calibration_set,
)
from thoth.answer.seams import (
    AnalyticsBranch,
    NoAnalytics,
    NoPseudonymizer,
    NumericAnswer,
    Pseudonymizer,
)
from thoth.answer.service import Answer, AnswerService
from thoth.answer.sources import Source, aggregate_sources

__all__ = [
    "AnalyticsBranch",
    "Answer",
    "AnswerModelError",
    "AnswerService",
    "Answerer",
    "Calibration",
    "ChannelRouter",
    "KnowledgeSearch",
    "NoAnalytics",
    "NoPseudonymizer",
    "NumericAnswer",
    "Pseudonymizer",
    "Retrieval",
    "RetrievedFragment",
    "Route",
    "SearchRequestError",
    "Source",
    "aggregate_sources",
    "calibrate",
    "load_calibration_set",
    "make_answerer",
    "parse_request",
    "request_fields",
]
