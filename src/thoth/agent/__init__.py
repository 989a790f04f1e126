"""The deep-analysis agent (seed 004, "l'analisi approfondita"): an asynchronous worker that
takes questions from a queue in the state store (`thoth.state.JobQueue`), navigates the
curated wiki, searches the knowledge, queries the analytics store, step by step, and answers
citing its sources — within budgets, with its whole transcript stored (docs/agent.md).

- `submit`: job creation, refused without a usable model.
- `wiki`: the wiki shelf, the fence of the wiki tools.
- `tools`: the tools and their outcomes (sources, stable codes).
- `loop`: one job's conversation with the model, budgets, transcript, privacy.
- `worker`: the worker process: claims, heartbeats, recovery.
"""

from thoth.agent.errors import AgentUnavailable, ToolRefused
from thoth.agent.loop import AgentRun, Budgets
from thoth.agent.submit import job_request, require_model, submit_job
from thoth.agent.tools import Toolbox, ToolOutcome
from thoth.agent.wiki import WikiShelf
from thoth.agent.worker import Worker, worker_id

__all__ = [
    "AgentRun",
    "AgentUnavailable",
    "Budgets",
    "ToolOutcome",
    "ToolRefused",
    "Toolbox",
    "WikiShelf",
    "Worker",
    "job_request",
    "require_model",
    "submit_job",
    "worker_id",
]
