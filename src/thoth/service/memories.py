"""The curator's verbs on memories, for the HTTP routes and the MCP tools: list, retire, merge.

They are the CLI's `tht memory list|retire|merge` (thoth.memory.curation), the same objects
their `--json` prints. Retiring or merging changes what every later session is proposed at F2,
so over HTTP and MCP only a caller marked `curator = true` in `[[service.callers]]` may do it
(and list, which shows every memory's provenance and use): another caller is refused with
403 `not_a_curator` and nothing changes. The local user (no caller) is the curator of its own
workspace, as on the CLI. The record names the caller as who retired or merged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from thoth.config import CallerSettings
from thoth.errors import Problem, ThothError
from thoth.memory.curation import (
    MergeRequest,
    RetireRequest,
    listing,
    merge,
    retire,
)
from thoth.memory.promotion import NEAR_DUPLICATE_MIN_COSINE
from thoth.runtime import Runtime
from thoth.service.sessions import RuntimeCall
from thoth.workflow.stores import MemoryStores
from thoth.workspace import Workspace

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
LOCAL_CURATOR = "local"


class RetireBody(BaseModel):
    model_config = _STRICT

    memory_id: str = Field(min_length=1, description="The memory to retire, e.g. mem-0001.")
    why: str = Field(min_length=1, description="Why, for the registry's history.")


class MergeBody(BaseModel):
    model_config = _STRICT

    keep: str = Field(min_length=1, description="The memory kept; it takes the others' sources.")
    drop: list[str] = Field(min_length=1, description="The memories merged into `keep`.")
    why: str = Field(min_length=1, description="Why, for the registry's history.")


class NotACurator(ThothError):
    """Retire, merge or list memories by a caller not marked `curator = true`."""

    code = "not_a_curator"


class MemoryDoor:
    """The curator's verbs for one caller of one workspace (`caller` None: the local user)."""

    def __init__(self, ws: Workspace, caller: CallerSettings | None, runtime: RuntimeCall) -> None:
        self.ws = ws
        self.caller = caller
        self._runtime = runtime

    def listing(self, near_duplicates: bool = True) -> dict[str, Any]:
        """`tht memory list --json`: state, history, provenance, use, near-duplicate pairs."""
        self._curator("list the memories")

        def work(rt: Runtime) -> dict[str, Any]:
            with MemoryStores.for_runtime(rt) as st:
                result = listing(
                    registry=st.registry,
                    sessions=st.sessions,
                    index=st.index,
                    embedder=st.embedder if near_duplicates else None,
                    threshold=NEAR_DUPLICATE_MIN_COSINE,
                )
            return result.model_dump(mode="json")

        return self._runtime(work)

    def retire(self, body: RetireBody) -> dict[str, Any]:
        """`tht memory retire --json`: never proposed again; sessions that chose it say so."""
        by = self._curator(f"retire {body.memory_id}")
        request = RetireRequest(memory_id=body.memory_id, why=body.why, by=by)

        def work(rt: Runtime) -> dict[str, Any]:
            with MemoryStores.for_runtime(rt) as st:
                result = retire(request, registry=st.registry, index=st.index)
            return result.model_dump(mode="json")

        return self._runtime(work)

    def merge(self, body: MergeBody) -> dict[str, Any]:
        """`tht memory merge --json`: `drop` merged into `keep`, which keeps their provenance."""
        by = self._curator(f"merge into {body.keep}")
        request = MergeRequest(keep=body.keep, drop=tuple(body.drop), why=body.why, by=by)

        def work(rt: Runtime) -> dict[str, Any]:
            with MemoryStores.for_runtime(rt) as st:
                result = merge(request, registry=st.registry, index=st.index)
            return result.model_dump(mode="json")

        return self._runtime(work)

    def _curator(self, what: str) -> str:
        """Who is curating (written to the registry), or NotACurator."""
        if self.caller is None:
            return LOCAL_CURATOR
        if not self.caller.curator:
            raise NotACurator(
                f"caller {self.caller.name} may not {what}: it is not a curator; nothing changed",
                problems=[
                    Problem(
                        f"caller {self.caller.name}",
                        "only a caller with `curator = true` curates memories",
                        hint="set `curator = true` on the caller in thoth.toml "
                        "([[service.callers]]), or curate with `tht memory` on the CLI",
                        code="not_a_curator",
                    )
                ],
            )
        return self.caller.name
