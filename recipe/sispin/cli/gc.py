"""``pin gc [--dry-run]``: the command line of :mod:`sispin.ops.gc`, and its report (a line per checkout)."""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command, dry_run
from sispin.cli.output import Output
from sispin.errors import StoreError
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile
from sispin.ops.gc import GcResult, gc
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
    return render(gc(find_lockfile(), Store(), dry_run=args.dry_run), out)


def render(result: GcResult, out: Output) -> int:
    """
    :param result: what ``pin gc`` removed (or would remove), kept and forgot
    :param out: a line per lockfile forgotten and per checkout, and the sum
    :return: exit code (0)
    :raises StoreError: after the report, when a checkout could not be removed
    """
    swept, dry_run = result.sweep, result.dry_run
    for gone in swept.gone:
        out.result(f"{'would forget' if dry_run else 'forgot'}  {gone}  (no longer exists)")
    for checkout, pins in swept.kept.items():
        repository, commit = checkout.parent.parent.name, checkout.parent.name
        out.result(f"kept  {result.name_of(repository)}  {commit[:7]}  {checkout}  ({'; '.join(pins)})")
    for removal in swept.removed:
        verb = "would remove" if dry_run else "removed" if removal.error is None else "FAILED"
        size = _size(removal.freed) + (f" (+{_size(removal.shared)} shared)" if removal.shared else "")
        line = f"{verb}  {result.name_of(removal.repository)}  {removal.commit[:7]}  {removal.path}  {size}"
        out.result(line + (f": {removal.error}" if removal.error else ""))
    done = len(swept.removed) - len(result.failed)
    summary = f"{_size(result.freed)} ({result.freed} bytes) in {count(done, 'checkout')}"
    kept = f"kept {count(len(swept.kept), 'checkout')} pinned by {count(len(swept.users), 'lockfile')}"
    if dry_run:
        out.result(f"pin gc: dry run: would free {summary}; {kept}; nothing changed")
    else:
        out.result(f"pin gc: freed {summary}; {kept}")
    if result.failed:
        raise StoreError(f"{count(len(result.failed), 'checkout')} in {result.store} could not be removed (see above)")
    return 0


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
