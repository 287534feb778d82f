"""
``pin gc [--dry-run]``: remove the store checkouts that no lockfile the store serves pins, and say how much disk
that frees (see :mod:`sispin.git.gc`).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "gc"]

import argparse
from pathlib import Path

from sispin.cli.options import add_command, dry_run
from sispin.cli.output import Output
from sispin.errors import StoreError
from sispin.git.gc import sweep
from sispin.git.store import Store
from sispin.lock.lockfile import find_lockfile, load_lockfile
from sispin.text import count


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "gc",
        run,
        description="Remove every checkout in the store that no set pins, in this pin.toml or in any other "
        "lockfile the store serves (each setup records its pin.toml in the store when it makes a checkout there); "
        "forget recorded lockfiles that no longer exist; report the disk space freed. Each checkout is removed "
        "under the store's lock for it. Mirrors are kept. Exit 10 when a checkout cannot be removed.",
    )
    dry_run(parser, "only report what would be removed and freed")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return gc(find_lockfile(), Store(), out, dry_run=args.dry_run)


def gc(path: Path, store: Store, out: Output, *, dry_run: bool) -> int:
    """
    :param path: the pin.toml of the setup running gc
    :param store: the store to clean
    :param out: where the report goes
    :param dry_run: change nothing, only report
    :return: exit code (0)
    :raises StoreError: after the report, when a checkout could not be removed
    """
    result = sweep(store, load_lockfile(path), dry_run=dry_run)
    for gone in result.gone:
        out.result(f"{'would forget' if dry_run else 'forgot'}  {gone}  (no longer exists)")
    for checkout, pins in result.kept.items():
        repository, commit = checkout.parent.parent.name, checkout.parent.name
        out.result(f"kept  {_name(result.names, repository)}  {commit[:7]}  {checkout}  ({'; '.join(pins)})")
    freed = failed = 0
    for removal in result.removed:
        verb = "would remove" if dry_run else "removed" if removal.error is None else "FAILED"
        size = _size(removal.freed) + (f" (+{_size(removal.shared)} shared)" if removal.shared else "")
        line = f"{verb}  {_name(result.names, removal.repository)}  {removal.commit[:7]}  {removal.path}  {size}"
        out.result(line + (f": {removal.error}" if removal.error else ""))
        if removal.error is None:
            freed += removal.freed
        else:
            failed += 1
    done = len(result.removed) - failed
    summary = f"{_size(freed)} ({freed} bytes) in {count(done, 'checkout')}"
    kept = f"kept {count(len(result.kept), 'checkout')} pinned by {count(len(result.users), 'lockfile')}"
    if dry_run:
        out.result(f"pin gc: dry run: would free {summary}; {kept}; nothing changed")
    else:
        out.result(f"pin gc: freed {summary}; {kept}")
    if failed:
        raise StoreError(f"{count(failed, 'checkout')} in {store.directory} could not be removed (see above)")
    return 0


def _name(names: dict, repository: str) -> str:
    # a repository no lockfile declares any more is named by its store directory, less the hash of its URL
    return names.get(repository) or repository.rsplit("-", 1)[0]


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
