"""A forge's push webhook (`POST /v1/hooks/git`): its signature checked, the push mapped to the
served source whose repository and branch it names, and a docs sync of the workspace queued
(the same `tht docs sync`, run by `tht schedule run-due` or `tht schedule worker`).

GitHub signs the body: `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body with the
secret>`. GitLab sends the secret token as it is: `X-Gitlab-Token`. The secrets come from the
environment variables `[schedule.hook]` names. Nothing is read from the body before its
signature (or token) is checked, and a refused push changes nothing.

A push is for a source when one of the repository URLs of the payload is the URL of the remote
that the source's served clone follows, and its `ref` is the branch it follows. The run's key
is the source and the pushed commit: a push delivered twice queues one sync.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from thoth.errors import ThothError
from thoth.schedule.scheduler import HOOK_PREFIX
from thoth.state import StateStore
from thoth.state.schedule import ScheduleQueue, ScheduleRun, run_key
from thoth.workspace import Workspace

GITHUB_SIGNATURE: Final = "x-hub-signature-256"
GITHUB_EVENT: Final = "x-github-event"
GITHUB_DELIVERY: Final = "x-github-delivery"
GITLAB_TOKEN: Final = "x-gitlab-token"
GITLAB_EVENT: Final = "x-gitlab-event"


class HookNotConfigured(ThothError):
    """No secret for this forge is configured (or its environment variable is unset)."""

    code = "hook_not_configured"


class HookUnsigned(ThothError):
    """The request carries neither GitHub's signature nor GitLab's token."""

    code = "hook_unsigned"


class HookBadSignature(ThothError):
    """The signature (or token) does not match the configured secret."""

    code = "hook_bad_signature"


class HookBadPayload(ThothError):
    """A signed push whose body is not the push event the forge documents."""

    code = "hook_bad_payload"


@dataclass(frozen=True)
class Push:
    """A verified push: the forge, the repository URLs it names, the branch and the commit."""

    forge: str
    urls: tuple[str, ...]
    branch: str | None  # None: a tag or another ref, which no source follows
    commit: str
    delivery: str | None


@dataclass(frozen=True)
class HookOutcome:
    """What a push did: the runs it queued (one per source it names) or why none."""

    event: str
    forge: str
    commit: str | None
    queued: list[ScheduleRun]
    already: list[ScheduleRun]  # the same push delivered before
    ignored: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "forge": self.forge,
            "commit": self.commit,
            "queued": [r.id for r in self.queued],
            "already_queued": [r.id for r in self.already],
            "ignored": self.ignored,
        }


def verify(ws: Workspace, headers: Mapping[str, str], body: bytes) -> str:
    """The forge whose signature or token the request carries and matches ("github",
    "gitlab"); raises otherwise. `headers` are lower-cased names."""
    hook = ws.settings.schedule.hook
    if GITHUB_SIGNATURE in headers:
        secret = _secret(hook.github_secret_env, "github_secret_env")
        given = headers[GITHUB_SIGNATURE]
        expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise HookBadSignature(
                f"{GITHUB_SIGNATURE} does not match the body signed with the secret of "
                f"${hook.github_secret_env}; nothing was done -> set the same secret in the "
                "forge's webhook and in that variable"
            )
        return "github"
    if GITLAB_TOKEN in headers:
        secret = _secret(hook.gitlab_token_env, "gitlab_token_env")
        if not hmac.compare_digest(headers[GITLAB_TOKEN].encode(), secret.encode()):
            raise HookBadSignature(
                f"{GITLAB_TOKEN} is not the token of ${hook.gitlab_token_env}; nothing was "
                "done -> set the same token in the forge's webhook and in that variable"
            )
        return "gitlab"
    raise HookUnsigned(
        f"no {GITHUB_SIGNATURE} nor {GITLAB_TOKEN} header; nothing was done -> configure the "
        "forge's webhook with a secret ([schedule.hook] in thoth.toml names its variable)"
    )


def _secret(env: str | None, key: str) -> str:
    if env is None:
        raise HookNotConfigured(
            f"[schedule.hook].{key} is not set: pushes from this forge are refused -> name the "
            "environment variable holding the webhook's secret"
        )
    value = os.environ.get(env)
    if not value:
        raise HookNotConfigured(
            f"the environment variable {env} ([schedule.hook].{key}) is not set in the "
            "service's environment -> set it to the webhook's secret and restart `tht serve`"
        )
    return value


def receive(
    ws: Workspace, state: StateStore, headers: Mapping[str, str], body: bytes, at: datetime
) -> HookOutcome:
    """Verify a forge's request and queue a docs sync for each source its push names."""
    forge = verify(ws, headers, body)
    event = headers.get(GITHUB_EVENT if forge == "github" else GITLAB_EVENT, "")
    if event not in ("push", "Push Hook"):
        return HookOutcome(event, forge, None, [], [], f"event {event!r} is not a push")
    push = _push(forge, body, headers.get(GITHUB_DELIVERY))
    if push.branch is None:
        return HookOutcome(event, forge, push.commit, [], [], "not a branch")
    if set(push.commit) == {"0"}:
        return HookOutcome(event, forge, push.commit, [], [], "the branch was deleted")
    wanted = {_normal(u) for u in push.urls}
    sources = [
        name
        for name, url, branch in served_branches(ws)
        if _normal(url) in wanted and branch == push.branch
    ]
    if not sources:
        return HookOutcome(
            event,
            forge,
            push.commit,
            [],
            [],
            f"no served source follows branch {push.branch} of {', '.join(push.urls)}",
        )
    queue = ScheduleQueue.on(state)
    queued: list[ScheduleRun] = []
    already: list[ScheduleRun] = []
    name = ws.settings.workspace
    for source in sources:
        routine = f"{HOOK_PREFIX}{source}"
        run, created = queue.enqueue(
            key=run_key(name, routine, push.commit),
            workspace=name,
            routine=routine,
            kind="docs_sync",
            due_at=at,
            at=at,
            by=f"{forge} webhook",
            request={
                "full": False,
                "forge": forge,
                "source": source,
                "branch": push.branch,
                "commit": push.commit,
                "delivery": push.delivery,
            },
        )
        (queued if created else already).append(run)
    return HookOutcome(event, forge, push.commit, queued, already, None)


def _push(forge: str, body: bytes, delivery: str | None) -> Push:
    try:
        data = json.loads(body)
        ref = str(data["ref"])
        commit = str(data["after"])
        holder = data["repository"] if forge == "github" else data["project"]
        keys = (
            ("clone_url", "ssh_url", "html_url", "git_url", "url")
            if forge == "github"
            else ("git_http_url", "git_ssh_url", "web_url", "url")
        )
        urls = tuple(str(holder[k]) for k in keys if isinstance(holder.get(k), str))
    except (ValueError, KeyError, TypeError) as exc:
        raise HookBadPayload(
            f"the {forge} push is not the documented payload ({type(exc).__name__}: {exc}); "
            "nothing was done -> send push events as application/json"
        ) from exc
    if not urls or not commit:
        raise HookBadPayload(f"the {forge} push names no repository URL or no commit")
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    return Push(forge, urls, branch, commit, delivery)


def served_branches(ws: Workspace) -> list[tuple[str, str, str]]:
    """(source, remote URL, branch) of each source whose served clone follows a remote
    branch; a source read at its own HEAD has nothing to realign from and is left out."""
    found: list[tuple[str, str, str]] = []
    for source in ws.settings.sources:
        repo = (ws.root / source.repo).resolve()
        branch = _config(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
        remote = branch and _config(repo, "config", "--get", f"branch.{branch}.remote")
        merge = branch and _config(repo, "config", "--get", f"branch.{branch}.merge")
        url = remote and _config(repo, "config", "--get", f"remote.{remote}.url")
        if url and merge:
            found.append((source.name, url, merge.removeprefix("refs/heads/")))
    return found


def _config(repo: Path, *args: str) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=30
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def _normal(url: str) -> str:
    """A repository URL compared without a trailing slash or `.git`, a local path resolved."""
    text = url.strip().rstrip("/").removesuffix(".git")
    if "://" not in text and ":" not in text.split("/")[0]:
        return str(Path(text).resolve()).removesuffix(".git")
    return text
