"""
The operations of the ``pin`` commands called with the CLI's defaults (the lockfile found from the working directory
or PIN_LOCK, the default store), for tests that check a use case by its result rather than by its printed text.
"""

from __future__ import annotations

from typing import List, Optional

from sispin.git.moves import Allowed, Target
from sispin.git.store import Store
from sispin.graph.explain import shown
from sispin.lock.loading import find_lockfile, load_lockfile
from sispin.ops.check import CheckResult, check
from sispin.ops.explain import ExplainResult, explain
from sispin.ops.snapshot import SnapshotResult, snapshot
from sispin.ops.status import StatusResult, status
from sispin.ops.upgrade import UpgradeResult, upgrade


def checked(*sets: str, full: bool = False, offline: bool = True) -> CheckResult:
    """:return: what ``pin check [--offline] [--full] SETS`` finds"""
    return check(load_lockfile(find_lockfile()), sets, offline=offline, store=Store(), full=full)


def problems(result: CheckResult) -> str:
    """:return: the problems a check found, a line each, as ``pin check`` words them"""
    return "\n".join(str(problem) for problem in result.problems)


def snapshot_taken(*sets: str) -> SnapshotResult:
    """:return: what ``pin snapshot SETS`` did"""
    return snapshot(find_lockfile(), sets)


def explained(*sets: str, output: Optional[str] = None, against: Optional[str] = None) -> ExplainResult:
    """:return: what ``pin explain SETS [--output NAME] [--against REV]`` finds"""
    return explain(find_lockfile(), sets, output=output, against=against)


def standing(*sets: str, fetch: bool = False, changes: bool = False) -> StatusResult:
    """:return: what ``pin status SETS [--fetch] [--changes]`` finds"""
    return status(find_lockfile(), sets, fetch=fetch, store=Store(), changes=changes)


def differences(result: ExplainResult) -> List[str]:
    """:return: every root cause's differing arguments, ``path: old -> new`` as ``pin explain`` shows the values"""
    return [
        f"{difference.path}: {shown(difference.old)} -> {shown(difference.new)}"
        for explained_output in result.outputs
        for cause in explained_output.explanation.causes
        for difference in cause.differences
    ]


def upgraded(lock, sets, repos=(), *, to=None, release=False, dry_run=False, **allowed) -> UpgradeResult:
    """``pin upgrade SETS REPOS [--to TO] [--release] [--dry-run] [--allow-...]``, as an operation."""
    target = Target(revision=to, release=release)
    return upgrade(lock, sets, repos, target=target, dry_run=dry_run, allowed=Allowed(**allowed))
