"""
``pin explain [SET ...] [--output NAME] [--against REV] [--json]``: the command line of :mod:`sispin.ops.explain`,
and its report: per output whose id moved, the chain down to the root causes and the arguments that differ.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render", "explanation_lines"]

import argparse
from typing import Any, Dict, List, Optional, Sequence, Tuple

from sispin.cli.options import add_command, json_output, set_names
from sispin.cli.output import VERBOSE, Output
from sispin.graph.explain import Explanation, short_id, shown
from sispin.lock.loading import find_lockfile
from sispin.ops.explain import ExplainedOutput, ExplainResult, explain
from sispin.text import capped, count, listed


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "explain",
        run,
        description="For every registered output whose job id differs from pin.snapshot.toml, show the chain from "
        "the output down to the root causes (the deepest jobs whose own arguments changed) and the argument paths "
        "that differ, old -> new. Works from the snapshot alone. Exit 1 when some output differs.",
    )
    set_names(parser, "explain")
    parser.add_argument("--output", metavar="NAME", help="explain this registered output only")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="compare with the set as the setup's git history had it at REV (HEAD, HEAD~3, a tag...), built again "
        "from the files of that commit, instead of with pin.snapshot.toml",
    )
    json_output(parser)
    parser.set_defaults(trailing="sets")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    result = explain(find_lockfile(), args.sets, output=args.output, against=args.against)
    return render(result, out, as_json=args.json)


def render(result: ExplainResult, out: Output, as_json: bool) -> int:
    """
    :param result: what ``pin explain`` found
    :param out: the explanations, outputs with the same root causes said once (each with ``--verbose``)
    :param as_json: print JSON instead of text
    :return: 0 when every output has its recorded id (the id at the revision), else 1
    """
    every = out.level >= VERBOSE
    if as_json:
        out.json([explained.to_json() for explained in result.outputs])
        return 1 if result.outputs else 0
    shapes: Dict[Tuple[Any, ...], List[ExplainedOutput]] = {}
    for explained in result.outputs:
        shapes.setdefault(explained.shape, []).append(explained)
    lines = []
    for group in shapes.values():
        texts = [explanation_lines(e.explanation, e.pins_moved, every) for e in group]
        lines += _grouped(texts, [e.explanation.output for e in group], every)
    for line in lines or [f"every output has the job id {result.baseline}"]:
        out.result(line)
    return 1 if result.outputs else 0


#: the differing arguments of one root cause shown before the rest are counted (all of them with --verbose)
_LISTED_DIFFERENCES = 5


def explanation_lines(explanation: Explanation, pins_moved: Sequence[Optional[str]], every: bool = True) -> List[str]:
    """
    :param explanation: why an output's job id moved
    :param pins_moved: per root cause, the pin whose move it is, or None
    :param every: every differing argument of a root cause (else the first few, and how many more)
    :return: the explanation as text: a headline per output, then per root cause the chain and the differences
    """
    old, new = explanation.old, explanation.new
    if old is None:
        return [f"output/{explanation.output}  (none) -> {new}  (new output: run `pin snapshot` to record it)"]
    if new is None:
        return [f"output/{explanation.output}  {old} -> (none)  (no longer registered)"]
    lines = [f"output/{explanation.output}  {old} -> {_new_id(old, new)}"]
    for cause, moved in zip(explanation.causes, pins_moved):
        # the chain below the output's job: each job reached through an argument of the one above it
        below = [(step_old, step_new) for _, step_old, step_new in cause.via[1:]] + [(cause.old, cause.new)]
        for (argument, _, _), (step_old, step_new) in zip(cause.via, below):
            lines.append(f"  via      {argument}: {short_id(step_old)} -> {_new_id(step_old, step_new)}")
        shown_here = cause.differences if every else cause.differences[:_LISTED_DIFFERENCES]
        for difference in shown_here:
            note = f"   (pin moved: {moved})" if moved else ""
            lines.append(f"  because  {difference.path}: {shown(difference.old)} -> {shown(difference.new)}{note}")
        if len(shown_here) < len(cause.differences):
            more = len(cause.differences) - len(shown_here)
            lines.append(f"  because  ... and {count(more, 'more argument')} of this job (--verbose lists them)")
        if cause.reason:
            lines.append(f"  because  {cause.reason}")
        if cause.custom_hash:
            lines.append(
                f"  note     {short_id(cause.new).rsplit('.', 1)[0]} defines its own hash(): these are its arguments, "
                "what it hashes may differ"
            )
    return lines


def _grouped(texts: List[List[str]], outputs: List[str], every: bool) -> List[str]:
    """:return: one explanation for outputs with the same root causes (the first in full), or each (--verbose)"""
    if every or len(texts) == 1:
        return [line for text in texts for line in text]
    return [
        capped(f"{len(outputs)} outputs changed for the same root causes: {listed(outputs)} (each: --verbose)"),
        *texts[0],
    ]


def _new_id(old: str, new: str) -> str:
    """The new id after ``old ->``: its hash alone when only that changed, else whole (a moved class, its module)."""
    return "." + new.rsplit(".", 1)[-1] if old.rsplit(".", 1)[0] == new.rsplit(".", 1)[0] else new
