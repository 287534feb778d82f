"""
``pin upgrade``: the one deliberate way to move experiment sets.

Each repository moves to the head of its ``branch`` (or to a revision, to the branch as it was at a moment, to its
newest release); the remotes are fetched side by side. Each set's moves are judged by building its graph before and
after them (:mod:`sispin.ops.upgrade_judge`); downgrades and jumps to unrelated history are refused unless
explicitly allowed; pin.toml (and the snapshot) is rewritten once for all sets (:mod:`sispin.ops.upgrade_write`).
"""

from __future__ import annotations

__all__ = ["Selection", "select_sets", "UpgradePlan", "plan_moves", "UpgradeResult", "upgrade"]

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from sispin.errors import PinError, RefusedMoveError, RevisionError, UsageError
from sispin.git.moves import Allowed, Move, PlannedMove, Target, plan_repo_move, refusal
from sispin.git.store import Store
from sispin.lock.files import check_writable
from sispin.lock.loading import parse_lockfile, read_lockfile_text
from sispin.lock.lockfile import Lockfile, unknown_name
from sispin.ops.upgrade_judge import SetUpgrade, judge_set, move_reports
from sispin.ops.upgrade_write import Written, moved_text, write_moves


@dataclass(frozen=True)
class Selection:
    """
    :param sets: the sets to move
    :param repos: the repositories named (empty: all of each set's)
    :param frozen: the sets ``--all`` leaves out because they are frozen
    """

    sets: Tuple[str, ...]
    repos: Tuple[str, ...]
    frozen: Tuple[str, ...]


def select_sets(path: Path, words: Sequence[str], every: bool) -> Selection:
    """
    :param path: the pin.toml
    :param words: the command line's names: a set, then sets and repositories (with ``--all``: repositories)
    :param every: ``--all``: every set (that pins a repository named, when any is), but the frozen ones
    :raises UsageError: for no set, or a name that is a set and a repository both
    """
    lockfile = parse_lockfile(read_lockfile_text(path), path)
    if every:
        for repo in words:
            if repo in lockfile.sets and repo not in lockfile.repos:
                raise UsageError(f"{repo!r} is a set: with --all, name repositories (or name the sets, without --all)")
            lockfile.get_repo(repo)
        names = [name for name, spec in lockfile.sets.items() if not words or set(words) & set(spec.pins)]
        frozen = tuple(name for name in names if lockfile.sets[name].freeze)
        return Selection(tuple(name for name in names if name not in frozen), tuple(words), frozen)
    if not words:
        raise UsageError("upgrade needs SET (or --all)")
    lockfile.get_set(words[0])
    for word in words[1:]:
        if word in lockfile.sets and word in lockfile.repos:
            raise UsageError(f"{word!r} names a set and a repository: upgrade the sets one command at a time")
    set_names = [words[0]] + [word for word in words[1:] if word in lockfile.sets]
    return Selection(tuple(dict.fromkeys(set_names)), tuple(w for w in words[1:] if w not in lockfile.sets), ())


@dataclass(frozen=True)
class UpgradePlan:
    """
    :param lockfile: the lockfile the moves are planned on
    :param text: its text (the blast radius, the check of what changed meanwhile and the rewrite start from it)
    :param target: where the repositories move
    :param named: the repositories named (empty: all of each set's)
    :param left_out: the sets left out because they pin none of the repositories named
    :param plans: per set, the planned move of each of its repositories that moves
    :param mirrors: the mirror of each repository that moves, just fetched
    :param refused: why some moves need a flag that was not given (None: none does), and the flags
    """

    lockfile: Lockfile
    text: str
    target: Target
    named: Tuple[str, ...]
    left_out: Tuple[str, ...]
    plans: Dict[str, List[PlannedMove]]
    mirrors: Dict[str, Path]
    refused: Tuple[Optional[str], List[str]]

    @property
    def moving(self) -> Dict[str, List[Move]]:
        """The moves of each set that has some."""
        moves = {name: [p.move for p in planned if p.move.kind != "none"] for name, planned in self.plans.items()}
        return {name: moving for name, moving in moves.items() if moving}


@dataclass(frozen=True)
class UpgradeResult:
    """
    :param plan: what was planned
    :param sets: what was found of each set, in order, as far as the upgrade got
    :param refusal: why nothing was written (raised by the CLI after it showed the sets); None when not refused
    :param needs: the flags a dry run's real move would need
    :param written: what was written; None for a dry run, a refusal, or when nothing moves
    """

    plan: UpgradePlan
    sets: Tuple[SetUpgrade, ...]
    refusal: Optional[PinError] = None
    needs: Tuple[str, ...] = ()
    written: Optional[Written] = None

    def commit_message(self) -> Tuple[str, List[str]]:
        """:return: the summary and body of ``--commit``'s commit: the moves, the commits that change what each set
        uses, the blast radius, and where they were asked to go"""
        moving, target = self.plan.moving, self.plan.target
        several = len(moving) > 1
        body = []
        for report in self.sets:
            if report.name not in moving:
                continue
            prefix = f"{report.name}: " if several else ""
            for m in moving[report.name]:
                uses = (
                    f", {report.touching[m.repo]} change what {report.name} uses" if m.repo in report.touching else ""
                )
                body.append(f"{prefix}{m.repo} {m.old[:7]} -> {m.new[:7]} ({m.summary}{uses})")
            body += [f"{prefix}{report.radius.headline} get new ids"] if report.radius else []
        body += [f"--to {target.revision}"] if target.revision else []
        body += [f"--as-of {target.as_of.isoformat()}"] if target.as_of else []
        body += ["--release"] if target.release else []
        moves = "; ".join(
            (f"{set_name} " if several else "") + ", ".join(f"{m.repo} {m.old[:7]} -> {m.new[:7]}" for m in moves)
            for set_name, moves in moving.items()
        )
        return f"pin upgrade {' '.join(moving)}: {moves}", body


def upgrade(
    path: Path,
    set_names: Sequence[str],
    repos: Sequence[str],
    *,
    target: Target,
    dry_run: bool,
    allowed: Allowed,
    store: Optional[Store] = None,
    planned: Callable[[UpgradePlan], None] = lambda plan: None,
    judged: Callable[[SetUpgrade], None] = lambda report: None,
) -> UpgradeResult:
    """
    :param path: the pin.toml
    :param set_names: the sets to move
    :param repos: repositories to move; empty for all of each set's
    :param target: where the repositories move
    :param dry_run: judge the moves, write nothing
    :param allowed: the moves to let through that are refused otherwise
    :param store: the mirrors to resolve in (fetched first; default: the user's store)
    :param planned: told the plan once the moves are planned, before any set is judged
    :param judged: told each set's report as soon as it is final (a build of each set's graph takes a while)
    :raises ConcurrentChangeError: when another process moved or removed one of the pins meanwhile
    """
    # one read: the blast radius, the check of what changed meanwhile and the rewrite all start from this text
    text = read_lockfile_text(path)
    lockfile = parse_lockfile(text, path)
    for set_name in set_names:
        lockfile.get_set(set_name).check_not_frozen("pin upgrade")
    if not dry_run:
        check_writable(path)  # say it before fetching and planning, not after
    store = store or Store()
    plan = plan_moves(lockfile, text, set_names, repos, target, store, allowed)
    planned(plan)
    reports: List[SetUpgrade] = []
    why, flags = plan.refused
    if why is not None and not dry_run:
        for set_name, moves in plan.plans.items():
            reports.append(SetUpgrade(set_name, move_reports(lockfile, moves)))
            judged(reports[-1])
        return UpgradeResult(plan, tuple(reports), RefusedMoveError(why))
    texts = (text, moved_text(lockfile, text, plan.moving))
    for set_name, moves in plan.plans.items():
        if set_name in plan.moving:
            report = judge_set(lockfile, texts, set_name, moves, (allowed.drift, dry_run), (store, plan.mirrors))
        else:
            report = SetUpgrade(set_name, move_reports(lockfile, moves))
        reports.append(report)
        judged(report)
        if report.refusal is not None:
            return UpgradeResult(plan, tuple(reports), report.refusal)
    if dry_run or not plan.moving:
        return UpgradeResult(plan, tuple(reports), needs=tuple(flags) if why is not None and plan.moving else ())
    graphs = [report.after for report in reports if report.after is not None]
    return UpgradeResult(plan, tuple(reports), written=write_moves(path, plan.moving, graphs))


def plan_moves(
    lockfile: Lockfile,
    text: str,
    set_names: Sequence[str],
    repos: Sequence[str],
    target: Target,
    store: Store,
    allowed: Allowed,
) -> UpgradePlan:
    """
    :return: per set, the planned move of each repository named that it pins (all of the set's when none is named),
        each in the repository's mirror, fetched (side by side)
    :raises UsageError: when ``--to`` goes with other than exactly one repository
    :raises UnknownNameError: when a repository named is pinned by none of the sets (by the one set, when one)
    """
    names = list(dict.fromkeys(repos))
    pinned = names or list(dict.fromkeys(repo for name in set_names for repo in lockfile.get_set(name).pins))
    if target.revision is not None and len(pinned) != 1:
        which = f"set {set_names[0]!r}" if len(set_names) == 1 else "the sets"
        raise UsageError(f"--to needs exactly one REPO ({which} pin: {', '.join(pinned) or 'none'})")
    chosen: Dict[str, List[str]] = {}
    for set_name in set_names:
        spec = lockfile.get_set(set_name)
        if len(set_names) == 1:
            for name in names:
                spec.pin(name)  # one set: a repository it does not pin is an error
        chosen[set_name] = [name for name in names if name in spec.pins] if names else list(spec.pins)
    for name in names:
        if not any(name in pins for pins in chosen.values()):
            pinned = {repo: None for pins in (lockfile.get_set(s).pins for s in set_names) for repo in pins}
            raise unknown_name(f"none of the sets {', '.join(set_names)} pins a repository", name, "they pin", pinned)
    left_out = tuple(set_name for set_name, pins in chosen.items() if names and not pins)
    moving = list(dict.fromkeys(repo for pins in chosen.values() for repo in pins))
    fetched = store.fetch_all(list(dict.fromkeys(lockfile.get_repo(repo).url for repo in moving)))
    mirrors = {repo: fetched[lockfile.get_repo(repo).url] for repo in moving}
    plans = {
        set_name: [_plan(lockfile, set_name, name, target, mirrors[name]) for name in pins]
        for set_name, pins in chosen.items()
        if set_name not in left_out
    }
    refused = refusal([p for moves in plans.values() for p in moves], allowed)
    return UpgradePlan(lockfile, text, target, tuple(names), left_out, plans, mirrors, refused)


def _plan(lockfile: Lockfile, set_name: str, name: str, target: Target, mirror: Path) -> PlannedMove:
    """:return: the move of one repository, planned in its mirror (just fetched)"""
    pin, repo = lockfile.get_set(set_name).pin(name), lockfile.get_repo(name)
    try:
        return plan_repo_move(mirror, repo, pin.commit, target)
    except RevisionError as exc:
        raise RevisionError(f"repos.{name} ({repo.url}): {exc}") from None
