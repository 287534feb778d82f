"""
Frozen sets (``pin freeze`` / ``pin thaw``, ``freeze = true``): nothing moves a published set's pins, configs or
snapshot entry by accident; ``pin check`` still checks it.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import git_commit
from scenarios import FREEZE_CONFIG
from sispin.cli.main import main
from sispin.errors import LockfileError
from sispin.graph.snapshot import read_snapshot
from sispin.lock.files import snapshot_path
from sispin.ops.freeze import Freezing, freeze, thaw

FROZEN = "sets.other is frozen (freeze = true in pin.toml): {} would change it; run `pin thaw other` first"


def test_a_frozen_set_refuses_every_change_until_thawed(history, capsys):
    before = history.text()
    assert main(["freeze", "other"]) == 0
    assert capsys.readouterr().out == "sets.other: frozen\n"
    frozen = history.text()
    # one line added to the set's table; comments and everything else stay
    assert frozen.replace("freeze = true\n", "", 1) == before and "[sets.other]" in frozen.split("freeze")[0]
    assert main(["freeze", "other"]) == 0 and capsys.readouterr().out == "sets.other: frozen already\n"
    for command, what in (
        (["upgrade", "other"], "pin upgrade"),
        (["upgrade", "other", "--dry-run"], "pin upgrade"),
        (["configs", "other", "--add", "pin.toml"], "pin configs --add/--remove"),
        (["snapshot", "other"], "pin snapshot"),
        (["import", ".", "--set", "other", "--write"], "pin import --write"),
    ):
        assert main(command) == 12, command
        assert capsys.readouterr().err == f"pin: error: {FROZEN.format(what)}\n", command
        assert history.text() == frozen, command
    assert main(["configs", "other"]) == 0, "listing changes nothing"
    assert main(["upgrade", "demo", "--dry-run"]) == 0, "the other sets move as before"
    capsys.readouterr()
    assert main(["thaw", "other"]) == 0 and capsys.readouterr().out == "sets.other: thawed\n"
    assert history.text() == before, "thawing gives back the file as it was"
    assert main(["thaw", "other"]) == 0 and capsys.readouterr().out == "sets.other: not frozen\n"
    assert main(["upgrade", "other"]) == 0


def test_freeze_is_a_boolean_and_a_reserved_name(history, capsys):
    history.lock.write_text(history.text().replace("[sets.other]\n", '[sets.other]\nfreeze = "yes"\n'))
    assert main(["status"]) == 3
    assert "sets.other.freeze: must be true or false" in capsys.readouterr().err
    history.lock.write_text(history.text().replace('freeze = "yes"\n', "").replace("[repos.rc]", "[repos.freeze]"))
    assert main(["status"]) == 3
    assert "'freeze' is reserved" in capsys.readouterr().err


def test_a_set_is_frozen_with_its_ids_and_stays_checked(real_setup, make_repo, capsys):
    remote = make_repo("rc")
    commit = git_commit(remote, {"__init__.py": "X = 1\n"})
    sets = "".join(f'[sets.{name}]\nconfigs = ["config/{name}.py"]\nrc = "{commit}"\n\n' for name in ("a", "other"))
    configs = {f"{name}.py": FREEZE_CONFIG.format(name=name) for name in ("a", "other")}
    root = real_setup(f'[repos.rc]\nurl = "file://{remote}"\n\n{sets}', configs)
    expected = "sets.other: not recorded; a frozen set keeps the ids it has: run `pin snapshot other` first"
    with pytest.raises(LockfileError, match=re.escape(expected)):
        freeze(root / "pin.toml", ["other"])
    assert main(["snapshot"]) == 0
    assert freeze(root / "pin.toml", ["other"]) == Freezing(root / "pin.toml", True, ("other",), ("other",))
    recorded = read_snapshot(snapshot_path(root / "pin.toml"))
    capsys.readouterr()
    for name in ("a", "other"):
        config = root / "config" / f"{name}.py"
        config.write_text(config.read_text().replace("0.001", "0.002"))
    # the snapshot of every set records the others and leaves the frozen one as it was
    assert main(["snapshot"]) == 0
    assert "sets.other: frozen: its recorded ids stay (`pin thaw other` to record anew)" in capsys.readouterr().out
    now = read_snapshot(snapshot_path(root / "pin.toml"))
    assert now["other"] == recorded["other"] and now["a"] != recorded["a"]
    # and pin check still checks it: the change shows
    assert main(["check", "--offline", "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert len(problems) == 1 and problems[0].startswith("sets.other: 1 output changed"), problems


def test_sets_written_as_inline_tables_freeze_and_thaw(history, capsys):
    inline = (
        history.text()
        .replace("[sets.other]\nrc = ", "[sets]\nother = { rc = ")
        .replace("clone_submodules = true }\n", "clone_submodules = true } }\n")
    )
    history.lock.write_text(inline)
    assert freeze(history.lock, ["other"]).changed == ("other",) and "freeze = true" in history.text()
    assert main(["upgrade", "other"]) == 12
    assert thaw(history.lock, ["other", "other"]) == Freezing(history.lock, False, ("other",), ("other",))
    assert history.text().replace(" ", "") == inline.replace(" ", ""), "thawed as it was (spacing aside)"
    capsys.readouterr()


def test_a_hand_written_freeze_false_is_turned_where_it_stands(history):
    history.lock.write_text(history.text().replace("[sets.other]\n", "[sets.other]\nfreeze = false  # not yet\n"))
    assert freeze(history.lock, ["other"]).changed == ("other",)
    assert "[sets.other]\nfreeze = true  # not yet\n" in history.text()
