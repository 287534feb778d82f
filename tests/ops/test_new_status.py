"""``pin new``, ``pin status`` and the store they read, against real local repositories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from conftest import git, git_commit
from results import standing
from sispin.cli.main import main
from sispin.git.store import Store, default_store_dir
from sispin.lock.loading import load_lockfile, parse_lockfile
from sispin.ops.new import NewPin, new_set


def added(lock, name, from_set=None, configs=(), **options):
    """``pin new NAME [--from FROM_SET] [--configs CONFIGS]``, as an operation."""
    return new_set(lock, name, from_set=from_set, configs=configs, store=Store(), **options)


def test_new_set_pins_every_repo_at_its_head(history, capsys):
    before = history.text()
    (history.lock.parent / "config").mkdir()
    (history.lock.parent / "config" / "exp2.py").write_text("")
    # the set is added, but its config cannot be loaded (here: no Sisyphus at all): exit 9, which a script notices
    assert main(["new", "exp2", "--configs", "config/exp2.py"]) == 9
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["pin.toml: new set 'exp2'", f"rc  {history.c[4][:7]}  (main head)"]
    assert captured.err.splitlines() == [
        "pin: error: pin.snapshot.toml: sets.exp2 not recorded (loading the configs of set 'exp2' failed: no Sisyphus "
        "to import: No module named 'sisyphus'; add it to pin.toml's [setup.*] and run `pin sync`, pip install a "
        "Sisyphus checkout, or put one on PYTHONPATH): the set is in pin.toml; fix its configs, then `pin snapshot "
        "exp2`"
    ]
    text = history.text()
    assert text.startswith(before), "existing content is kept as it was"
    lock = load_lockfile(history.lock)
    assert lock.get_set("exp2").configs == ("config/exp2.py",)
    assert lock.get_set("exp2").pin("rc").commit == history.c[4]
    assert lock.get_set("demo").pin("rc").commit == history.c[0], "old sets stay where they are"


def test_new_set_from_another_keeps_its_repos_and_arguments(history, make_repo):
    second = make_repo("second")
    git_commit(second, {"a.py": "a = 1\n"})
    history.lock.write_text(
        history.text().replace("[sets.demo]", f'[repos.unused]\nurl = "file://{second}"\n\n[sets.demo]')
    )
    result = added(history.lock, "exp3", "other")
    assert result.pins == (NewPin("rc", history.c[4], "main"),) and result.graph is None and not result.configs_fail
    pins = load_lockfile(history.lock).get_set("exp3").pins
    assert list(pins) == ["rc"], "only the repositories OTHER pins"
    assert pins["rc"].commit == history.c[4]
    assert pins["rc"].job_kwargs == {"clone_submodules": True}


def test_new_set_goes_between_the_sets_and_what_follows(history):
    history.lock.write_text(
        history.text()
        + '\n# tools of the setup\n[setup.tool]\nurl = "https://h/t"\ncommit = "'
        + "a" * 40
        + '"\npath = "t"\n'
    )
    added(history.lock, "exp2")
    text = history.text()
    assert text.index("[sets.exp2]") > text.index("[sets.other]")
    assert text.index("[sets.exp2]") < text.index("[setup.tool]")
    assert f'rc = "{history.c[4]}"\n\n# tools of the setup\n[setup.tool]' in text, "the comment stays with its table"
    assert list(load_lockfile(history.lock).setup) == ["tool"]


def test_new_set_in_a_lock_without_sets(write_lock, make_repo, store_dir):
    remote = make_repo("rc")
    head = git_commit(remote, {"a.py": "a = 1\n"})
    lock = write_lock(f'version = 1\n\n[repos.rc]\nurl = "file://{remote}"\n')
    assert added(lock, "first").pins == (NewPin("rc", head, None),)
    assert load_lockfile(lock).get_set("first").pin("rc").commit == head


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["new", "demo"], 4, "pin.toml: experiment set 'demo' already exists"),
        (["new", "bad name"], 2, "'bad name' is not a valid set name"),
        (["new", "x", "--from", "nope"], 4, "no experiment set 'nope' (known sets: demo, other)"),
        (["new", "x", "--configs", "/abs/demo.py"], 2, "--configs /abs/demo.py: not inside the setup"),
    ],
)
def test_new_refuses(history, capsys, argv, code, message):
    before = history.text()
    assert main(argv) == code
    assert message in capsys.readouterr().err
    assert history.text() == before


def test_status_is_offline_and_says_when_the_store_never_fetched(history, capsys):
    assert main(["status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["SET", "REPO", "COMMIT", "DATE", "BEHIND", "BRANCH"]
    assert out[1].split() == ["demo", "rc", history.c[0][:7], "?", "?", "main"]
    assert out[-1] == f"note: the store has never fetched rc (file://{history.remote}): run `pin status --fetch`"
    assert not (history.lock.parent.parent / "store" / "mirrors").exists()


def test_status_after_fetch_shows_dates_and_behind_counts(history, capsys):
    assert main(["status", "--fetch"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:3] == ["demo", "rc", history.c[0][:7]]
    assert out[1].split()[4] == "4" and out[2].split()[4] == "2"
    assert out[-1].startswith("store last fetched: ")

    # offline again: new remote commits are not seen until the next fetch
    git_commit(history.remote, {"nn.py": "VERSION = 'newer'\n"}, "newer")
    assert [record["behind"] for record in standing("demo").pins] == [4]
    assert [record["behind"] for record in standing("demo", fetch=True).pins] == [5]


def test_status_json_for_scripts(history, capsys):
    assert main(["status", "--json", "--fetch", "other"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lockfile"] == str(history.lock)
    (record,) = report["pins"]
    assert record["set"] == "other" and record["repo"] == "rc" and record["commit"] == history.c[2]
    assert record["behind"] == 2 and record["off_branch"] == 0 and record["branch"] == "main"
    assert record["date"] and record["fetched_at"] and record["in_store"] is True


def test_status_of_an_unknown_set(history, capsys):
    assert main(["status", "nope"]) == 4
    assert "no experiment set 'nope' (known sets: demo, other)" in capsys.readouterr().err


def test_store_location(monkeypatch, tmp_path):
    monkeypatch.setenv("PIN_HOME", str(tmp_path / "home"))
    assert default_store_dir() == tmp_path / "home"
    monkeypatch.delenv("PIN_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_store_dir() == tmp_path / "xdg" / "sispin"
    store = Store(tmp_path / "s")
    a = store.mirror_path("https://github.com/rwth-i6/returnn_common")
    assert a.name.startswith("returnn_common-") and a.suffix == ".git"
    assert a != store.mirror_path("https://github.com/rwth-i6/returnn_common.git"), "the exact URL is the key"
    assert store.mirror_path("git@github.com:rwth-i6/returnn.git").name.startswith("returnn-")


def test_concurrent_fetches_of_one_url_make_one_mirror(history, store_dir):
    errors = []

    def fetch():
        try:
            Store(store_dir).fetch(history.url)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    mirrors = [p.name for p in (store_dir / "mirrors").iterdir() if not p.name.endswith(".lock")]
    assert len(mirrors) == 1 and mirrors[0].endswith(".git")


def test_commands_print_help(capsys):
    for command in ("sync", "upgrade", "new", "status", "snapshot", "check", "import", "verify"):
        assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--allow-downgrade" in out and "--from OTHER" in out and "--json" in out


def test_status_console_script_runs(history):
    result = subprocess.run([sys.executable, "-m", "sispin", "status"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "demo" in result.stdout and result.stderr == ""


def test_pin_facts_agree_with_git_on_a_history_with_merges(make_repo):
    from sispin.git import history as sispin_git

    repo = make_repo("merges")
    base = git_commit(repo, {"a": "1"}, "base")
    git(repo, "checkout", "-q", "-b", "side")
    side = [git_commit(repo, {"s": str(i)}, f"side {i}") for i in range(3)]
    git(repo, "checkout", "-q", "main")
    main_line = [git_commit(repo, {"m": str(i)}, f"main {i}") for i in range(2)]
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = git(repo, "rev-parse", "HEAD")
    after = git_commit(repo, {"m": "after"}, "after")
    git(repo, "checkout", "-q", "-b", "other", base)
    off = git_commit(repo, {"o": "1"}, "off branch")
    commits = [base, *side, *main_line, merge, after, off]
    facts = sispin_git.pin_facts(repo, "main", commits + ["0" * 40])
    assert set(facts) == set(commits), "a commit the repository lacks is left out"
    for commit in commits:
        expected = (sispin_git.count_commits(repo, commit, after), sispin_git.count_commits(repo, after, commit))
        assert (facts[commit].behind, facts[commit].off_branch) == expected, commit
    assert facts[off].off_branch == 1 and facts[base].behind == 7


def test_status_of_a_url_with_a_very_long_name(write_lock, store_dir, capsys):
    url = f"file:///nonexistent/{'r' * 300}"
    write_lock(f'version = 1\n[repos.rc]\nurl = "{url}"\n[sets.demo]\nrc = "{"a" * 40}"\n')
    assert main(["status"]) == 0, "the store's file names stay short, whatever the URL"
    assert f"note: the store has never fetched rc ({url})" in capsys.readouterr().out
    assert len(Store(store_dir).mirror_path(url).name) < 100


def test_a_damaged_mirror_is_replaced_by_the_next_fetch(history, store_dir, capsys):
    assert main(["status", "--fetch"]) == 0
    mirror = Store(store_dir).mirror_path(history.url)
    (mirror / "HEAD").unlink()
    assert main(["status"]) == 0
    assert "note: the store has never fetched rc" in capsys.readouterr().out, "a mirror without HEAD is none"
    assert main(["upgrade", "demo", "--dry-run"]) == 0, "and the next fetch makes a new one"
    assert "(+4 commits)" in capsys.readouterr().out

    shutil.rmtree(mirror)
    mirror.write_text("a file where the mirror belongs\n")
    assert main(["status", "--fetch"]) == 0
    assert Store(store_dir).mirror(history.url) == mirror
    assert main(["new", "fresh"]) == 0


def test_a_half_made_store_checkout_is_replaced(history, store_dir):
    store = Store(store_dir)
    path = store.checkout_path(history.url, history.c[0], "repository")
    path.mkdir(parents=True)
    (path / "half.py").write_text("a killed clone's leftover\n")
    path.chmod(0o555)
    assert main(["sync", "demo"]) == 0
    assert git(path, "rev-parse", "HEAD") == history.c[0] and not (path / "half.py").exists()


@pytest.mark.parametrize(
    "layout",
    [
        "[sets.demo]\nrc = '{c0}'\n\n[repos.rc]\nurl = '{url}'\n\n[sets.other]\nrc = '{c0}'\n# ends the sets\n",
        "repos = {{ rc = {{ url = '{url}' }} }}\nsets = {{ demo = {{ rc = '{c0}' }} }}\n",
        "[repos.rc]\nurl = '{url}'\n[sets]\ndemo = {{ rc = '{c0}' }}\n",
        "repos.rc.url = '{url}'\nsets.demo.rc = '{c0}'\n",
        "[repos.rc]\nurl = '{url}'\n\n[sets]\n",
    ],
    ids=["tables out of order", "inline tables", "inline set in a [sets] table", "dotted keys", "empty [sets]"],
)
def test_new_set_in_every_layout_of_the_sets(history, layout):
    text = "version = 1\n" + layout.format(url=history.url, c0=history.c[0])
    history.lock.write_text(text)
    assert main(["new", "fresh"]) == 0
    after = history.text()
    lock = load_lockfile(history.lock)
    assert lock.get_set("fresh").pin("rc").commit == history.c[4]
    assert {name: spec.pins for name, spec in lock.sets.items() if name != "fresh"} == {
        name: spec.pins for name, spec in parse_lockfile(text, history.lock).sets.items()
    }
    kept = iter(after)
    assert all(char in kept for char in text), "every existing character is kept, in order: only additions"


def test_status_fetch_shows_every_row_when_one_remote_fails(history, make_repo, capsys):
    second = make_repo("second")
    head = git_commit(second, {"a.py": "a = 1\n"})
    history.lock.write_text(
        history.text().replace("[sets.demo]", f'[repos.gone]\nurl = "file://{second}"\n\n[sets.demo]')
        + f'gone = "{head}"\n'
    )
    assert main(["status", "--fetch"]) == 0
    capsys.readouterr()
    second.rename(second.with_name("moved-away"))
    git_commit(history.remote, {"nn.py": "VERSION = 'newer'\n"}, "newer")
    result = standing(fetch=True)
    assert result.exit_code == 5, "a failed fetch is an error"
    rows = [(record["set"], record["repo"], record["behind"]) for record in result.pins]
    assert rows[0] == ("demo", "rc", 5), "the reachable remote was fetched"
    assert rows[1] == ("other", "rc", 3)
    assert list(result.fetch_failures) == ["gone"]
    assert rows[2] == ("other", "gone", 0), "from the store"
    assert main(["status", "--fetch"]) == 5, "said after every row"
    captured = capsys.readouterr()
    assert captured.out.splitlines()[3].split()[4:7] == ["0", "(fetch", "failed)"]
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"pin: error: gone: cannot fetch file://{second}: ")
    assert captured.err.endswith("(its rows show the store as last fetched)\n")

    assert main(["status", "--fetch", "--json"]) == 5
    records = json.loads(capsys.readouterr().out)["pins"]
    assert [(r["repo"], bool(r["fetch_error"])) for r in records] == [("rc", False), ("rc", False), ("gone", True)]


def test_a_mirror_keeps_a_commit_graph_for_status_to_walk_its_history_fast(history, store_dir, capsys):
    from sispin.git.store import Store

    assert main(["status", "--fetch"]) == 0
    info = Store().mirror(history.url) / "objects" / "info"
    assert (info / "commit-graph").is_file() or (info / "commit-graphs").is_dir(), sorted(os.listdir(info))
    git_commit(history.remote, {"nn.py": "VERSION = 5\n"}, "another")
    assert main(["status", "--fetch"]) == 0 and "5 (1 release)   main" in capsys.readouterr().out


def test_a_branch_the_mirror_lacks_is_a_note_not_a_bare_question_mark(history, store_dir, capsys):
    history.lock.write_text(history.text().replace('branch = "main"', 'branch = "nope"'))
    assert main(["status", "--fetch"]) == 0  # the mirror is fetched (every branch of the remote)
    capsys.readouterr()
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "note: rc: branch 'nope' is not in the store's mirror" in out and "BEHIND is unknown" in out, out
