"""Creating a job: refused at once when no model can run it, the request checked as a search's.

A job waits for a worker that will call a model: without a key in the environment variable
`[llm].api_key_env` names (or with `[agent] enabled = false`) it would wait forever or fail
later, so it is not created (`agent_unavailable`). The synchronous `tht ask` does not depend
on any of this and keeps working offline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from thoth.agent.errors import AgentUnavailable
from thoth.answer.request import SearchRequestError, parse_request
from thoth.answer.scope import allowed_labels, check_names
from thoth.config import Settings
from thoth.state import Job, JobQueue


def require_model(settings: Settings, environ: Mapping[str, str] | None = None) -> None:
    """AgentUnavailable unless `[agent]` is enabled and `[llm]`'s key is in the environment."""
    env = os.environ if environ is None else environ
    if not settings.agent.enabled:
        raise AgentUnavailable(
            "the deep-analysis agent is disabled ([agent] enabled = false)",
            "set [agent] enabled = true in thoth.toml (with a model in [llm]); `tht ask` "
            "answers synchronously meanwhile",
        )
    if not env.get(settings.llm.api_key_env):
        raise AgentUnavailable(
            f"no model for the deep-analysis agent: [llm].api_key_env names "
            f"{settings.llm.api_key_env}, which is not set",
            f"export {settings.llm.api_key_env} (and set [llm] provider, model, base_url) "
            "where jobs are submitted and where `tht agent worker` runs; `tht ask` answers "
            "synchronously without it",
        )


def job_request(
    settings: Settings, labels: Sequence[str] | None, channel: str | None
) -> dict[str, object]:
    """The search context a job's tools run under, checked as `tht ask` checks it (known
    labels and channel); labels None: `[answers].default_labels`."""
    given = parse_request(
        {"labels": list(labels) if labels is not None else None, "channel": channel}
    )
    check_names(settings, given)
    allowed_labels(settings, given)
    return {"labels": given.get("labels"), "channel": given.get("channel")}


def submit_job(
    settings: Settings,
    queue: JobQueue,
    question: str,
    *,
    caller: str | None = None,
    labels: Sequence[str] | None = None,
    channel: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Job:
    """Queue a question for the agent, or refuse it (AgentUnavailable, SearchRequestError)."""
    require_model(settings, environ)
    text = " ".join(question.split())
    if not text:
        raise SearchRequestError("the question is empty -> ask something")
    return queue.create(settings.workspace, caller, text, job_request(settings, labels, channel))
