"""Revisions and generations: which Git revision a workspace serves, and the generation state
machine (building -> candidate -> active -> retired, or failed) with its compare-and-swap
activation."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Final, Literal, cast

from sqlalchemy import Row, insert, select, update

from thoth.state.core import (
    StateError,
    StoreCore,
    dump_json,
    load_json,
    now,
    parse_ts,
    require,
    ts,
)
from thoth.state.schema import GENERATION_STATUSES, generations, revision_activations

GenerationStatus = Literal["building", "candidate", "active", "retired", "failed", "abandoned"]


class _Unset(Enum):
    UNSET = "unset"


# "No expectation": `activate_generation` replaces whatever generation is active.
UNSET: Final = _Unset.UNSET

# What `mark_generation` may move a generation to, and from where. 'active' is absent on
# purpose: only `activate_generation` may set it, because it must retire the previous one
# in the same transaction.
_MARK_FROM: Final[dict[str, tuple[str, ...]]] = {
    "building": ("building",),  # progress: update counts while building
    "candidate": ("building",),
    "failed": ("building", "candidate"),
    "abandoned": ("candidate",),  # its build died before the gate: never evaluated
    "retired": ("candidate",),  # a candidate that will never be served
}
_ACTIVATABLE: Final = ("candidate", "retired")


@dataclass(frozen=True)
class Generation:
    """One immutable index build of a workspace revision."""

    id: str
    workspace: str
    revision: str
    status: GenerationStatus
    config: dict[str, Any]
    counts: dict[str, Any]
    created_at: datetime
    activated_at: datetime | None


class Generations(StoreCore):
    """Revision activations and the generation state machine."""

    # ------------------------------------------------------------------ revisions

    def activate_revision(self, workspace: str, revision: str, activated_by: str) -> None:
        """Record that `revision` is now the Git revision the runtime must serve."""
        require("workspace", workspace)
        require("revision", revision)
        require("activated_by", activated_by)
        with self._write(
            f"revision_activations: activating {revision!r} for {workspace!r}"
        ) as conn:
            conn.execute(
                insert(revision_activations).values(
                    workspace=workspace,
                    revision=revision,
                    activated_by=activated_by,
                    activated_at=ts(now()),
                )
            )

    def active_revision(self, workspace: str) -> str | None:
        with self._read(
            f"revision_activations: reading the active revision of {workspace!r}"
        ) as conn:
            found = conn.scalar(
                select(revision_activations.c.revision)
                .where(revision_activations.c.workspace == workspace)
                .order_by(revision_activations.c.id.desc())
                .limit(1)
            )
        return None if found is None else str(found)

    # ------------------------------------------------------------------ generations

    def create_generation(self, workspace: str, revision: str, config: dict[str, Any]) -> str:
        """Register a new generation in status 'building'; returns its id."""
        require("workspace", workspace)
        require("revision", revision)
        config_text = dump_json("generation config", config)
        moment = now()
        gen_id = f"g{moment:%Y%m%d%H%M%S}-{secrets.token_hex(3)}"
        with self._write(f"generations: creating {gen_id} for {workspace!r}") as conn:
            conn.execute(
                insert(generations).values(
                    id=gen_id,
                    workspace=workspace,
                    revision=revision,
                    status="building",
                    config=config_text,
                    counts="{}",
                    created_at=ts(moment),
                    activated_at=None,
                )
            )
        return gen_id

    def mark_generation(
        self, gen_id: str, status: GenerationStatus, counts: dict[str, Any] | None = None
    ) -> None:
        """Move a generation to 'candidate', 'failed' or 'retired' (or update its counts)."""
        if status == "active":
            raise StateError(
                f"generations: cannot mark {gen_id} 'active' directly -> use "
                "activate_generation, which also retires the generation being replaced"
            )
        sources = _MARK_FROM.get(status)
        if sources is None:
            raise StateError(
                f"generations: unknown status {status!r} for {gen_id} -> use one of "
                f"{', '.join(GENERATION_STATUSES)}"
            )
        values: dict[str, Any] = {"status": status}
        if counts is not None:
            values["counts"] = dump_json(f"counts of generation {gen_id}", counts)
        with self._write(f"generations: marking {gen_id} {status!r}") as conn:
            # Compare-and-set on the current status: a concurrent activation cannot be undone.
            done = conn.execute(
                update(generations)
                .where(generations.c.id == gen_id, generations.c.status.in_(sources))
                .values(**values)
            )
            if done.rowcount == 1:
                return
            current = conn.scalar(select(generations.c.status).where(generations.c.id == gen_id))
        if current is None:
            raise StateError(
                f"state store {self.url}: generation {gen_id} not found in table generations "
                "-> check the id (list_generations shows the existing ones)"
            )
        raise StateError(
            f"state store {self.url}: generation {gen_id} is {current!r}; it cannot become "
            f"{status!r} (only from {' or '.join(repr(s) for s in sources)})"
        )

    def replace_generation_counts(self, gen_id: str, counts: dict[str, Any]) -> None:
        """Replace the counts of a generation in any status: `tht index migrate` records there
        what the new backend sealed (e.g. Edge's shard fingerprints), the records unchanged."""
        values = {"counts": dump_json(f"counts of generation {gen_id}", counts)}
        with self._write(f"generations: recording the counts of {gen_id}") as conn:
            done = conn.execute(
                update(generations).where(generations.c.id == gen_id).values(**values)
            )
        if done.rowcount != 1:
            raise StateError(
                f"state store {self.url}: generation {gen_id} not found in table generations "
                "-> check the id (list_generations shows the existing ones)"
            )

    def get_generation(self, gen_id: str) -> Generation | None:
        with self._read(f"generations: reading {gen_id}") as conn:
            row = conn.execute(select(generations).where(generations.c.id == gen_id)).first()
        return None if row is None else _generation(row)

    def list_generations(self, workspace: str) -> list[Generation]:
        """All generations of the workspace, newest first."""
        with self._read(f"generations: listing {workspace!r}") as conn:
            rows = conn.execute(
                select(generations)
                .where(generations.c.workspace == workspace)
                .order_by(generations.c.created_at.desc(), generations.c.id.desc())
            ).all()
        return [_generation(r) for r in rows]

    def active_generation(self, workspace: str) -> Generation | None:
        with self._read(f"generations: reading the active one of {workspace!r}") as conn:
            row = conn.execute(
                select(generations).where(
                    generations.c.workspace == workspace, generations.c.status == "active"
                )
            ).first()
        return None if row is None else _generation(row)

    def activate_generation(
        self,
        workspace: str,
        gen_id: str,
        expected_previous: str | _Unset | None = UNSET,
    ) -> str | None:
        """Serve `gen_id` from now on; retire the one it replaces. Returns the replaced id.

        One transaction: readers see either the old or the new active generation, never none
        or two. `gen_id` must be a 'candidate' or a 'retired' one (rollback).

        `expected_previous` (compare-and-swap): the generation the caller built from (None: no
        generation was active). If another one is active by now, nothing changes and a
        StateError says so: a build that carried records forward from a generation must not
        replace a newer one, whose records it would silently drop.
        """
        with self._write(f"generations: activating {gen_id} for {workspace!r}") as conn:
            # Lock every generation row of the workspace (in id order, so two activations
            # cannot deadlock): a concurrent activation waits here and then sees this one's
            # result, instead of both retiring the same old row. SQLite has no FOR UPDATE;
            # there BEGIN IMMEDIATE already serialises writers.
            locked = conn.execute(
                select(generations.c.id, generations.c.status)
                .where(generations.c.workspace == workspace)
                .order_by(generations.c.id)
                .with_for_update()
            ).all()
            statuses = {str(row.id): str(row.status) for row in locked}
            if gen_id not in statuses:
                owner = conn.scalar(
                    select(generations.c.workspace).where(generations.c.id == gen_id)
                )
                if owner is None:
                    raise StateError(
                        f"state store {self.url}: generation {gen_id} not found in table "
                        "generations -> check the id (list_generations shows the existing ones)"
                    )
                raise StateError(
                    f"state store {self.url}: generation {gen_id} belongs to workspace "
                    f"{owner!r}, not {workspace!r} -> activate it in its own workspace"
                )
            status = statuses[gen_id]
            if status not in _ACTIVATABLE:
                raise StateError(
                    f"state store {self.url}: generation {gen_id} is {status!r}; only a "
                    "'candidate' or a 'retired' generation can be activated -> "
                    + (
                        "it is already active, nothing to do"
                        if status == "active"
                        else "activate a candidate that passed the gate, or a retired one"
                    )
                )
            previous = next((gid for gid, st in statuses.items() if st == "active"), None)
            if not isinstance(expected_previous, _Unset) and previous != expected_previous:
                raise StateError(
                    f"state store {self.url}: generation {gen_id} was built from "
                    f"{expected_previous or 'no active generation'}, but {previous or 'none'} "
                    f"is active now (another build of {workspace!r} finished first); nothing "
                    "was activated -> run the build again: it starts from the new one"
                )
            if previous is not None:
                conn.execute(
                    update(generations).where(generations.c.id == previous).values(status="retired")
                )
            conn.execute(
                update(generations)
                .where(generations.c.id == gen_id)
                .values(status="active", activated_at=ts(now()))
            )
        return previous


def _generation(row: Row[Any]) -> Generation:
    return Generation(
        id=row.id,
        workspace=row.workspace,
        revision=row.revision,
        status=cast(GenerationStatus, row.status),
        config=load_json(row.config),
        counts=load_json(row.counts),
        created_at=parse_ts(row.created_at),
        activated_at=None if row.activated_at is None else parse_ts(row.activated_at),
    )
