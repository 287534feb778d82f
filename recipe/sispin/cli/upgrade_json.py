"""
``pin upgrade --json``: what :mod:`sispin.cli.upgrade_report` says of each set, and what was written, as one JSON
document for scripts: each set's moves and the commits in between that change what it uses, its blast radius with
the price of the finished work it leaves unused and what the jobs it would run ask for, and what refused it.
"""

from __future__ import annotations

__all__ = ["upgrade_json", "radius_json"]

from dataclasses import asdict
from typing import Any, Dict, Optional, Union

from sispin.graph.price import Price
from sispin.ops.upgrade import UpgradeResult
from sispin.ops.upgrade_judge import BlastRadius, MoveReport, SetUpgrade, UsedChanges


def upgrade_json(result: UpgradeResult, committed: Optional[str] = None) -> Dict[str, Any]:
    """
    :param result: what ``pin upgrade`` found and did
    :param committed: the commit ``--commit`` made, if it made one
    :return: {"sets": [...], "refused": {"error", "exit_code"} or None, "needs": the flags a dry run's real move
        would need, "written": the files written (none for a dry run or a refusal), "committed": the commit or None}
    """
    written = result.written
    files = [] if written is None or not written.changed else [str(written.lock)]
    files += [str(written.snapshot)] if written is not None and written.snapshot is not None else []
    refusal = result.refusal
    return {
        "sets": [_set(report) for report in result.sets],
        "refused": None if refusal is None else {"error": str(refusal), "exit_code": refusal.exit_code},
        "needs": list(result.needs),
        "written": files,
        "committed": committed,
    }


def _set(report: SetUpgrade) -> Dict[str, Any]:
    return {
        "set": report.name,
        "moves": [_move(move) for move in report.moves],
        "dropped_aliases": [
            {"repo": repo, "alias": alias, "commit": old} for repo, alias, old in report.dropped_aliases
        ],
        "unbuilt": report.unbuilt,
        "drift": [asdict(drift) for drift in report.drift],
        "alias_setters": [{"value": value, "where": where} for value, where in report.alias_setters],
        "blast_radius": None if report.radius is None else radius_json(report.radius),
        "kept_ids": list(report.kept_ids),
    }


def _move(report: MoveReport) -> Dict[str, Any]:
    move = report.move
    return {
        "repo": move.repo,
        "url": report.url,
        "old": move.old,
        "new": move.new,
        "kind": move.kind,
        "added": move.added,
        "dropped": move.dropped,
        "tag": move.tag,
        "on_remote": report.planned.on_remote,
        "uses": None if report.used is None else _used(report.used),
    }


def _used(used: UsedChanges) -> Dict[str, Any]:
    """The commits that change what the set uses (of a move to unrelated history, the dropped ones under "dropped")."""
    return {
        "changing": used.number,
        "of": used.commits,
        "what": used.code.described,
        "listed": [asdict(change) for change in used.listed],
        "dropped": None if used.dropped is None else _used(used.dropped),
    }


def radius_json(radius: Union[BlastRadius, str]) -> Dict[str, Any]:
    """:return: a blast radius as ``--json`` shows it (why it was not computed: ``{"not_computed": why}``)"""
    if isinstance(radius, str):
        return {"not_computed": radius}
    return {
        "renewed": radius.renewed,
        "jobs": radius.jobs,
        "would_run": radius.would_run,
        "unused": radius.unused,
        "changed_outputs": list(radius.changed),
        "causes": [
            {"cause": c.cause, "first": list(c.first), "outputs": [name for name, _ in c.outputs]}
            for c in radius.causes
        ],
        "unused_cost": _price(radius.price),
        "would_run_requests": _price(radius.requested),
    }


def _price(price: Price) -> Dict[str, Any]:
    """In all and per job class: jobs, cpu_hours, gpu_hours, peak_memory (GB), unknown (jobs)."""
    return {
        "total": asdict(price.total),
        "by_class": {name: asdict(cost) for name, cost in sorted(price.by_class.items())},
    }
