"""
``pin`` has the manners of git, uv and cargo: bare ``pin`` shows the overview, ``pin help CMD`` a command's help,
a misspelt command, option, set or repository gets "did you mean", and each command's help ends with examples.
"""

from __future__ import annotations

import pytest

from sispin.cli.commands import COMMANDS, EXAMPLES
from sispin.cli.main import main


def test_bare_pin_prints_the_overview_and_exits_as_a_bad_command_line(capsys):
    assert main([]) == 2
    printed = capsys.readouterr()
    assert printed.out.startswith("usage: pin ") and "exit codes:" in printed.out
    assert all(f"    {name}" in printed.out for name in COMMANDS)
    assert printed.err == ""


def test_pin_help_is_the_overview_and_pin_help_command_its_help(capsys):
    assert main(["--help"]) == 0
    overview = capsys.readouterr().out
    assert main(["help"]) == 0
    assert capsys.readouterr().out == overview
    assert main(["check", "--help"]) == 0
    check_help = capsys.readouterr().out
    assert main(["help", "check"]) == 0
    assert capsys.readouterr().out == check_help
    assert check_help.startswith("usage: pin check ")


@pytest.mark.parametrize(
    "argv, said",
    [
        (["stauts"], "pin: error: 'stauts' is not a pin command; did you mean 'status'? (see pin --help)"),
        (["help", "upgarde"], "pin: error: 'upgarde' is not a pin command; did you mean 'upgrade'? (see pin --help)"),
        (["help", "merge"], "pin: error: 'merge' is not a pin command; did you mean 'merge-driver'? (see pin --help)"),
        (["--debug", "chekc"], "pin: error: 'chekc' is not a pin command; did you mean 'check'? (see pin --help)"),
        (["zzzz"], "pin: error: 'zzzz' is not a pin command (see pin --help)"),
        (
            ["status", "--fecth"],
            "pin: error: pin status: unrecognized arguments: --fecth; did you mean '--fetch'? (see pin status --help)",
        ),
    ],
)
def test_a_misspelt_command_or_option_is_one_line_with_the_likely_one(argv, said, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err == said + "\n"


def test_a_misspelt_set_or_repository_names_the_likely_one(history, capsys):
    assert main(["status", "dmeo"]) == 4
    assert capsys.readouterr().err == (
        "pin: error: pin.toml: no experiment set 'dmeo'; did you mean 'demo'? (known sets: demo, other)\n"
    )
    assert main(["why", "rcc"]) == 4
    assert "'rcc' is neither a repository; did you mean 'rc'? (known: rc)" in capsys.readouterr().err
    assert main(["why", "zzz"]) == 4  # nothing close: no guess
    assert "did you mean" not in capsys.readouterr().err
    assert main(["upgrade", "demo", "rcc", "--dry-run"]) == 4
    assert "no repository 'rcc'; did you mean 'rc'?" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_ends_with_examples_of_itself(name, capsys):
    assert EXAMPLES[name], name
    assert main([name, "--help"]) == 0
    text = capsys.readouterr().out
    examples = text.split("\nexamples:\n")[1].splitlines()
    assert len(examples) == len(EXAMPLES[name])
    for shown, (line, what) in zip(examples, EXAMPLES[name]):
        assert line.startswith(f"pin {name}") and shown.strip().startswith(line) and shown.endswith(f"# {what}")
