"""
``pin explain [SET ...] [--output NAME] [--json]``: why each registered output's job id differs from the snapshot.

For every output whose id moved, the chain from the output's job down to the root causes, the deepest jobs whose
own hashed arguments changed, and for each the argument paths with old -> new values; computed from the live graph
and pin.snapshot.toml alone, so it works where the old configs are gone (CI).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "explain", "explanation_lines"]

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from sispin.cli.options import add_command, json_output, set_names
from sispin.cli.output import VERBOSE, Output
from sispin.errors import UnknownNameError
from sispin.graph.against import graph_at_revision
from sispin.graph.build import load_graph
from sispin.graph.explain import Explanation, cause_key, explain_output, pin_moved, short_id, shown
from sispin.graph.guard import capped, listed
from sispin.graph.probe.schema import JobRecord, RecordedOutput
from sispin.graph.recordcache import read_records
from sispin.graph.snapshot import read_snapshot
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import Lockfile, find_lockfile, load_lockfile
from sispin.text import count, display_path


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
    return explain(find_lockfile(), args.sets, out, output=args.output, as_json=args.json, against=args.against)


def explain(
    path: Path,
    set_names: Sequence[str],
    out: Output,
    *,
    output: Optional[str],
    as_json: bool,
    against: Optional[str] = None,
) -> int:
    """
    :param path: the pin.toml
    :param set_names: sets to explain; empty for all
    :param out: the explanations (or JSON)
    :param output: only this output
    :param as_json: print JSON instead of text
    :param against: a revision of the setup's git repository to compare with, instead of the snapshot
    :return: 0 when every output has its recorded id (the id at the revision), else 1
    """
    lockfile = load_lockfile(path)
    names = [spec.name for spec in lockfile.select_sets(set_names)]
    recorded = read_snapshot(snapshot_path(lockfile.path))
    found = output is None
    report: List[Dict[str, Any]] = []
    lines: List[str] = []
    # outputs with the same root causes (the same arguments, old -> new, in jobs of the same classes) are said once
    shapes: Dict[Tuple[str, ...], List[List[str]]] = {}
    same_way: Dict[Tuple[str, ...], List[str]] = {}
    known: Set[str] = set()
    for name in names:
        old_outputs, records = _before(lockfile, name, recorded, against)
        graph = load_graph(lockfile, name, records={o: output.job for o, output in old_outputs.items()} or None)
        known.update(old_outputs, graph.outputs)
        for output_name in sorted(set(old_outputs) | set(graph.outputs)):
            # as explain and check print it, or as registered (Sisyphus puts it under output/)
            if output is not None and output not in (output_name, f"output/{output_name}"):
                continue
            found = True
            old = old_outputs[output_name].job if output_name in old_outputs else None
            new = graph.outputs[output_name].job if output_name in graph.outputs else None
            if old == new:
                continue
            explanation = explain_output(output_name, old, new, records, graph.records)
            report.append({"set": name, **_as_json(explanation, lockfile, name, graph.records)})
            every = out.level >= VERBOSE
            text = explanation_lines(explanation, lockfile, name, graph.records, snapshot_name(lockfile), every)
            shape = (name, *_shape(explanation))
            shapes.setdefault(shape, []).append(text)
            same_way.setdefault(shape, []).append(output_name)
    for shape, texts in shapes.items():
        lines += _grouped(texts, same_way[shape], every=out.level >= VERBOSE)
    if not found:
        _no_such_output(output, names, known)
    if as_json:
        out.json(report)
    else:
        baseline = f"it had at {against}" if against else f"recorded in {snapshot_name(lockfile)}"
        for line in lines or [f"every output has the job id {baseline}"]:
            out.result(line)
    return 1 if report else 0


def _no_such_output(output: Optional[str], names: List[str], known: Set[str]) -> None:
    """:raises UnknownNameError: naming the outputs the sets do register"""
    raise UnknownNameError(
        f"no registered output {output!r} in set(s) {', '.join(names)} (they register: {listed(sorted(known))})"
    )


def _before(
    lockfile: Lockfile, set_name: str, recorded: Mapping[str, Mapping[str, RecordedOutput]], against: Optional[str]
) -> Tuple[Mapping[str, RecordedOutput], Mapping[str, JobRecord]]:
    """:return: the set's outputs and job records to compare with: the snapshot's, or the revision's build"""
    if against is None:
        old_outputs = recorded.get(set_name, {})
        return old_outputs, read_records(lockfile.path, set_name, old_outputs) or {}
    old = graph_at_revision(lockfile, set_name, against)
    return ({}, {}) if old is None else (old.outputs, old.records)


#: the differing arguments of one root cause shown before the rest are counted (all of them with --verbose)
_LISTED_DIFFERENCES = 5


def snapshot_name(lockfile: Lockfile) -> str:
    """:return: the snapshot file as messages name it"""
    return display_path(snapshot_path(lockfile.path))


def explanation_lines(
    explanation: Explanation,
    lockfile: Lockfile,
    set_name: str,
    records: Mapping[str, JobRecord],
    snapshot: str,
    every: bool = True,
) -> List[str]:
    """
    :param every: every differing argument of a root cause (else the first few, and how many more)
    :return: the explanation as text: a headline per output, then per root cause the chain and the differences
    """
    old, new = explanation.old, explanation.new
    if old is None:
        return [f"output/{explanation.output}  (none) -> {new}  (new output: run `pin snapshot` to record it)"]
    if new is None:
        return [f"output/{explanation.output}  {old} -> (none)  (no longer registered)"]
    lines = [f"output/{explanation.output}  {old} -> {_new_id(old, new)}"]
    for cause in explanation.causes:
        # the chain below the output's job: each job reached through an argument of the one above it
        below = [(step_old, step_new) for _, step_old, step_new in cause.via[1:]] + [(cause.old, cause.new)]
        for (argument, _, _), (step_old, step_new) in zip(cause.via, below):
            lines.append(f"  via      {argument}: {short_id(step_old)} -> {_new_id(step_old, step_new)}")
        moved = pin_moved(cause, lockfile, set_name, records)
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


def _shape(explanation: Explanation) -> Tuple[Any, ...]:
    """
    :return: what outputs changed for the same reasons share: their root causes (each job's class and every argument
        that differs, old -> new), whatever chain of jobs leads an output to them
    """
    if explanation.old is None or explanation.new is None:
        return (explanation.output,)  # new or gone: each is its own
    return tuple(sorted({cause_key(cause) for cause in explanation.causes}))


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


def _as_json(
    explanation: Explanation, lockfile: Lockfile, set_name: str, records: Mapping[str, JobRecord]
) -> Dict[str, Any]:
    data = asdict(explanation)
    for cause, record in zip(explanation.causes, data["causes"]):
        record["pin_moved"] = pin_moved(cause, lockfile, set_name, records)
    return data
