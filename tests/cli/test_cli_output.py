"""
What ``pin`` prints at each level (one output layer for every command), and the exit codes it documents.
"""

from __future__ import annotations

import inspect

import pytest

from sispin import errors
from sispin.cli.main import main
from sispin.text import capped, count


def test_help_lists_every_exit_code_with_its_meaning(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for code, meaning in errors.EXIT_CODES.items():
        assert f"{code:>3}  {meaning}" in text


def test_every_error_class_exits_with_a_documented_code():
    classes = [cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.PinError)]
    assert len(classes) == len(errors.__all__) - 1  # every class but the table is exported
    for cls in classes:
        assert cls.exit_code in errors.EXIT_CODES, cls.__name__
    assert 70 in errors.EXIT_CODES and 130 in errors.EXIT_CODES


@pytest.mark.parametrize("command", ["sync", "status", "upgrade", "check", "explain", "why", "gc", "import"])
def test_every_command_takes_quiet_and_verbose(command, capsys):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "--quiet" in text and "--verbose" in text


def test_quiet_keeps_results_and_drops_narration(history, capsys):
    assert main(["status", "--fetch"]) == 0
    table = capsys.readouterr().out
    assert main(["status", "--quiet"]) == 0
    assert capsys.readouterr().out == table, "a result is shown at every level"
    # the narration of a command that writes is not
    assert main(["upgrade", "demo", "--to", history.c[1], "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "updated sets.demo" not in out and f"{history.c[0][:7]} -> {history.c[1][:7]}" in out
    assert main(["upgrade", "other", "--to", history.c[3]]) == 0
    assert "pin.toml: updated sets.other" in capsys.readouterr().out


def test_quiet_and_verbose_exclude_each_other(capsys):
    assert main(["status", "--quiet", "--verbose"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    "number, noun, expected",
    [
        (1, "hash_overwrite alias", "1 hash_overwrite alias"),
        (2, "hash_overwrite alias", "2 hash_overwrite aliases"),
        (2, "repository", "2 repositories"),
        (0, "key", "0 keys"),
        (3, "pin", "3 pins"),
    ],
)
def test_counts_read_as_english(number, noun, expected):
    assert count(number, noun) == expected


def test_a_cut_line_keeps_what_it_starts_and_ends_with():
    # the real case: a long path in the middle cut off the point at the end
    path = "recipe/i6_experiments/users/someone/experiments/ted/" + "deep/" * 50 + "pipeline.py:17"
    point = "CloneGitRepositoryJob(...) (pin.toml binds it to i6_models 7ec53cc in sets.ted) hides 3 commits"
    cut = capped(f"{path}: {point}")
    assert (
        len(cut) == 300 and cut.startswith("recipe/i6_experiments/users/") and cut.endswith(f"pipeline.py:17: {point}")
    )
    # no word long enough to shorten: the middle goes, both ends stay
    words = " ".join(f"word{i}" for i in range(80))
    cut = capped(f"problem: {words} because of the cause")
    assert len(cut) == 300 and cut.startswith("problem: word0 ") and cut.endswith("because of the cause"), cut
    assert capped("short line") == "short line"
    # a word "..." would not shorten stays whole
    job = "i6_core/returnn/training/ReturnnTrainingJob.AbCdEfGhIjKl/output/x.y"  # 67 characters
    assert f" {job} " in capped(f"problem: {job} {' '.join(['w'] * 150)} the end")
