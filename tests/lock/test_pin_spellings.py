"""
Every TOML spelling of a set's pin is valid pin.toml, and every command that edits pin.toml handles it: ``pin
upgrade`` (and its dry run) changes only the SHA's characters, ``pin new``, ``pin configs`` and ``pin import --write``
only add (or change the configs), comments and layout kept byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import RECIPE_DIR
from sispin.cli.main import main
from sispin.lock.loading import load_lockfile, parse_lockfile

REPOS = "\n# the repositories\n[repos.rc]  # model code\nurl = '{url}'\nbranch = 'main'\n"
#: set x pins c0 (with clone_submodules where the spelling is a table), set other pins c2 where the spelling has room
SPELLINGS = {
    "a string in [sets.x]": (
        "[sets.x]  # x\nconfigs = ['config/a.py']\nrc = '{c0}'  # pin\n\n[sets.other]\nrc = '{c2}'\n"
    ),
    "an inline table without extra arguments": (
        "[sets.x]\nconfigs = ['config/a.py']\nrc = {{ commit = '{c0}' }}  # pin\n"
    ),
    "an inline table with extra arguments": (
        "[sets.x]\nconfigs = ['config/a.py']\nrc = {{ commit = '{c0}', clone_submodules = true }}  # pin\n"
    ),
    "dotted keys": "[sets.x]\nconfigs = ['config/a.py']\nrc.commit = '{c0}'  # pin\n",
    "dotted keys with extra arguments": (
        "[sets.x]\nconfigs = ['config/a.py']\nrc.commit = '{c0}'  # pin\nrc.clone_submodules = true\n"
    ),
    "a table of its own": "[sets.x]\nconfigs = ['config/a.py']\n\n[sets.x.rc]  # pin\ncommit = '{c0}'\n",
    "dotted set keys in [sets]": (
        "[sets]  # all sets\nx.configs = ['config/a.py']\nx.rc = '{c0}'  # pin\nother.rc = '{c2}'\n"
    ),
    "dotted set keys without configs": "[sets]\nx.rc = '{c0}'  # pin\nother.rc = '{c2}'\n",
    "dotted set keys, inline pin": "[sets]\nx.configs = ['config/a.py']\nx.rc = {{ commit = '{c0}' }}  # pin\n",
    "dotted set keys, dotted pin": "[sets]\nx.configs = ['config/a.py']\nx.rc.commit = '{c0}'  # pin\n",
    "dotted keys at the top": "sets.x.configs = ['config/a.py']\nsets.x.rc = '{c0}'  # pin\nsets.other.rc = '{c2}'\n",
    "an inline set in [sets]": "[sets]\nx = {{ configs = ['config/a.py'], rc = '{c0}' }}  # pin\n",
    "inline sets": "sets = {{ x = {{ configs = ['config/a.py'], rc = '{c0}' }} }}  # pin\n",
}
SPELLING = pytest.mark.parametrize("spelling", list(SPELLINGS))


def write(history, spelling: str) -> str:
    """pin.toml of the history's remote in the spelling, with config/a.py and config/b.py beside it"""
    text = "# a setup\nversion = 1\n\n" + (SPELLINGS[spelling] + REPOS).format(
        url=history.url, c0=history.c[0], c2=history.c[2]
    )
    history.lock.write_text(text)
    (history.lock.parent / "config").mkdir(exist_ok=True)
    for name in ("a.py", "b.py"):
        (history.lock.parent / "config" / name).write_text("")
    return text


def only_added(before: str, after: str) -> bool:
    """Every character of before is in after, in order: an edit that only added text."""
    kept = iter(after)
    return all(char in kept for char in before)


@SPELLING
def test_upgrade_moves_only_the_shas_characters(history, spelling, capsys):
    text = write(history, spelling)
    before = parse_lockfile(text, history.lock)
    assert main(["upgrade", "x", "--dry-run"]) == 0
    assert f"rc  {history.c[0][:7]} -> {history.c[4][:7]}  (+4 commits)" in capsys.readouterr().out
    assert history.text() == text, "a dry run writes nothing"
    assert main(["upgrade", "x"]) == 0
    assert history.text() == text.replace(history.c[0], history.c[4])
    after = load_lockfile(history.lock)
    assert after.get_set("x").pin("rc").job_kwargs == before.get_set("x").pin("rc").job_kwargs
    assert {k: s for k, s in after.sets.items() if k != "x"} == {k: s for k, s in before.sets.items() if k != "x"}


@SPELLING
def test_new_adds_a_set_and_keeps_every_character(history, spelling):
    text = write(history, spelling)
    before = parse_lockfile(text, history.lock)
    assert main(["new", "fresh", "--from", "x"]) == 0
    assert only_added(text, history.text())
    lock = load_lockfile(history.lock)
    assert lock.get_set("fresh").pin("rc").commit == history.c[4]
    assert lock.get_set("fresh").pin("rc").job_kwargs == before.get_set("x").pin("rc").job_kwargs
    assert {k: s for k, s in lock.sets.items() if k != "fresh"} == before.sets
    assert history.text().endswith(REPOS.format(url=history.url)), "the comment still introduces [repos.rc]"


@SPELLING
def test_configs_changes_only_the_configs(history, spelling):
    text = write(history, spelling)
    before = parse_lockfile(text, history.lock)
    assert main(["configs", "x", "--add", "config/b.py"]) == 0
    assert only_added(text, history.text())
    if "config/a.py" in text:
        assert main(["configs", "x", "--remove", "config/a.py"]) == 0
    lock = load_lockfile(history.lock)
    assert lock.get_set("x").configs == ("config/b.py",)
    assert lock.get_set("x").pins == before.get_set("x").pins
    assert {k: s for k, s in lock.sets.items() if k != "x"} == {k: s for k, s in before.sets.items() if k != "x"}
    unchanged = [line for line in text.splitlines() if "config/" not in line]
    assert [line for line in history.text().splitlines() if "config/" not in line][: len(unchanged)] == unchanged


RETURNN = "https://github.com/rwth-i6/returnn"


@SPELLING
def test_import_write_adds_a_pin_to_the_set(history, spelling, real_sisyphus, monkeypatch, capsys):
    text = write(history, spelling)
    before = parse_lockfile(text, history.lock)
    root = history.lock.parent
    (root / "recipe").mkdir()
    (root / "recipe" / "i6_core").symlink_to(RECIPE_DIR / "i6_core")
    monkeypatch.setenv("PYTHONPATH", str(real_sisyphus))
    (root / "only.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"j = CloneGitRepositoryJob('{RETURNN}', commit='{history.c[1]}')\n"
    )
    assert main(["import", "only.py", "--set", "x", "--write"]) == 0, capsys.readouterr()
    assert "(same job id i6_core/tools/git/CloneGitRepositoryJob." in capsys.readouterr().out
    assert only_added(text, history.text())
    lock = load_lockfile(history.lock)
    assert lock.get_set("x").pin("returnn").commit == history.c[1]
    assert lock.get_set("x").pin("rc") == before.get_set("x").pin("rc")
    assert lock.get_repo("returnn").url == RETURNN


def test_every_spelling_is_a_pin_of_set_x(tmp_path: Path):
    """The spellings above are what they claim: valid pin.toml in which x pins rc at c0."""
    for spelling in SPELLINGS:
        text = "version = 1\n" + (SPELLINGS[spelling] + REPOS).format(url="file:///r", c0="a" * 40, c2="b" * 40)
        assert parse_lockfile(text, tmp_path / "pin.toml").get_set("x").pin("rc").commit == "a" * 40, spelling


#: pins that bind a legacy hash_overwrite, as `pin import --config` writes them and as people may
ALIASED = {
    "as pin import writes it": "rc = {{commit = '{c0}', hash_overwrite = 'LEGACY'}}  # pin\n",
    "spaced": "rc = {{ commit = '{c0}', hash_overwrite = 'LEGACY' }}  # pin\n",
    "alias first": "rc = {{ hash_overwrite = 'LEGACY', commit = '{c0}' }}  # pin\n",
    "with extra arguments": "rc = {{ commit = '{c0}', hash_overwrite = 'LEGACY', clone_submodules = true }}  # pin\n",
    "dotted keys": "rc.commit = '{c0}'  # pin\nrc.hash_overwrite = 'LEGACY'  # legacy id\n",
}


@pytest.mark.parametrize("spelling", list(ALIASED))
def test_upgrade_drops_the_alias_in_every_spelling_and_moves_only_the_sha(history, spelling, capsys):
    text = "version = 1\n\n[sets.x]\nconfigs = ['config/a.py']\n" + (ALIASED[spelling] + REPOS).format(
        url=history.url, c0=history.c[0]
    )
    history.lock.write_text(text)
    (history.lock.parent / "config").mkdir(exist_ok=True)
    (history.lock.parent / "config" / "a.py").write_text("")
    assert main(["upgrade", "x"]) == 0, capsys.readouterr()
    after = history.text()
    pin = load_lockfile(history.lock).get_set("x").pin("rc")
    assert (pin.commit, pin.hash_overwrite) == (history.c[4], None)
    assert "LEGACY" not in after and "# pin" in after and "# the repositories" in after


@pytest.mark.parametrize(
    "pin, left",
    [
        ('{commit = "c", hash_overwrite = "H"}  # pin', '{commit = "c"}  # pin'),
        ('{hash_overwrite = "H", commit = "c"}', '{commit = "c"}'),
        ('{ commit = "c", hash_overwrite = "H", branch = "b" }', '{ commit = "c", branch = "b" }'),
        ('{ hash_overwrite = "H", commit = "c", branch = "b" }', '{ commit = "c", branch = "b" }'),
    ],
)
def test_a_dropped_alias_takes_its_separator_with_it(pin, left):
    import tomlkit

    from sispin.lock.editing import drop_pin_alias

    document = tomlkit.parse(f"[sets.x]\nrc = {pin}\n")
    drop_pin_alias(document, "x", "rc")
    assert tomlkit.dumps(document) == f"[sets.x]\nrc = {left}\n"
