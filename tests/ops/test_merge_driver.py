"""
``pin merge-driver``: pin.toml and pin.snapshot.toml merged by value for git, and a real ``git merge`` of two branches
that upgraded different sets of a setup (with the real Sisyphus), then one that moved the same pin twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import git, git_commit
from scenarios import FREEZE_CONFIG
from sispin.cli.main import main
from sispin.lock.loading import parse_lockfile
from sispin.ops.merge_driver import Merge, merge_files

SHA = {digit: digit * 40 for digit in "0123456789"}
BASE = f"""\
# the setup's lock
version = 1

[repos.rc]
url = "https://example.org/rc"

[sets.a]
configs = ["config/a.py"]
rc = "{SHA['1']}"  # a's comment

# b is the paper's set
[sets.b]
configs = ["config/b.py"]
rc = '{SHA['2']}'
"""


def _merge(tmp_path, base, ours, theirs, name="pin.toml"):
    files = []
    for label, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        files.append(tmp_path / label)
        files[-1].write_bytes(text.encode())
    code = main(["merge-driver", *map(str, files), name])
    return code, files[1].read_bytes().decode()


def _merged(tmp_path, base, ours, theirs, name="pin.toml") -> Merge:
    """The merge driver's use case on the three texts; checks that OURS holds what it returns."""
    files = []
    for label, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        files.append(tmp_path / label)
        files[-1].write_bytes(text.encode())
    result = merge_files(*files, name)
    assert files[1].read_bytes().decode() == result.text
    return result


def _new_set(name, digit, comment):
    return f'\n# {comment}\n[sets.{name}]\nconfigs = ["config/{name}.py"]\nrc = "{SHA[digit]}"\n'


def test_different_sets_moved_and_added_on_both_branches_merge_keeping_comments(tmp_path):
    ours = BASE.replace(SHA["1"], SHA["3"]) + _new_set("c", "5", "our new set")
    theirs = BASE.replace(SHA["2"], SHA["4"]) + _new_set("d", "6", "their new set")
    merge = _merged(tmp_path, BASE, ours, theirs)
    merged = merge.text
    assert merge.conflicts == []
    lock = parse_lockfile(merged, Path("pin.toml"))
    assert {name: spec.pins["rc"].commit for name, spec in lock.sets.items()} == {
        "a": SHA["3"],
        "b": SHA["4"],
        "c": SHA["5"],
        "d": SHA["6"],
    }
    # both new sets with the comments in front of them, the quoting of each line as its branch wrote it
    for line in ("# our new set", "# their new set", "# b is the paper's set", f"rc = '{SHA['4']}'", "# a's comment"):
        assert line in merged, line
    assert merged.index("[sets.c]") < merged.index("[sets.d]")


def test_a_change_next_to_a_new_set_merges_by_value(tmp_path):
    # the line merge conflicts (the changed line ends the file where the other branch appends), the union merge
    # keeps the old and the new pin: the driver writes the other branch's set into this branch's file
    ours = BASE.replace(SHA["2"], SHA["3"])
    theirs = BASE + _new_set("c", "5", "their new set")
    merge = _merged(tmp_path, BASE, ours, theirs)
    merged = merge.text
    assert merge.conflicts == []
    lock = parse_lockfile(merged, Path("pin.toml"))
    assert lock.sets["b"].pins["rc"].commit == SHA["3"] and lock.sets["c"].pins["rc"].commit == SHA["5"]
    assert merged.startswith(ours.rstrip("\n"))


def test_a_comment_changed_on_the_other_branch_is_kept(tmp_path):
    # values alone do not hold comments: git's clean line merge is taken
    theirs = BASE.replace("# b is the paper's set", "# b is the ICASSP paper's set")
    merge = _merged(tmp_path, BASE, BASE.replace(SHA["1"], SHA["3"]), theirs)
    merged = merge.text
    assert merge.conflicts == []
    assert merged == theirs.replace(SHA["1"], SHA["3"])


def test_a_clean_line_merge_that_repeats_a_table_is_not_taken(tmp_path):
    # the same new set, appended on one branch and inserted before [sets.b] on the other: git's line merge is clean
    # but holds [sets.c] twice
    new_set = _new_set("c", "5", "c")
    ours = BASE + new_set
    theirs = BASE.replace("\n# b is the paper's set", new_set + "\n# b is the paper's set")
    merge = _merged(tmp_path, BASE, ours, theirs)
    merged = merge.text
    assert merge.conflicts == []
    assert merged.count("[sets.c]") == 1 and parse_lockfile(merged, Path("pin.toml")).sets.keys() == {"a", "b", "c"}


def test_the_same_pin_moved_twice_is_a_conflict_naming_both_commits(tmp_path, capsys):
    code, merged = _merge(tmp_path, BASE, BASE.replace(SHA["1"], SHA["3"]), BASE.replace(SHA["1"], SHA["4"]))
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"pin: error: pin.toml: sets.a.rc moved to {SHA['3'][:12]} on this branch and to {SHA['4'][:12]} on the other "
        f"(from {SHA['1'][:12]}): keep one, then `pin check`"
    ]
    # git's usual markers, for the user to resolve
    assert "<<<<<<< this branch" in merged and ">>>>>>> other branch" in merged


def test_values_that_are_fine_alone_but_not_together_are_a_conflict(tmp_path):
    setup = '\n[setup.{}]\nurl = "https://example.org/{}"\ncommit = "{}"\npath = "tools/x"\n'
    ours = BASE + setup.format("x", "x", SHA["3"])
    theirs = BASE + setup.format("y", "y", SHA["4"])
    merge = _merged(tmp_path, BASE, ours, theirs)
    (conflict,) = merge.conflicts
    assert conflict.startswith("merged pin.toml: setup.y.path: 'tools/x' is the path of setup.x"), conflict
    assert "<<<<<<< this branch" in merge.text


def test_crlf_line_endings_stay(tmp_path):
    crlf = BASE.replace("\n", "\r\n")
    ours = crlf.replace(SHA["2"], SHA["3"])
    theirs = crlf + _new_set("c", "5", "their new set").replace("\n", "\r\n")
    merge = _merged(tmp_path, crlf, ours, theirs)
    merged = merge.text
    assert merge.conflicts == []
    assert "\n" not in merged.replace("\r\n", "") and SHA["5"] in merged and SHA["3"] in merged


def _snapshot(bound=None, **sets):
    from sispin.graph.snapshot import render_snapshot

    entries = {name: {"outputs": {f"{name}/out": {"job": job, "path": "out"}}} for name, job in sets.items()}
    return render_snapshot(entries, bound or {})


def test_snapshot_sets_merge_whole_and_a_set_both_changed_is_flagged(tmp_path, capsys):
    base = _snapshot(a="J/a.1", b="J/b.1", c="J/c.1")
    ours = _snapshot(a="J/a.2", b="J/b.1", c="J/c.2", d="J/d.1")
    theirs = _snapshot(a="J/a.1", b="J/b.2", c="J/c.3", e="J/e.1")
    code, merged = _merge(tmp_path, base, ours, theirs, "sub/pin.snapshot.toml")
    assert code == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "pin: error: sub/pin.snapshot.toml: set c changed on both branches: run `pin snapshot c` after the merge, "
        "then `git add`"
    ]
    assert merged == _snapshot(a="J/a.2", b="J/b.2", c="J/c.2", d="J/d.1", e="J/e.1")
    code, merged = _merge(tmp_path, base, ours, base, "pin.snapshot.toml")
    assert (code, merged) == (0, ours)


def test_the_history_of_hash_overwrite_values_keeps_both_branches(tmp_path):
    ours = _snapshot({"v1": [SHA["1"]]}, a="J/a.1")
    theirs = _snapshot({"v1": [SHA["2"]], "v2": [SHA["3"]]}, a="J/a.1")
    merge = _merged(tmp_path, _snapshot(a="J/a.1"), ours, theirs, "pin.snapshot.toml")
    assert merge == Merge(_snapshot({"v1": [SHA["1"], SHA["2"]], "v2": [SHA["3"]]}, a="J/a.1"), [])


def test_usage_errors_are_one_line(tmp_path, capsys):
    assert main(["merge-driver", "x"]) == 2
    assert "BASE OURS THEIRS" in capsys.readouterr().err
    code, merged = _merge(tmp_path, BASE, "version = [\n", BASE)
    assert code == 3 and "pin.toml: invalid TOML" in capsys.readouterr().err


def _git_merge(root, branch, pin_dir):
    env = {**os.environ, "PATH": f"{pin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.update(
        {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    )
    return subprocess.run(
        ["git", "merge", "--no-edit", branch], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def test_git_merges_branches_that_upgraded_different_sets(real_setup, make_repo, capsys):
    pin_dir = Path(sys.executable).parent
    assert (pin_dir / "pin").is_file(), f"no `pin` beside {sys.executable}: install sispin into this environment"
    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"X = {i}\n"}) for i in range(3)]
    sets = "".join(f'[sets.{name}]\nconfigs = ["config/{name}.py"]\nrc = "{commits[0]}"\n\n' for name in "ab")
    root = real_setup(
        f'[repos.rc]\nurl = "file://{remote}"\n\n{sets}', {f"{n}.py": FREEZE_CONFIG.format(name=n) for n in "ab"}
    )
    assert main(["snapshot"]) == 0
    git(root, "init", "-q", "-b", "main")
    assert main(["merge-driver", "--install"]) == 0
    assert (root / ".gitattributes").read_text() == "/pin.toml merge=pin\n/pin.snapshot.toml merge=pin\n"
    assert git(root, "config", "merge.pin.driver") == "pin merge-driver %O %A %B %P"
    assert main(["merge-driver", "--install"]) == 0  # once is enough: nothing added twice
    assert (root / ".gitattributes").read_text().count("merge=pin") == 2
    git(root, "add", "pin.toml", "pin.snapshot.toml", ".gitattributes")
    git(root, "commit", "-q", "-m", "the setup")

    git(root, "checkout", "-q", "-b", "upgrade-a")
    assert main(["upgrade", "a", "--commit"]) == 0
    git(root, "checkout", "-q", "-b", "upgrade-b", "main")
    assert main(["upgrade", "b", "rc", "--to", commits[1], "--commit"]) == 0
    merge = _git_merge(root, "upgrade-a", pin_dir)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    lock_now = parse_lockfile((root / "pin.toml").read_text(), root / "pin.toml")
    assert [lock_now.sets[name].pins["rc"].commit for name in "ab"] == [commits[2], commits[1]]
    capsys.readouterr()
    assert main(["check", "--full"]) == 0, capsys.readouterr()

    # the same pin moved to two commits on two branches: git stops, the driver's line names both
    git(root, "checkout", "-q", "-b", "again", "main")
    assert main(["upgrade", "b", "rc", "--to", commits[2], "--commit"]) == 0
    merge = _git_merge(root, "upgrade-b", pin_dir)
    assert merge.returncode != 0
    assert f"sets.b.rc moved to {commits[2][:12]} on this branch and to {commits[1][:12]} on the other" in (
        merge.stdout + merge.stderr
    )
    assert "CONFLICT" in merge.stdout and "<<<<<<<" in (root / "pin.toml").read_text()


def test_install_keeps_the_users_gitattributes_and_needs_a_repository(write_lock, capsys):
    lock = write_lock(BASE)
    assert main(["merge-driver", "--install"]) == 5
    assert (
        capsys.readouterr().err.strip() == f"pin: error: {lock.parent} is in no git repository: a merge driver is git's"
    )
    git(lock.parent, "init", "-q", "-b", "main")
    (lock.parent / ".gitattributes").write_bytes(b"*.sh text eol=lf\r\n/pin.toml merge=pin")
    assert main(["merge-driver", "--install"]) == 0
    assert (lock.parent / ".gitattributes").read_bytes() == (
        b"*.sh text eol=lf\r\n/pin.toml merge=pin\r\n/pin.snapshot.toml merge=pin\r\n"
    )
    assert "added /pin.snapshot.toml merge=pin" in capsys.readouterr().out
    assert sorted(os.listdir(lock.parent)) == [".git", ".gitattributes", "pin.toml"], "no lock file beside git's file"


#: the shipped pin.toml's shape: the sets, then a comment that introduces the [setup.*] tables
WITH_SETUP = BASE + f"""
# The setup's own recipe code and workflow manager.
[setup.i6_core]
url = "https://example.org/i6_core"
commit = "{SHA['9']}"
path = "recipe/i6_core"
"""


def _added_set(text, name, digit):
    """pin new's way: the set goes after the last set, before the comment that introduces what follows."""
    return text.replace(
        "\n# The setup's own",
        f'\n[sets.{name}]\nconfigs = ["config/{name}.py"]\nrc = "{SHA[digit]}"\n\n# The setup\'s own',
    )


def test_sets_added_on_both_branches_keep_every_comment_once(tmp_path):
    ours, theirs = _added_set(WITH_SETUP, "alice", "3"), _added_set(WITH_SETUP, "bob", "4")
    merge = _merged(tmp_path, WITH_SETUP, ours, theirs)
    merged = merge.text
    assert merge.conflicts == []
    assert merged.count("# The setup's own recipe code and workflow manager.") == 1, merged
    assert merged.index("[sets.alice]") < merged.index("[sets.bob]") < merged.index("# The setup's own")
    assert set(parse_lockfile(merged, Path("pin.toml")).sets) == {"a", "b", "alice", "bob"}


def test_a_comment_the_merge_by_value_cannot_place_is_a_conflict(tmp_path):
    # the line merge conflicts (both append), and the other branch also edited a comment: not dropped silently
    ours = _added_set(WITH_SETUP, "alice", "3")
    theirs = _added_set(WITH_SETUP, "bob", "4").replace("# b is the paper's set", "# b is the paper's set: DO NOT MOVE")
    merge = _merged(tmp_path, WITH_SETUP, ours, theirs)
    assert "<<<<<<<" in merge.text
    assert merge.conflicts == [
        "pin.toml: a merge by value cannot keep the other branch's line \"# b is the paper's set: DO NOT MOVE\": "
        "resolve by hand"
    ]


def test_a_moved_pin_takes_its_line_as_the_other_branch_wrote_it(tmp_path):
    # a tag comment stands for the commit it came with: the other branch's move drops it, the merge too
    tagged = WITH_SETUP.replace(f'rc = "{SHA["1"]}"  # a\'s comment', f'rc = "{SHA["1"]}"  # tag v1')
    theirs = tagged.replace(f'rc = "{SHA["1"]}"  # tag v1', f'rc = "{SHA["5"]}"')
    merge = _merged(tmp_path, tagged, _added_set(tagged, "alice", "3"), theirs)
    merged = merge.text
    assert merge.conflicts == []
    assert f'rc = "{SHA["5"]}"\n' in merged and "# tag v1" not in merged


def test_a_frozen_set_does_not_move_in_a_merge(tmp_path):
    frozen = BASE.replace("[sets.a]\n", "[sets.a]\nfreeze = true\n")
    merge = _merged(tmp_path, BASE, frozen, BASE.replace(SHA["1"], SHA["3"]))
    # (git's line merge is left in the file: it has no markers here, git marks it conflicted)
    assert "sets.a is frozen on this branch, and the other branch changed it" in "\n".join(merge.conflicts)


def test_a_set_removed_on_one_branch_and_changed_on_the_other_is_a_conflict(tmp_path, capsys):
    removed = BASE[: BASE.index("# b is the paper's set")]
    code, _ = _merge(tmp_path, BASE, removed, BASE.replace(SHA["2"], SHA["3"]))
    assert code == 1
    assert capsys.readouterr().err == "pin: error: pin.toml: sets.b: removed on this branch, changed on the other\n"


def test_a_comment_added_where_an_equal_line_stands_elsewhere_is_not_dropped(tmp_path):
    # the line merge conflicts (the comment is right above the pin this branch moved); the same text above
    # [sets.b] does not keep the other branch's line above sets.a's pin
    ours = BASE.replace(SHA["1"], SHA["3"])
    theirs = BASE.replace(f'rc = "{SHA["1"]}"', f'# b is the paper\'s set\nrc = "{SHA["1"]}"')
    merge = _merged(tmp_path, BASE, ours, theirs)
    if merge.conflicts:
        assert "<<<<<<<" in merge.text
        assert merge.conflicts == [
            "pin.toml: a merge by value cannot keep the other branch's line \"# b is the paper's set\": resolve by hand"
        ]
    else:
        assert f'# b is the paper\'s set\nrc = "{SHA["3"]}"' in merge.text


#: a comment right above a pin: a change of the pin and of the comment are neighbours for git's line merge
COMMENTED = BASE.replace(f"rc = '{SHA['2']}'", f"# the paper's commit\nrc = '{SHA['2']}'")


def test_a_comment_deleted_beside_a_moved_pin_stays_deleted(tmp_path):
    moved, deleted = COMMENTED.replace(SHA["2"], SHA["3"]), COMMENTED.replace("# the paper's commit\n", "")
    for ours, theirs in ((moved, deleted), (deleted, moved)):
        merge = _merged(tmp_path, COMMENTED, ours, theirs)
        assert "# the paper's commit" not in merge.text or "<<<<<<<" in merge.text, merge.text
        if merge.conflicts:
            assert merge.conflicts == [
                "pin.toml: a merge by value cannot keep the other branch's deletion of the line "
                '"# the paper\'s commit": resolve by hand'
            ]
        else:
            assert parse_lockfile(merge.text, Path("pin.toml")).sets["b"].pins["rc"].commit == SHA["3"]


def test_equal_lines_both_branches_changed_in_different_sets_merge(tmp_path):
    # each branch moves another set to the same commit, and both append a set (the line merge conflicts): the two
    # equal pin lines are each the change of one branch, at its place
    base = BASE.replace(f"rc = '{SHA['2']}'", f'rc = "{SHA["2"]}"')
    ours = base.replace(SHA["1"], SHA["3"]) + _new_set("c", "5", "our new set")
    theirs = base.replace(SHA["2"], SHA["3"]) + _new_set("d", "6", "their new set")
    merge = _merged(tmp_path, base, ours, theirs)
    assert merge.conflicts == []
    lock = parse_lockfile(merge.text, Path("pin.toml"))
    assert {name: spec.pins["rc"].commit for name, spec in lock.sets.items()} == {
        "a": SHA["3"],
        "b": SHA["3"],
        "c": SHA["5"],
        "d": SHA["6"],
    }


def test_a_pin_respelt_on_one_branch_and_moved_on_the_other_is_one_line_both_changed(tmp_path):
    # the same commit written as a table is the same pin by value: no "moved to nothing"; but both branches changed
    # its line, and a merge keeps every line either branch wrote or says which it cannot keep
    respelt = BASE.replace(f'rc = "{SHA["1"]}"  # a\'s comment', f'rc = {{ commit = "{SHA["1"]}" }}  # a\'s comment')
    moved = BASE.replace(f'rc = "{SHA["1"]}"', f'rc = "{SHA["5"]}"')
    for ours, theirs, side in ((respelt, moved, "this branch's"), (moved, respelt, "the other branch's")):
        merge = _merged(tmp_path, BASE, ours, theirs)
        (conflict,) = merge.conflicts
        assert f"a merge by value cannot keep {side} line 'rc = {{ commit = " in conflict, conflict
    # moved on both sides to different commits, one of them respelt: the conflict of a pin moved twice
    merge = _merged(tmp_path, BASE, respelt.replace(SHA["1"], SHA["6"]), moved)
    assert [line.split(": ", 1)[1] for line in merge.conflicts] == [
        f"sets.a.rc moved to {SHA['6'][:12]} on this branch and to {SHA['5'][:12]} on the other "
        f"(from {SHA['1'][:12]}): keep one, then `pin check`"
    ]
