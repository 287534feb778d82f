"""
The command line of ``pin``, each option defined once (pip-tools' way): a command module declares itself with
:func:`add_command` and asks here for the arguments it shares with others, so that the same option has the same
name, spelling and help everywhere.
"""

from __future__ import annotations

__all__ = [
    "add_command",
    "set_names",
    "one_set",
    "json_output",
    "dry_run",
    "setup_relative",
    "commit_option",
    "commit_written",
    "check_commit",
    "as_of",
    "output_of",
]

import argparse
import datetime
import os
import re
from pathlib import Path, PurePath
from typing import Any, Callable, Sequence

from sispin.cli.commands import COMMANDS, EXAMPLES
from sispin.cli.output import NORMAL, QUIET, VERBOSE, Output
from sispin.errors import UsageError

#: what every command takes: how much it prints
_LEVELS = argparse.ArgumentParser(add_help=False)
_level = _LEVELS.add_mutually_exclusive_group()
_level.add_argument(
    "-q",
    "--quiet",
    dest="level",
    action="store_const",
    const=QUIET,
    default=NORMAL,
    help="print only results, problems and errors (no progress of clones and fetches, no narration)",
)
_level.add_argument(
    "-v", "--verbose", dest="level", action="store_const", const=VERBOSE, help="print every detail as well"
)


def add_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    run: Callable[[argparse.Namespace, Output], int],
    *,
    description: str,
) -> argparse.ArgumentParser:
    """
    Declare a ``pin`` subcommand with the options every command takes (``--quiet``, ``--verbose``).

    :param subparsers: the ``pin`` subcommand registry
    :param name: the command as typed
    :param run: ``run(args, out) -> exit code``
    :param description: the paragraph of ``pin NAME --help``
    :return: the command's parser, for its own arguments
    """
    parser = subparsers.add_parser(name, help=COMMANDS[name][1], description=description, parents=[_LEVELS])
    parser.examples = EXAMPLES[name]
    parser.set_defaults(run=run)
    return parser


def set_names(parser: argparse.ArgumentParser, verb: str) -> None:
    """``SET ...``: the sets a command works on, all of them when none is named."""
    parser.add_argument("sets", metavar="SET", nargs="*", help=f"sets to {verb} (default: all)")


def one_set(parser: argparse.ArgumentParser, help: str = "experiment set name ([sets.SET] in pin.toml)") -> None:
    """``SET``: the one set a command works on."""
    parser.add_argument("set", metavar="SET", help=help)


def json_output(parser: argparse.ArgumentParser, instead: str = "text") -> None:
    """``--json``: the result as JSON for scripts."""
    parser.add_argument("--json", action="store_true", help=f"print JSON for scripts instead of {instead}")


def as_of(parser: Any, help: str) -> None:
    """``--as-of MOMENT``: each repository's branch as it was at a time (UTC unless it says its offset)."""
    parser.add_argument(
        "--as-of",
        metavar="WHEN",
        type=_moment,
        help=f"{help}: the newest commit of the branch's own line committed by WHEN, YYYY-MM-DD (the end of that "
        "day) or YYYY-MM-DDTHH:MM[:SS], in UTC unless followed by an offset (+02:00)",
    )


def _moment(text: str) -> datetime.datetime:
    """:raises argparse.ArgumentTypeError: for anything but a date, or a date and time, with an optional offset"""
    if not _MOMENT_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM]")
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    if "T" not in text:
        moment = moment.replace(hour=23, minute=59, second=59)  # a day: all of it
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)
    try:
        moment.timestamp()
    except (OverflowError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is out of range") from None
    return moment


_MOMENT_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?)?")


def commit_option(parser: argparse.ArgumentParser) -> None:
    """``--commit``: commit what the command wrote (see :func:`commit_written`)."""
    parser.add_argument(
        "--commit",
        action="store_true",
        help="commit pin.toml and pin.snapshot.toml as this command leaves them, and nothing else (whatever else is "
        "staged stays staged), with a message saying what changed",
    )


def check_commit(args: argparse.Namespace) -> None:
    """
    Before a command with ``--commit`` writes anything: that it writes, and that the commit can be made.

    :raises UsageError: for a dry run
    :raises GitError: when there is no repository, or pin.toml or the snapshot hold changes not committed
    """
    from sispin.lock.loading import find_lockfile
    from sispin.ops.commit import check_committable_lock  # only --commit needs git here

    if getattr(args, "dry_run", False):
        raise UsageError("--commit: a dry run writes nothing to commit")
    check_committable_lock(find_lockfile())


def commit_written(lock: Path, summary: str, body: Sequence[str], out: Output, also: Sequence[Path] = ()) -> None:
    """
    Commit what the command wrote (:func:`sispin.ops.commit.commit_lock`), and say so.

    :param lock: the pin.toml
    :param summary: the message's first line
    :param body: the lines after it
    :param also: other files the command wrote (a starter config), committed with them
    :raises GitError: when there is no repository, or git refuses
    """
    from sispin.ops.commit import commit_lock

    sha = commit_lock(lock, summary, body, also)
    out.info(f"committed {sha[:7]}: {summary}" if sha else "--commit: nothing to commit (as committed already)")


def setup_relative(root: Path, given: str, option: str, must_exist: bool = False) -> str:
    """
    A path as the user typed it, relative to where they stand (or absolute), as pin.toml lists it: relative to the
    setup root. Symlinks are not resolved: ``config/x.py`` stays that, whatever it links to. Messages name the
    directory the path was taken relative to, as it was taken.

    :param root: the setup root
    :param given: the path on the command line
    :param option: the option it came with, for the message
    :param must_exist: whether a path that names no file is an error (``--add``) or may be (``--remove``)
    :raises UsageError: for a path outside the setup, or one that must exist and does not
    """
    here = os.getcwd()
    relative = os.path.relpath(os.path.normpath(os.path.join(here, given)), root)
    taken = f"paths are relative to the directory you are in, {here}"
    if relative == os.curdir or relative == os.pardir or relative.startswith(os.pardir + os.sep):
        raise UsageError(f"{option} {given}: not inside the setup {root} ({taken})")
    if must_exist and not os.path.lexists(os.path.join(here, given)):
        raise UsageError(f"{option} {given}: no such file ({taken})")
    return PurePath(relative).as_posix()


def dry_run(parser: argparse.ArgumentParser, help: str) -> None:
    """``--dry-run``: show, change nothing."""
    parser.add_argument("--dry-run", action="store_true", help=help)


def output_of(args: Any) -> Output:
    """:return: the output layer at the level the command line asked for"""
    return Output(getattr(args, "level", NORMAL))
