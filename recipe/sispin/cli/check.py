"""
``pin check [SET ...] [--offline]``: everything that must hold for a set's hashes to be trustworthy, for CI.

Lists every problem, one line each, and exits 1 when there is any: an invalid lockfile, a pinned commit that no
longer exists, a CloneGitRepositoryJob of a locked repository at another commit (or following a branch), a clone
output (or a copy of it that a job hashes) with hash_overwrite set, and each output whose job id differs from
pin.snapshot.toml.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "check"]

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from sispin.cli.snapshot import skipped_line
from sispin.errors import LockfileError, PinError
from sispin.git.env import missing_commits
from sispin.git.history import on_a_ref
from sispin.git.store import Store
from sispin.graph.build import load_graph
from sispin.graph.explain import SetChanges, compare_set
from sispin.graph.guard import hidden_commit_problems, off_lock_problems
from sispin.graph.snapshot import read_records, read_snapshot, snapshot_path
from sispin.lock.lockfile import Lockfile, display_path, find_lockfile, load_lockfile


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = subparsers.add_parser(
        "check",
        help="verify the lock, the pinned commits, the job graphs and the snapshot (for CI)",
        description="Check that pin.toml is valid, every pinned commit exists (skipped with --offline), each "
        "set's job graph (built by real Sisyphus) clones locked repositories only at the pinned commit and never "
        "with hash_overwrite, and every registered output still has the job id recorded in pin.snapshot.toml. "
        "Prints every problem and exits 1 when there is one.",
    )
    parser.add_argument("sets", metavar="SET", nargs="*", help="sets to check (default: all)")
    parser.add_argument("--offline", action="store_true", help="do not contact remotes to verify the commits")
    parser.add_argument("--verbose", action="store_true", help="list every changed output with its old and new id")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    parser.add_argument(
        "--lock-only",
        action="store_true",
        help="only validate pin.toml and pin.snapshot.toml: no git, no Sisyphus (fast: a pre-commit hook)",
    )
    parser.set_defaults(run=run, trailing="sets")


def run(args: argparse.Namespace) -> int:
    """:param args: parsed command line"""
    return check(
        find_lockfile(),
        args.sets,
        offline=args.offline,
        store=Store(),
        verbose=args.verbose,
        as_json=args.json,
        lock_only=args.lock_only,
    )


def check(
    path: Path,
    set_names: Sequence[str],
    *,
    offline: bool,
    store: Store,
    verbose: bool = False,
    as_json: bool = False,
    lock_only: bool = False,
) -> int:
    """
    :param path: the pin.toml
    :param set_names: sets to check; empty for all
    :param offline: skip verifying that pinned commits exist in their remotes
    :param store: where the mirrors are (fetched unless offline)
    :param verbose: list every changed output with its ids, not only a few per root cause
    :param as_json: print JSON instead of text
    :param lock_only: only validate the lockfile and the snapshot (invalid: exit 3)
    :return: 0 when nothing is wrong, else 1 (3 when pin.toml itself is invalid)
    """
    try:
        lockfile = load_lockfile(path)
    except LockfileError as exc:
        print(json.dumps({"problems": [str(exc)]}) if as_json else f"problem: {exc}\npin check: 1 problem")
        return exc.exit_code
    specs = lockfile.select_sets(set_names)
    names = [spec.name for spec in specs]
    if lock_only:
        read_snapshot(snapshot_path(lockfile.path))
        print(f"pin check: lock ok ({len(names)} set{'s' if len(names) != 1 else ''}; the job graphs were not checked)")
        return 0
    problems = [] if offline else _missing_commits(lockfile, names, store)
    target = snapshot_path(lockfile.path)
    recorded = read_snapshot(target)
    records = read_records(target)
    problems += [
        f"{display_path(target)}: sets.{name}: no such set in {display_path(lockfile.path)} (stale: `pin snapshot` "
        "drops it)"
        for name in sorted(recorded)
        if name not in lockfile.sets
    ]
    outputs = 0
    summaries: List[str] = []
    report: Dict[str, Any] = {"sets": {}, "skipped": [spec.name for spec in specs if not spec.configs]}
    for name in names:
        if name in report["skipped"]:
            continue  # no configs: nothing builds a graph to check (its pins were verified above)
        try:
            graph = load_graph(lockfile, name)
        except PinError as exc:
            problems.append(f"sets.{name}: {exc}")
            continue
        outputs += len(graph.outputs)
        problems += off_lock_problems(lockfile, graph) + hidden_commit_problems(lockfile, graph)
        if name not in recorded:
            problems.append(f"sets.{name}: no snapshot in {display_path(target)} (run `pin snapshot {name}`)")
            continue
        changes = compare_set(recorded[name], records.get(name, {}), graph, lockfile.root / "work")
        report["sets"][name] = asdict(changes)
        if changes.changed:
            summaries.append(
                f"sets.{name}: {_count(len(changes.changed), 'output')} changed, {_count(changes.renewed, 'job')} "
                f"renewed ({changes.finished} finished in work/)"
            )
        problems += [f"sets.{name}: {line}" for line in _change_lines(changes, verbose)]
    if as_json:
        print(json.dumps({**report, "problems": problems}, indent=2))
        return 1 if problems else 0
    for name in report["skipped"]:
        print(skipped_line(name))
    for line in summaries:
        print(f"summary: {line}")
    for problem in problems:
        print(f"problem: {problem}")
    if problems:
        print(f"pin check: {_count(len(problems), 'problem')}")
        return 1
    checked = len(names) - len(report["skipped"])
    skipped = f", {len(report['skipped'])} skipped" if report["skipped"] else ""
    print(f"pin check: ok ({_count(checked, 'set')}, {outputs} outputs{skipped})")
    return 0


#: outputs named per root cause before the rest are counted (all of them with --verbose)
_LISTED_OUTPUTS = 5


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def _change_lines(changes: SetChanges, verbose: bool) -> List[str]:
    """One problem per root cause with the outputs it renews; new, gone and moved outputs; sorted."""
    lines = []
    for group in changes.groups:
        names = [name for name, _, _ in group.outputs]
        shown = names if verbose else names[:_LISTED_OUTPUTS]
        rest = f" and {len(names) - len(shown)} more (--verbose lists them)" if len(names) > len(shown) else ""
        lines.append(f"{_count(len(names), 'output')} changed {group.cause}: {', '.join(shown)}{rest}")
        if verbose:
            lines += [f"    output/{name}: {old} -> {new}" for name, old, new in group.outputs]
    if changes.new:
        lines.append(f"new outputs not in the snapshot (run `pin snapshot` to record them): {', '.join(changes.new)}")
    if changes.gone:
        lines.append(f"outputs no longer registered: {', '.join(changes.gone)}")
    lines += [f"output/{name}: same job, other file: {old} -> {new}" for name, old, new in changes.moved_paths]
    return lines


def _missing_commits(lockfile: Lockfile, names: Sequence[str], store: Store) -> List[str]:
    wanted: Dict[str, List[Tuple[str, str]]] = {}
    for name in names:
        for repo, pin in lockfile.get_set(name).pins.items():
            wanted.setdefault(lockfile.get_repo(repo).url, []).append((f"sets.{name}.{repo}", pin.commit))
    for entry in lockfile.setup.values():
        wanted.setdefault(entry.url, []).append((f"setup.{entry.name}", entry.commit))
    problems = []
    for url, pins in wanted.items():
        try:
            mirror = store.fetch(url)
        except PinError as exc:
            problems += [f"{key}: {exc}" for key, _ in pins]
            continue
        missing = set(missing_commits(mirror, sorted({commit for _, commit in pins})))
        for key, commit in pins:
            if commit in missing:
                problems.append(f"{key}: commit {commit} does not exist in {url}, nor in the store")
            elif not on_a_ref(mirror, commit):
                problems.append(
                    f"{key}: commit {commit} is on no branch or tag of {url} any more (force-pushed away?); "
                    f"the store still has it in {mirror}"
                )
    return problems
