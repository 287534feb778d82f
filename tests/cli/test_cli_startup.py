"""``pin`` loads only the module of the command it runs (``pin status`` is timed as a command, start included)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from conftest import RECIPE_DIR
from sispin.cli import main as cli
from sispin.cli.commands import COMMANDS


@pytest.mark.parametrize("name,module", [(name, module) for name, (module, _) in COMMANDS.items()])
def test_each_command_comes_from_the_module_that_registers_it(name, module):
    parser = cli.build_parser([name])
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    assert list(commands.choices) == [name]
    assert commands.choices[name].get_default("run").__module__ == f"sispin.cli.{module}"


def _imported_by(argv: list, prefixes: tuple) -> tuple:
    """:return: (the modules with those prefixes that ``pin ARGV`` imported, what it printed), in a fresh process"""
    code = (
        "import json, sys\n"
        "from sispin.cli.main import main\n"
        f"main({argv!r})\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))"
    )
    environ = {**os.environ, "PYTHONPATH": str(RECIPE_DIR)}
    result = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.splitlines()[-1]), result.stdout


def test_a_command_imports_only_its_own_module():
    modules, _ = _imported_by(["status", "--help"], ("sispin.cli.", "tomlkit", "sispin.adopt."))
    assert modules == [
        "sispin.cli.commands",
        "sispin.cli.main",
        "sispin.cli.options",
        "sispin.cli.output",
        "sispin.cli.parser",
        "sispin.cli.progress",
        "sispin.cli.status",
    ]


def test_pin_help_lists_every_command_and_imports_none_of_them():
    modules, printed = _imported_by(["--help"], ("sispin.cli.", "git", "tomlkit", "filelock"))
    assert modules == [
        "sispin.cli.commands",
        "sispin.cli.main",
        "sispin.cli.options",
        "sispin.cli.output",
        "sispin.cli.parser",
        "sispin.cli.progress",
    ]
    for name, (_, line) in COMMANDS.items():
        assert f"    {name}" in printed and line[:40] in printed, name


def test_pin_status_reads_the_mirrors_without_gitpython_tomlkit_or_filelock(history, capsys):
    assert cli.main(["status", "--fetch"]) == 0  # the mirror, as after an earlier fetch
    capsys.readouterr()
    modules, printed = _imported_by(["status"], ("git", "tomlkit", "filelock"))
    assert modules == [] and f"demo   rc    {history.c[0][:7]}" in printed, (modules, printed)
