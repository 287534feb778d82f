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
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from sispin import git
from sispin.errors import LockfileError, PinError
from sispin.graph import load_graph
from sispin.guard import off_lock_problems, overwrite_problems
from sispin.lockfile import Lockfile, display_path, find_lockfile, load_lockfile
from sispin.snapshot import compare_outputs, read_snapshot, snapshot_path
from sispin.store import Store


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
    parser.add_argument(
        "--lock-only",
        action="store_true",
        help="only validate pin.toml and pin.snapshot.toml: no git, no Sisyphus (fast: a pre-commit hook)",
    )
    parser.set_defaults(run=run, trailing="sets")


def run(args: argparse.Namespace) -> int:
    """:param args: parsed command line"""
    return check(find_lockfile(), args.sets, offline=args.offline, store=Store(), lock_only=args.lock_only)


def check(path: Path, set_names: Sequence[str], *, offline: bool, store: Store, lock_only: bool = False) -> int:
    """
    :param path: the pin.toml
    :param set_names: sets to check; empty for all
    :param offline: skip verifying that pinned commits exist in their remotes
    :param store: where the mirrors are (fetched unless offline)
    :param lock_only: only validate the lockfile and the snapshot (invalid: exit 3)
    :return: 0 when nothing is wrong, else 1 (3 when pin.toml itself is invalid)
    """
    try:
        lockfile = load_lockfile(path)
    except LockfileError as exc:
        print(f"problem: {exc}")
        print("pin check: 1 problem")
        return exc.exit_code
    names = [spec.name for spec in lockfile.select_sets(set_names)]
    if lock_only:
        read_snapshot(snapshot_path(lockfile.path))
        print(f"pin check: lock ok ({len(names)} set{'s' if len(names) != 1 else ''}; the job graphs were not checked)")
        return 0
    problems = [] if offline else _missing_commits(lockfile, names, store)
    recorded = read_snapshot(snapshot_path(lockfile.path))
    outputs = 0
    for name in names:
        try:
            graph = load_graph(lockfile, name)
        except PinError as exc:
            problems.append(f"sets.{name}: {exc}")
            continue
        outputs += len(graph.outputs)
        problems += off_lock_problems(lockfile, graph) + overwrite_problems(lockfile, graph)
        if name not in recorded:
            problems.append(
                f"sets.{name}: no snapshot in {display_path(snapshot_path(lockfile.path))} (run `pin snapshot {name}`)"
            )
        else:
            problems += [f"sets.{name}: {line}" for line in compare_outputs(recorded[name], graph.outputs)]
    for problem in problems:
        print(f"problem: {problem}")
    if problems:
        print(f"pin check: {len(problems)} problem{'s' if len(problems) != 1 else ''}")
        return 1
    print(f"pin check: ok ({len(names)} set{'s' if len(names) != 1 else ''}, {outputs} outputs)")
    return 0


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
        missing = set(git.missing_commits(mirror, sorted({commit for _, commit in pins})))
        for key, commit in pins:
            if commit in missing:
                problems.append(f"{key}: commit {commit} does not exist in {url}, nor in the store")
            elif not git.on_a_ref(mirror, commit):
                problems.append(
                    f"{key}: commit {commit} is on no branch or tag of {url} any more (force-pushed away?); "
                    f"the store still has it in {mirror}"
                )
    return problems
