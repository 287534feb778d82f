"""
What ``pin upgrade`` says about each set's moves (:class:`sispin.ops.upgrade_judge.SetUpgrade`), as soon as they are
judged: the moves, the commits in between that change what the set uses, the hash_overwrites a move drops, the blast
radius, and what a refused move is refused for.
"""

from __future__ import annotations

__all__ = ["UpgradeReport", "show_radius"]

from typing import Callable

from sispin.cli.output import Output
from sispin.cli.snapshot import waiting_lines
from sispin.git.moves import Move, format_log, format_move
from sispin.graph.price import Cost, Price
from sispin.ops.upgrade import UpgradePlan
from sispin.ops.upgrade_judge import BlastRadius, SetUpgrade, UsedChanges
from sispin.text import capped, count, listed, shown_key

#: files named per listed commit before the rest are counted
_FILES_SHOWN = 3
#: job classes priced one by one before the rest are left to --verbose
_CLASSES_SHOWN = 5


class UpgradeReport:
    """
    The callbacks of :func:`sispin.ops.upgrade.upgrade`: the plan, then each set as soon as it is judged.

    :param out: where it is said
    """

    def __init__(self, out: Output):
        self.out = out
        self._several = False

    def planned(self, plan: UpgradePlan) -> None:
        """:param plan: the sets left out, named; and whether a header will name each set"""
        self._several = len(plan.plans) > 1
        for set_name in plan.left_out:
            self.out.info(f"sets.{shown_key(set_name)}: pins none of {', '.join(plan.named)}, left out")

    def judged(self, report: SetUpgrade) -> None:
        """:param report: a set's moves and what they change, as far as the upgrade got"""
        out = self.out
        if self._several:
            out.result(f"sets.{shown_key(report.name)}:")
        if not report.moves:
            out.result(f"experiment set {report.name!r} pins no repositories: nothing to upgrade")
            return
        width = max(len(m.move.repo) for m in report.moves)
        for m in report.moves:
            out.result(format_move(m.move, width))
            if m.used is not None:
                _show_changes(out, report.name, m.move, m.used)
            elif m.move.kind != "none" and (log := format_log(m.move)):
                out.result("\n".join(log))
            if not m.planned.on_remote:
                out.result(f"    ! {m.move.new[:7]} is on no branch or tag of {m.url}")
        for repo, alias, old in report.dropped_aliases:
            out.result(
                f"{repo}: drops hash_overwrite {alias!r}: it stands for {old[:7]} only, so the jobs that hashed it get "
                "new ids"
            )
        if report.unbuilt is not None:
            moving = ", ".join(m.move.repo for m in report.moves if m.move.kind != "none")
            # what can be said without the graph: the blast radius would count them
            out.result(f"Every job of set {report.name!r} that depends on {moving} will get a new id.")
            out.result(f"Blast radius: not computed ({report.unbuilt})")
        for line in waiting_lines(report.after) if report.after is not None else []:
            out.result(f"note: {line} (the blast radius counts what is built before)")
        for d in report.drift:
            reason = f" ({d.reason})" if d.reason else ""
            out.result(f"drift: output/{d.output}: {d.old or '(none)'} -> {d.new or '(none)'}{reason}")
        for value, where in report.alias_setters:
            out.result(
                f"problem: {where} sets hash_overwrite {value!r} itself: after the move it would hide the new commit"
            )
        if report.radius is not None:
            _show_blast_radius(out, report.name, report.radius)
        for problem in report.kept_ids:
            out.result(f"problem: {problem}")


def _show_changes(out: Output, set_name: str, move: Move, used: UsedChanges) -> None:
    """
    The number of the move's commits that change what the set uses, the newest of them, and the files used; of a
    move to unrelated history the dropped commits first (what the set loses), then the new ones.
    """
    if used.dropped is not None:
        _show_used(out, set_name, move.repo, used.dropped, "-")
    _show_used(out, set_name, move.repo, used, "-" if move.kind == "downgrade" else "+", paths=used.dropped is None)


def _show_used(out: Output, set_name: str, repo: str, used: UsedChanges, sign: str, paths: bool = True) -> None:
    """
    :param sign: ``-`` for commits the move drops, ``+`` for those it adds
    :param paths: name the files the set uses (``--verbose``) under the first line
    """
    noun = "dropped commit" if sign == "-" else "new commit"
    out.result(
        f"    {used.number} of the {count(used.commits, noun)} {'changes' if used.number == 1 else 'change'} what set "
        f"{set_name!r} uses of {repo} "
        f"({used.code.described})" + (":" if used.listed else "")
    )
    for path in used.code.paths if paths else ():
        out.detail(f"    uses {path}")
    for change in used.listed:
        files = ", ".join(change.files[:_FILES_SHOWN])
        files += f" +{len(change.files) - _FILES_SHOWN}" if len(change.files) > _FILES_SHOWN else ""
        out.result(capped(f"    {sign} {change.date} {change.commit} {change.subject}  ({files})"))
    if used.number > len(used.listed):
        out.result(f"    ... and {used.number - len(used.listed)} more that change it")


def _show_blast_radius(out: Output, set_name: str, radius: BlastRadius) -> None:
    """How much of the graph the move renews, what it costs, the outputs that change, and one line per cause."""
    show_radius(out, radius, "Blast radius", whose=f" of set {set_name!r}")
    out.result(f"Outputs that change: {listed(list(radius.changed)) if radius.changed else 'none'}")
    for cause in radius.causes:
        names = [name for name, _ in cause.outputs]
        which = names[0] if len(names) == 1 else f"{len(names)} outputs ({listed(names)})"
        out.result(capped(f"  {which}: {cause.cause}"))
        for difference in cause.first:
            out.result(capped(f"      {difference}"))
        if any(len(differences) > len(cause.first) for _, differences in cause.outputs):
            out.result("      ... (every difference of every output: --verbose)")
        for name, differences in cause.outputs:
            out.detail(f"    {name}: {'; '.join(differences) or cause.cause}")


def show_radius(
    out: Output, radius: BlastRadius, lead: str, whose: str = "", unused: str = "would no longer be used"
) -> None:
    """
    A blast radius and its price, as ``pin upgrade``, ``pin new --from`` and ``pin status --changes`` show it: its
    line (``LEAD: 3 of 5 jobs[WHOSE] get new ids; ...``), per job class what the finished jobs it leaves unused cost,
    then what the jobs that would run ask for, in all and per class.

    :param lead: what the radius is of (``Blast radius``, ``Moving set 'exp' to the heads``)
    :param whose: after "jobs" (`` of set 'exp'``)
    :param unused: what becomes of the finished jobs it renews
    """
    unused_jobs = count(radius.unused, "finished job")
    out.result(
        f"{lead}: {radius.renewed} of {radius.jobs} jobs{whose} get new ids; {radius.would_run} would run (not "
        f"finished in work/), {unused_jobs} {unused} ({radius.price.total.as_used(jobs=False)})."
    )
    _show_classes(out, radius.price, Cost.as_used)
    if radius.would_run:
        ask, their = ("asks", "its") if radius.would_run == 1 else ("ask", "their")
        out.result(
            f"The {count(radius.would_run, 'job')} that would run {ask} for ({their} tasks' time limits, as first "
            "submitted): " + radius.requested.total.as_requested(jobs=False)
        )
        _show_classes(out, radius.requested, Cost.as_requested)


def _show_classes(out: Output, price: Price, text: Callable[[Cost], str]) -> None:
    """Per job class what its jobs cost, the dearest first: the first few, the rest with ``--verbose``."""
    ranked = sorted(price.by_class.items(), key=lambda item: (-item[1].gpu_hours, -item[1].cpu_hours, item[0]))
    for shown, (name, cost) in enumerate(ranked):
        (out.result if shown < _CLASSES_SHOWN else out.detail)(f"    {name}: {text(cost)}")
    if len(ranked) > _CLASSES_SHOWN:
        out.result(f"    ... {count(len(ranked) - _CLASSES_SHOWN, 'more class')} (--verbose)")
