"""
Entry point of the ``pin`` command.

Exit codes are listed in the epilog of ``pin --help`` (from :data:`sispin.errors.EXIT_CODES`) and in docs/commands.md;
each PinError subclass carries its own.
"""

from __future__ import annotations

__all__ = ["build_parser", "command_parser", "main"]

import argparse
import importlib
import sys
from typing import List, Optional, Sequence

from sispin import __version__
from sispin.cli.commands import COMMANDS, PASSES_ON
from sispin.cli.options import check_commit, output_of
from sispin.cli.output import Output
from sispin.cli.parser import CommandLineParser, subcommands
from sispin.cli.progress import TerminalProgress
from sispin.errors import EXIT_CODES, FileSystemError, LockfileError, PinError, UsageError
from sispin.git.process import progress_to
from sispin.git.versions import SUPPORTED_RANGE
from sispin.lock.urls import redact_text
from sispin.text import did_you_mean, visible

#: the exit codes that are no PinError's
INTERNAL_ERROR, INTERRUPTED = 70, 130

_EPILOG = (
    "exit codes:\n"
    + "".join(f"  {code:>3}  {meaning}\n" for code, meaning in EXIT_CODES.items())
    + "The lockfile is $PIN_LOCK if set, else the nearest pin.toml in the working directory or above.\n"
    + f"Supported in the setup: {SUPPORTED_RANGE}, on Python 3.9 to 3.13."
)


def command_parser(name: str) -> argparse.ArgumentParser:
    """
    :param name: a command of :data:`~sispin.cli.commands.COMMANDS`
    :return: the parser of ``pin NAME`` (what ``pin help NAME`` shows)
    """
    return subcommands(build_parser([name]))[name]


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """
    :param argv: the command line to be parsed
    :return: the parser of ``pin`` with the subcommand argv names (every subcommand listed, none of their modules
        imported, when it names none it knows)
    """
    named = next((word for word in argv if not word.startswith("-")), None)
    parser = CommandLineParser(
        prog="pin",
        description="Pin the recipe repositories of Sisyphus experiment sets (pin.toml).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if named in COMMANDS:
        importlib.import_module(f"sispin.cli.{COMMANDS[named][0]}").add_parser(subparsers)
    else:  # `pin --help`, or a command it does not know: the list is all that is needed
        for name, (_, line) in COMMANDS.items():
            subparsers.add_parser(name, help=line)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """
    Run ``pin``.

    :param argv: arguments without the program name (default: sys.argv[1:])
    :return: the process exit code
    """
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    if not [word for word in argv if word != "--debug"]:
        # bare `pin`, as git and uv answer it: the overview, and the exit of a command line that asked for nothing
        parser.print_help()
        return UsageError.exit_code
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # --help, --version and command-line errors (already printed)
        return int(exc.code or 0)
    out = output_of(args)
    # progress only where somebody watches it: not in a pipe, a log file or CI
    shown = not out.quiet and sys.stderr.isatty()
    try:
        _repair_after_a_kill(out)
        if getattr(args, "commit", False):
            check_commit(args)  # before anything is written
        with progress_to(TerminalProgress(sys.stderr) if shown else None):
            return int(args.run(args, out))
    except PinError as exc:
        if args.debug and exc.details:
            print(exc.details.rstrip(), file=sys.stderr)  # e.g. the failing config's own traceback
        elif args.debug:
            raise
        out.error(_one_line(str(exc)))
        return exc.exit_code
    except OSError as exc:
        # the file system refused (permissions, a file where a directory belongs, a full disk): the environment's
        # fault, not sispin's; commands turn the cases they can explain into FileSystemErrors, this catches the rest
        if args.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        out.error(_one_line(where + (exc.strerror or str(exc))))
        return FileSystemError.exit_code
    except KeyboardInterrupt:
        print("pin: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # a bug or an unforeseen fault: still one line, the traceback on request
        if args.debug:
            raise
        print(
            visible(
                f"pin: internal error: {type(exc).__name__}: {_one_line(str(exc))} (pin --debug shows the traceback)"
            ),
            file=sys.stderr,
        )
        return INTERNAL_ERROR


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """:raises SystemExit: for --help, --version and a bad command line (said in one line)"""
    named = next((word for word in argv if not word.startswith("-")), None)
    if named is not None and named not in COMMANDS:
        parser.error(f"{named!r} is not a pin command{did_you_mean(named, COMMANDS)}")
    passed_on: List[str] = []
    if named in PASSES_ON and "--" in argv:
        cut = list(argv).index("--")
        argv, passed_on = argv[:cut], list(argv[cut + 1 :])
    args = _parse_words(parser, argv)
    if named in PASSES_ON:
        args.passed_on = passed_on
    return args


def _parse_words(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    for word in argv:
        # argparse turns `--to=--` into an empty list instead of the value "--" or an error
        option, equals, value = word.partition("=")
        if option.startswith("--") and equals and value == "--":
            parser.error(f"argument {option}: expected a value, not '--'")
    args, extras = parser.parse_known_args(argv)
    # argparse gives a trailing "REPO ..." positional nothing once an option came between (`upgrade demo --to v1
    # rc`); commands that take such a list name it in `trailing`, and the words after options join it
    trailing = getattr(args, "trailing", None)
    if extras and trailing and not any(word.startswith("-") for word in extras):
        getattr(args, trailing).extend(extras)
    elif extras:
        command = subcommands(parser)[args.command]
        option = extras[0].partition("=")[0]
        command.error(
            f"unrecognized arguments: {' '.join(extras)}{did_you_mean(option, command._option_string_actions)}"
        )
    return args


def _repair_after_a_kill(out: Output) -> None:
    """Before any command: finish what a killed command left half done beside the lockfile (when there is one)."""
    from sispin.lock.files import interrupted
    from sispin.lock.loading import find_lockfile

    try:
        path = find_lockfile()
    except LockfileError:
        return  # the command says so, if it needs one
    if not interrupted(path):
        return  # the repair (tomlkit, filelock, the graph package) is loaded only when there is one to make
    from sispin.graph.snapshot import complete_interrupted

    note = complete_interrupted(path)
    if note:
        out.note(note)


def _one_line(message: str) -> str:
    """An error message as one line, with anything that looks like a credential masked."""
    return redact_text(" ".join(message.splitlines()))
