"""
The parser of ``pin`` and of each command: argparse, but a bad command line is one line on stderr like every other
error (exit 2), and a command's help ends with its examples.
"""

from __future__ import annotations

__all__ = ["CommandLineParser", "subcommands"]

import argparse
from typing import Dict, Sequence, Tuple


class CommandLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr like every other error (exit 2), and a command's help
    ends with its examples."""

    #: (command line, what it does) pairs shown under "examples:" (:data:`sispin.cli.commands.EXAMPLES`)
    examples: Sequence[Tuple[str, str]] = ()

    def error(self, message: str):  # type: ignore[override]
        # "pin upgrade: ..." names the subcommand; the top-level parser's prog is "pin" itself, said once
        where = f"{self.prog}: " if self.prog != "pin" else ""
        self.exit(2, f"pin: error: {where}{message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        if not self.examples:
            return super().format_help()
        width = max(len(line) for line, _ in self.examples)
        shown = "".join(f"  {line:<{width}}  # {what}\n" for line, what in self.examples)
        return f"{super().format_help()}\nexamples:\n{shown}"


def subcommands(parser: argparse.ArgumentParser) -> Dict[str, argparse.ArgumentParser]:
    """:return: the subcommand parsers of ``pin``'s parser, by name"""
    action = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return action.choices
