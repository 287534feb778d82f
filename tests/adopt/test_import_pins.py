"""``pin import``: static discovery of hand-written CloneGitRepositoryJob pins, proposals, --write, job ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RECIPE_DIR
from sispin.adopt.follow import scan_paths
from sispin.adopt.scan import Overwrite, scan_source
from sispin.cli.main import main
from sispin.lock.loading import load_lockfile
from sispin.ops.import_pins import ImportResult, import_pins

RC = "https://github.com/rwth-i6/returnn_common"
SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
SHA2 = "1ce99b3fb3d20e4cb49ec9ac528aa58d1cbe53cd"

FORMS = f"""\
from i6_core.tools.git import CloneGitRepositoryJob
from i6_core.tools.git import CloneGitRepositoryJob as Clone
import i6_core.tools.git as git_tools
import i6_core.tools.git
from i6_core.tools import git
from i6_core import tools
from recipe.i6_core.tools.git import CloneGitRepositoryJob as LegacyClone

URL = "{RC}"
COMMIT = "{SHA}"


def py():
    a = CloneGitRepositoryJob(URL, commit=COMMIT)
    b = Clone(url=URL, commit=COMMIT, checkout_folder_name="returnn_common")
    c = git_tools.CloneGitRepositoryJob(URL, None, COMMIT, "returnn_common")
    d = i6_core.tools.git.CloneGitRepositoryJob(URL, commit=COMMIT)
    e = git.CloneGitRepositoryJob(URL, commit=COMMIT, clone_submodules=True, files_to_checkout=["nn"])
    f = tools.git.CloneGitRepositoryJob(URL, branch="main", commit=COMMIT)
    g = LegacyClone(URL, commit=COMMIT)
    h = other_module.CloneJob(URL, commit=COMMIT)
"""

RISKS = f"""\
from i6_core.tools.git import CloneGitRepositoryJob


def unpinned():
    return CloneGitRepositoryJob("{RC}")


def short():
    return CloneGitRepositoryJob("{RC}", commit="d1fc1c7")


def overwritten_through_the_job():
    job = CloneGitRepositoryJob("{RC}", commit="{SHA}")
    job.out_repository.hash_overwrite = "RETURNN_COMMON_ROOT"


def overwritten_through_the_path():
    path = CloneGitRepositoryJob("{RC}", commit="{SHA}").out_repository
    path.hash_overwrite = "RETURNN_COMMON_ROOT"


def overwritten_directly():
    CloneGitRepositoryJob("{RC}", commit="{SHA}").out_repository.hash_overwrite = "X"


def same_name_in_another_scope():
    job = 3
    job.hash_overwrite = "not a clone"


def computed(name):
    return CloneGitRepositoryJob(f"https://github.com/rwth-i6/{{name}}", commit=COMMIT_OF[name])


def splatted(args, kwargs):
    return CloneGitRepositoryJob(*args, **kwargs)
"""


def test_every_import_and_call_form_is_found():
    sites = scan_source(FORMS, "forms.py")
    assert [s.line for s in sites] == [14, 15, 16, 17, 18, 19, 20]
    for site in sites:
        assert site.url == RC and site.commit == SHA and site.risks == [] and site.literal
    assert sites[1].arguments["checkout_folder_name"] == "returnn_common"
    assert sites[2].positional == 4 and sites[2].arguments["branch"] is None
    assert sites[4].arguments["files_to_checkout"] == ["nn"] and sites[4].arguments["clone_submodules"] is True
    assert sites[5].arguments["branch"] == "main"


def test_each_risk_is_reported():
    risks = {site.line: site.risks for site in scan_source(RISKS, "risks.py")}
    assert risks[5] == ["no commit: follows the default branch (unpinned)"]
    assert risks[9] == ["commit 'd1fc1c7' is not a full 40-hex SHA"]
    assert risks[13] == ["hash_overwrite assigned on its output (line 14)"]
    assert risks[18] == ["hash_overwrite assigned on its output (line 19)"]
    assert risks[23] == ["hash_overwrite assigned on its output (line 23)"]
    overwrites = {site.line: site.overwrites for site in scan_source(RISKS, "risks.py")}
    assert overwrites[13] == [Overwrite("risks.py", 14, "RETURNN_COMMON_ROOT")] and overwrites[5] == []
    assert risks[32] == [
        "url is not a literal (f'https://github.com/rwth-i6/{name}')",
        "commit is not a literal (COMMIT_OF[name])",
    ]
    assert risks[36] == [
        "uses *args: not all arguments can be read",
        "uses **kwargs: not all arguments can be read",
        "no commit: follows the default branch (unpinned)",
    ]


CONSTANTS = f"""\
from i6_core.tools.git import CloneGitRepositoryJob

URL = "{RC}"
COMMIT = "{SHA}"
PATCH = "diff --git a/x b/x"
GROWN = "{RC}"
GROWN += ".git"
CHANGED = "{RC}"
if CHANGED:
    CHANGED = "https://github.com/someone/else"
LOOPED = "{RC}"
for LOOPED in ("a", "b"):
    pass
DECLARED = "{RC}"


def set_declared():
    global DECLARED
    DECLARED = "https://github.com/someone/else"


listed = CloneGitRepositoryJob(URL, commit=COMMIT, patches=[PATCH], files_to_checkout=[PATCH, "nn"])
grown = CloneGitRepositoryJob(GROWN, commit=COMMIT)
changed = CloneGitRepositoryJob(CHANGED, commit=COMMIT)
looped = CloneGitRepositoryJob(LOOPED, commit=COMMIT)
declared = CloneGitRepositoryJob(DECLARED, commit=COMMIT)


def shadowed(URL, COMMIT="{SHA2}"):
    PATCH = "local"
    return CloneGitRepositoryJob(URL, commit=COMMIT, patches=[PATCH])
"""


def test_module_constants_resolve_inside_lists_and_a_rebound_name_is_no_constant():
    sites = {site.line: site for site in scan_source(CONSTANTS, "constants.py")}
    assert sites[22].arguments == {
        "url": RC,
        "commit": SHA,
        "patches": ["diff --git a/x b/x"],
        "files_to_checkout": ["diff --git a/x b/x", "nn"],
    }
    assert sites[22].risks == []
    # += and a second binding (in an if, a loop, a function's global statement) make the value unknown here
    assert [sites[line].expressions for line in (23, 24, 25, 26)] == [
        {"url": "GROWN"},
        {"url": "CHANGED"},
        {"url": "LOOPED"},
        {"url": "DECLARED"},
    ]
    # a function's own names hide the module's constants of the same name
    assert sites[31].expressions == {"url": "URL", "commit": "COMMIT", "patches": "[PATCH]"}


OVERWRITES = f"""\
from i6_core.tools.git import CloneGitRepositoryJob

NAME = "RC_ROOT"
job = CloneGitRepositoryJob("{RC}", commit="{SHA}")
job.out_repository.hash_overwrite = NAME
root = job.out_repository.copy()
root.hash_overwrite = ("creator", "path")
copied = root.join_right("sub")
copied.hash_overwrite = compute_name()
job.out_repository.hash_overwrite = None  # no overwrite: the path hashes its job again


class Tools:
    def use(self):
        self.root.hash_overwrite = "LATER"

    def __init__(self):
        self.root = CloneGitRepositoryJob("{RC}", commit="{SHA2}").out_repository
"""


def test_each_overwrite_is_recorded_with_its_line_and_literal_value():
    first, second = scan_source(OVERWRITES, "o.py")
    assert first.overwrites == [
        Overwrite("o.py", 5, "RC_ROOT"),
        Overwrite("o.py", 7, ("creator", "path")),
        Overwrite("o.py", 9, None),  # not a literal
    ]
    assert first.risks == [f"hash_overwrite assigned on its output (line {line})" for line in (5, 7, 9)]
    assert second.overwrites == [Overwrite("o.py", 15, "LATER")]  # set in one method, bound in another


def test_scan_of_a_tree_skips_unrelated_files_and_reports_broken_ones(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "forms.py").write_text(FORMS)
    (tmp_path / "pkg" / "sub" / "plain.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "broken.py").write_text("CloneGitRepositoryJob(\n")
    (tmp_path / "pkg" / "notes.txt").write_text("CloneGitRepositoryJob('x')\n")
    sites, warnings = scan_paths([tmp_path / "pkg"])
    assert len(sites) == 7
    assert len(warnings) == 1 and "broken.py:1: not valid Python, skipped" in warnings[0]


@pytest.fixture
def tree(tmp_path, write_lock):
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "forms.py").write_text(FORMS)
    (tmp_path / "recipes" / "risks.py").write_text(RISKS)
    return tmp_path / "recipes"


@pytest.fixture
def sisyphus_on_pythonpath(real_sisyphus, monkeypatch):
    """The real Sisyphus on PYTHONPATH (no [setup.*]), as many users have it; i6_core in the setup's recipe/."""

    def in_setup(root):
        (root / "recipe").mkdir(exist_ok=True)
        (root / "recipe" / "i6_core").symlink_to(RECIPE_DIR / "i6_core")

    monkeypatch.setenv("PYTHONPATH", str(real_sisyphus))
    return in_setup


def report(*paths: str, set_name: str = "exp", write: bool = False) -> ImportResult:
    """``pin import PATH ... --set NAME``'s use case: what it found, proposes (and wrote)"""
    return import_pins([Path(path) for path in paths], set_name=set_name, write=write)


def by_place(result: ImportResult) -> dict:
    """:return: (file name, line) -> the call found there"""
    return {(call.site.file.rsplit("/", 1)[-1], call.site.line): call for call in result.calls}


def test_proposal_groups_by_repository_and_lists_what_cannot_be_adopted(tree, write_lock, sisyphus_on_pythonpath):
    sisyphus_on_pythonpath(write_lock("version = 1\n").parent)
    result = report(str(tree))
    assert result.problems and result.unconfirmed is None
    # one entry per distinct job: another checkout folder or other job arguments get an entry of their own
    assert result.proposal.repos == {
        "returnn_common": {"url": RC},
        "returnn_common_f7ad63a": {"url": RC, "checkout": "returnn_common"},
        "returnn_common_clone_submodules_files_to_checkout": {"url": RC},
        "returnn_common_branch": {"url": RC, "branch": "main"},
    }
    assert result.proposal.pins["returnn_common"] == SHA
    assert [call.site.line for call in result.calls if call.entry] == [14, 15, 16, 17, 18, 19, 20, 13, 18, 23]
    calls = by_place(result)
    assert calls[("forms.py", 14)].status == "adopt" and calls[("risks.py", 13)].status == "note"
    assert {calls[("risks.py", line)].status for line in (5, 9, 32)} == {"blocked"}
    kinds = {place: [reason.kind for reason in call.reasons] for place, call in calls.items()}
    assert kinds[("risks.py", 5)] == ["no_commit"] and kinds[("risks.py", 9)] == ["short_sha"]
    assert kinds[("risks.py", 13)] == ["hash_overwrite"] and kinds[("forms.py", 14)] == []
    problems = "\n".join(map(str, result.problems))
    assert "risks.py:5: not adopted: it pins no commit: follows the default branch (unpinned)" in problems
    assert "risks.py:9: not adopted: it pins no full commit (commit 'd1fc1c7' is not a full 40-hex SHA)" in problems
    assert "risks.py:32: not adopted: its arguments are not all literals" in problems
    notes = "\n".join(result.notes)
    assert "risks.py:13: hash_overwrite assigned on its output (line 14): jobs using that output hash" in notes


def test_write_round_trips_and_never_overwrites(tree, write_lock, sisyphus_on_pythonpath, capsys):
    lock = write_lock(
        "# my setup\nversion = 1\n\n"
        f'[repos.returnn_common]  # model code\nurl = "{RC}"\nbranch = "main"\n\n'
        f'[sets.exp]\nreturnn_common = "{SHA2}"  # chosen by hand\n'
    )
    sisyphus_on_pythonpath(lock.parent)
    before = lock.read_text()
    only = tree / "only.py"
    only.write_text(
        f"from i6_core.tools.git import CloneGitRepositoryJob\nj = CloneGitRepositoryJob('{RC}', commit='{SHA}')\n"
    )
    # the set exists: the proposal shows what is added to it, not a set of its own
    assert main(["import", str(only), "--set", "exp"]) == 0
    proposed = capsys.readouterr().out.split("proposed for pin.toml")[1]
    assert proposed.startswith(" (added to the existing [sets.exp]; nothing there changes):\n")
    assert f'[sets.exp]\nreturnn_common_f7ad63a = "{SHA}"' in proposed and "configs" not in proposed
    # the set pins another commit already: a second entry of the repository keeps both, the old pin is not touched
    assert main(["import", str(only), "--set", "exp", "--write"]) == 0
    assert "pin.toml: added 1 repository and 1 pin of set 'exp'" in capsys.readouterr().out
    text = lock.read_text()
    kept = iter(text.splitlines())
    assert all(line in kept for line in before.splitlines()), "existing lines and comments are kept, in order"
    lockfile = load_lockfile(lock)
    assert lockfile.get_set("exp").pin("returnn_common").commit == SHA2, "an existing pin is never overwritten"
    assert lockfile.get_set("exp").pin("returnn_common_f7ad63a").commit == SHA

    result = report(str(only), set_name="fresh", write=True)
    assert result.written == "pin.toml: added 0 repositories and 1 pin of set 'fresh'" and not result.problems
    text = lock.read_text()
    assert load_lockfile(lock).get_set("fresh").pin("returnn_common").commit == SHA

    assert not report(str(only), set_name="fresh", write=True).problems
    assert lock.read_text() == text, "a second import adds nothing"


def test_write_creates_a_lockfile_and_pin_tables(tmp_path, monkeypatch, sisyphus_on_pythonpath):
    monkeypatch.chdir(tmp_path)
    sisyphus_on_pythonpath(tmp_path)
    (tmp_path / "only.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"j = CloneGitRepositoryJob('{RC}.git', commit='{SHA}', branch='main', clone_submodules=True)\n"
    )
    result = report("only.py", write=True)
    assert not result.problems and result.written
    lock = load_lockfile(tmp_path / "pin.toml")
    assert lock.get_repo("returnn_common").url == RC + ".git"
    assert lock.get_repo("returnn_common").branch == "main"
    assert lock.get_set("exp").pin("returnn_common").job_kwargs == {"branch": "main", "clone_submodules": True}
    (call,) = result.calls
    assert call.job_ids[0] == call.job_ids[1] and call.job_ids[0].startswith("i6_core/tools/git/CloneGitRepositoryJob.")


def test_without_sisyphus_nothing_is_confirmed_and_nothing_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    (tmp_path / "only.py").write_text(
        f"from i6_core.tools.git import CloneGitRepositoryJob\nj = CloneGitRepositoryJob('{RC}', commit='{SHA}')\n"
    )
    assert main(["import", "only.py", "--set", "exp", "--write"]) == 9
    captured = capsys.readouterr()
    assert 'replace with: experiment_set("exp").repo("returnn_common")' in captured.out, "the report is still shown"
    assert captured.err.startswith("pin: error: job ids not checked: computing job ids failed: no Sisyphus to import")
    assert captured.err.endswith("(nothing written)\n") and captured.err.count("\n") == 1
    assert not (tmp_path / "pin.toml").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["import", "x.py", "--write"], "--write needs --set NAME"),
        (["import", "missing.py"], "missing.py: no such file or directory"),
        (["import", "x.py", "--set", "a b"], "--set 'a b': names may use only"),
    ],
)
def test_bad_arguments(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("")
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_replacement_job_ids_equal_the_originals(real_sisyphus, tree, write_lock, capsys):
    head = subprocess.check_output(["git", "-C", str(real_sisyphus), "rev-parse", "HEAD"], text=True).strip()
    lock = write_lock(
        f'version = 1\n\n[setup.sisyphus]\nurl = "file://{real_sisyphus}"\ncommit = "{head}"\npath = "tools/sisyphus"\n'
    )
    (lock.parent / "tools").mkdir()
    (lock.parent / "tools" / "sisyphus").symlink_to(real_sisyphus)
    (lock.parent / "recipe").mkdir()
    (lock.parent / "recipe" / "i6_core").symlink_to(RECIPE_DIR / "i6_core")
    (tree / "b.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"j = CloneGitRepositoryJob('https://github.com/rwth-i6/returnn', None, '{SHA}', 'rc', True, ['nn'], None)\n"
    )
    result = report(str(tree / "forms.py"), str(tree / "b.py"))
    checked = [call for call in result.calls if call.job_ids]
    assert [call.site.line for call in checked] == [14, 15, 16, 17, 18, 19, 20, 2]
    assert result.proposal.pins["returnn"] == {"commit": SHA, "clone_submodules": True, "files_to_checkout": ["nn"]}
    for call in checked:
        original, replacement = call.job_ids
        assert original == replacement and original.startswith("i6_core/tools/git/CloneGitRepositoryJob.")
    main(["import", str(tree / "forms.py"), "--set", "exp"])
    assert "(same job id i6_core/tools/git/CloneGitRepositoryJob." in capsys.readouterr().out


TOKEN = "ghp_" + "A1b2C3d4" * 5
GITLAB = "glpat-" + "x9Y8z7W6v5" * 2
SECRETS = f"""\
import os
from i6_core.tools.git import CloneGitRepositoryJob

USER = "me"
concatenated = CloneGitRepositoryJob("https://user:" + "{TOKEN}" + "@host/x", commit="{SHA}")
spread = CloneGitRepositoryJob("https://" + USER + ":" + "s3cr3t" + "@host/y", commit="{SHA}")
defaulted = CloneGitRepositoryJob(os.environ.get("RC_URL", "https://oauth2:{GITLAB}@host/z"), commit="{SHA}")
formatted = CloneGitRepositoryJob(f"https://{{USER}}:{TOKEN}@host/w", commit="{SHA}")
literal = CloneGitRepositoryJob("me:s3cr3t@host:rc.git", commit="{SHA}")
in_a_path = CloneGitRepositoryJob("https://host/{TOKEN}/rc", commit="{SHA}")
"""


def test_no_secret_found_in_the_code_is_ever_printed_or_written(tmp_path, write_lock, capsys):
    lock = write_lock("version = 1\n")
    (tmp_path / "secrets.py").write_text(SECRETS)
    assert main(["import", str(tmp_path / "secrets.py"), "--set", "exp"]) == 1
    text = capsys.readouterr().out
    assert main(["import", str(tmp_path / "secrets.py"), "--set", "exp", "--json"]) == 1
    report = capsys.readouterr().out
    for shown in (text, report):
        for secret in (TOKEN, GITLAB, "s3cr3t"):
            assert secret not in shown
    assert "url is not a literal ('https://***' + '***' + '@host/x')" in text
    assert "url is not a literal (os.environ.get('RC_URL', 'https://***@host/z'))" in text
    assert "***@host:rc.git" in text and "https://host/***/rc" in text
    assert len(json.loads(report)["call_sites"]) == 6

    before = lock.read_text()
    assert main(["import", str(tmp_path / "secrets.py"), "--set", "exp", "--write"]) == 1
    out = capsys.readouterr().out
    assert "secrets.py:9: not adopted: the URL embeds credentials" in out
    assert "secrets.py:10: not adopted: the URL embeds credentials" in out
    assert lock.read_text() == before + "\n[sets.exp]\nconfigs = []\n", "nothing of the URLs, nor a masked one"


IMPORT = "from i6_core.tools.git import CloneGitRepositoryJob\n"
RETURNN = "https://github.com/rwth-i6/returnn"


def adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, source: str):
    monkeypatch.chdir(tmp_path)
    if not (tmp_path / "recipe").exists():
        sisyphus_on_pythonpath(tmp_path)
    (tmp_path / "c.py").write_text(source)
    result = report("c.py")
    return result, {call.site.line: call for call in result.calls}


def test_only_notes_exit_0_and_the_reason_is_the_blocking_one(tmp_path, monkeypatch, sisyphus_on_pythonpath, capsys):
    source = IMPORT + f"j = CloneGitRepositoryJob('{RC}', commit='{SHA}')\nj.out_repository.hash_overwrite = 'X'\n"
    result, calls = adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, source)
    assert calls[2].status == "note" and result.problems == [] and result.notes
    assert calls[2].site.overwrites == [Overwrite("c.py", 3, "X")]
    assert main(["import", "c.py", "--set", "exp"]) == 0, "notes alone exit 0"
    short = IMPORT + f"j = CloneGitRepositoryJob('{RC}', commit='d1fc1c7')\nj.out_repository.hash_overwrite = 'X'\n"
    result, calls = adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, short)
    assert calls[2].status == "blocked"
    assert [str(problem) for problem in result.problems] == [
        "c.py:2: not adopted: it pins no full commit (commit 'd1fc1c7' is not a full 40-hex SHA)"
    ]
    assert main(["import", "c.py", "--set", "exp"]) == 1, "a blocked call exits 1"


def test_an_uppercase_sha_and_an_unimported_name_are_blocked(tmp_path, monkeypatch, sisyphus_on_pythonpath):
    source = IMPORT + f"a = CloneGitRepositoryJob('{RC}', commit='{SHA.upper()}')\n"
    result, calls = adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, source)
    assert [reason.kind for reason in calls[2].reasons] == ["uppercase_sha"]
    assert "is a full SHA in uppercase: pin.toml needs it lowercase" in calls[2].reasons[0].message
    assert calls[2].site.risks == [
        f"commit '{SHA.upper()}' is a full SHA in uppercase (git and pin.toml need it lowercase)"
    ]

    bare = f"x = CloneGitRepositoryJob('{RC}', commit='{SHA}')\n"
    result, calls = adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, bare)
    assert result.problems and calls[1].status == "blocked" and calls[1].reasons[0].kind == "not_imported"
    star = "from i6_core.tools.git import *\n" + bare
    result, calls = adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, star)
    assert not result.problems and calls[2].status == "adopt"


def test_several_commits_and_folders_of_one_url_get_entries_of_their_own(tmp_path, monkeypatch, sisyphus_on_pythonpath):
    source = IMPORT + (
        f"a = CloneGitRepositoryJob('{RETURNN}', commit='{SHA}')\n"
        f"b = CloneGitRepositoryJob('{RETURNN}', commit='{SHA2}')\n"
        f"c = CloneGitRepositoryJob('{RETURNN}', commit='{SHA}', checkout_folder_name='rt')\n"
        f"d = CloneGitRepositoryJob('{RETURNN}.git', commit='{SHA}')\n"
        f"e = CloneGitRepositoryJob('git@github.com:rwth-i6/returnn.git', commit='{SHA2}')\n"
        f"f = CloneGitRepositoryJob('https://github.com/someone/returnn', commit='{SHA}')\n"
        f"g = CloneGitRepositoryJob('{RETURNN}', commit='{SHA}')\n"
    )
    result, calls = adopt_report(tmp_path, monkeypatch, sisyphus_on_pythonpath, source)
    assert not result.problems, result.problems
    assert {line: call.entry for line, call in calls.items()} == {
        2: "returnn",
        3: "returnn_1ce99b3",
        4: "returnn_rt",
        5: "returnn_f7ad63a",  # another spelling: its own entry (the URL is hashed verbatim)
        6: "returnn_1ce99b3_2",
        7: "someone_returnn",  # another owner's repository of the same name
        8: "returnn",
    }
    assert result.proposal.repos["returnn_rt"] == {"url": RETURNN, "checkout": "rt"}
    assert result.by_file == {
        "c.py": ["returnn", "returnn_1ce99b3", "returnn_rt", "returnn_f7ad63a", "returnn_1ce99b3_2", "someone_returnn"]
    }
    assert all(call.job_ids and call.job_ids[0] == call.job_ids[1] for call in result.calls)


SUBWORD = "https://github.com/rwth-i6/subword-nmt"
HELPERS = f"""\
from i6_core.tools.git import CloneGitRepositoryJob


def get_returnn_subword_nmt(commit_hash, output_prefix=""):
    job = CloneGitRepositoryJob("{SUBWORD}", commit=commit_hash, checkout_folder_name="subword-nmt")
    return job.out_repository


def get_returnn(commit, *, submodules=False):
    return CloneGitRepositoryJob("{RETURNN}", None, commit).out_repository


class Holder:
    def method(self, commit):
        return CloneGitRepositoryJob("{RETURNN}", commit=commit)
"""
USERS = f"""\
from helpers import get_returnn_subword_nmt, get_returnn
import helpers

SUBWORD_COMMIT = "{SHA}"


def py(commit_of):
    a = get_returnn_subword_nmt(commit_hash="{SHA}")
    b = get_returnn_subword_nmt(SUBWORD_COMMIT, output_prefix="x")
    c = helpers.get_returnn("{SHA2}")
    d = get_returnn(commit="{SHA}")
    e = get_returnn_subword_nmt(commit_hash=commit_of["subword"])  # no literal commit here: not a pin
    f = get_returnn_subword_nmt(commit_hash="{SHA2[:7]}")
"""


def test_pins_passed_through_a_helper_are_reported_at_the_call(tmp_path, monkeypatch, sisyphus_on_pythonpath, capsys):
    monkeypatch.chdir(tmp_path)
    sisyphus_on_pythonpath(tmp_path)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "helpers.py").write_text(HELPERS)
    (tmp_path / "tree" / "users.py").write_text(USERS)
    result = report("tree")
    sites = [(call.site.file, call.site.line, call.status, call.entry) for call in result.calls]
    assert sites == [
        ("tree/helpers.py", 5, "note", None),  # the helpers' own calls: their commit is a parameter
        ("tree/helpers.py", 10, "note", None),
        ("tree/helpers.py", 15, "blocked", None),  # a method: not followed
        ("tree/users.py", 8, "adopt", "subword-nmt"),
        ("tree/users.py", 9, "adopt", "subword-nmt"),
        ("tree/users.py", 10, "adopt", "returnn"),
        ("tree/users.py", 11, "adopt", "returnn_f7ad63a"),
        ("tree/users.py", 13, "blocked", None),
    ]
    helper = result.calls[3]
    assert helper.site.helper == "get_returnn_subword_nmt(commit_hash=...), whose clone is at tree/helpers.py:5"
    assert helper.job_ids and helper.job_ids[0] == helper.job_ids[1]
    assert result.proposal.repos["subword-nmt"] == {"url": SUBWORD, "checkout": "subword-nmt"}
    assert result.proposal.pins == {"subword-nmt": SHA, "returnn": SHA2, "returnn_f7ad63a": SHA}
    assert "tree/users.py:13: not adopted: it pins no full commit (commit '1ce99b3' is not" in "\n".join(
        map(str, result.problems)
    )
    main(["import", "tree", "--set", "exp"])
    out = capsys.readouterr().out
    assert "found 8 CloneGitRepositoryJob calls in 2 files" in out
    assert "    through helper get_returnn(commit=...), whose clone is at tree/helpers.py:10" in out
    assert 'pass experiment_set("exp").commit("returnn") as the commit  (same job id' in out


def test_a_directory_needing_several_commits_shows_the_entries_per_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp1.py").write_text(IMPORT + f"CloneGitRepositoryJob('{RETURNN}', commit='{SHA}')\n")
    (tmp_path / "exp2.py").write_text(IMPORT + f"CloneGitRepositoryJob('{RETURNN}', commit='{SHA2}')\n")
    (tmp_path / "exp3.py").write_text(IMPORT + f"CloneGitRepositoryJob('{RC}', commit='{SHA}')\n")
    assert main(["import", ".", "--set", "exp"]) == 9  # without Sisyphus: the report is printed all the same
    assert (
        "entries each file uses (to make one set per file instead: pin import FILE --set NAME):\n"
        "    ./exp1.py: returnn\n    ./exp2.py: returnn_1ce99b3\n    ./exp3.py: returnn_common\n"
    ) in capsys.readouterr().out
    (tmp_path / "exp2.py").unlink()
    main(["import", ".", "--set", "exp"])
    assert "entries each file uses" not in capsys.readouterr().out, "one entry per repository: nothing to split"


def test_a_name_defined_as_a_helper_in_two_files_is_followed_to_the_one_each_call_imports(tmp_path):
    helper = IMPORT + "def dup(commit):\n    return CloneGitRepositoryJob('{}', commit=commit)\n"
    (tmp_path / "one.py").write_text(helper.format(RETURNN))
    (tmp_path / "two.py").write_text(helper.format(RC))
    (tmp_path / "nested.py").write_text(
        IMPORT
        + f"def outer():\n    def inner(commit):\n        return CloneGitRepositoryJob('{RETURNN}', commit=commit)\n"
    )
    (tmp_path / "calls.py").write_text(f"from one import dup\n\ndup('{SHA}')\n")
    (tmp_path / "module.py").write_text(f"import two as helpers\n\nhelpers.dup('{SHA}')\n")
    (tmp_path / "bare.py").write_text(f"dup('{SHA}')\ninner('{SHA}')\n")  # imports neither: not followed
    sites, _ = scan_paths([tmp_path])
    assert [(site.file.rsplit("/", 1)[-1], site.line, site.url, site.helper, site.followed) for site in sites] == [
        ("calls.py", 3, RETURNN, f"dup(commit=...), whose clone is at {tmp_path}/one.py:3", False),
        ("module.py", 3, RC, f"dup(commit=...), whose clone is at {tmp_path}/two.py:3", False),
        ("nested.py", 4, RETURNN, None, False),  # a nested function's parameters come from elsewhere
        ("one.py", 3, RETURNN, None, True),
        ("two.py", 3, RC, None, True),
    ]


def test_a_config_is_followed_into_the_setups_recipe_folder_as_sisyphus_imports_it(tmp_path):
    (tmp_path / "recipe" / "helpers").mkdir(parents=True)
    (tmp_path / "config").mkdir()
    (tmp_path / "recipe" / "helpers" / "__init__.py").write_text("")
    (tmp_path / "recipe" / "helpers" / "tools.py").write_text(
        IMPORT + f"def get_rc(commit):\n    return CloneGitRepositoryJob('{RC}', commit=commit)\n"
    )
    (tmp_path / "config" / "exp.py").write_text(f"from helpers.tools import get_rc\n\nget_rc('{SHA}')\n")
    sites, _ = scan_paths([tmp_path / "config", tmp_path / "recipe"])
    assert [(site.line, site.commit, site.helper) for site in sites] == [
        (3, SHA, f"get_rc(commit=...), whose clone is at {tmp_path}/recipe/helpers/tools.py:3"),
        (3, None, None),
    ]


SCTK = "https://github.com/usnistgov/SCTK.git"
#: a recipe package in miniature, after i6_experiments: helpers that return a clone's output (or job), take its commit
#: as a parameter with literal defaults, are defined twice under one name, and are imported in every way
PACKAGE = {
    "exps/__init__.py": "",
    "exps/tools.py": f"""\
from i6_core.tools.git import CloneGitRepositoryJob
from i6_core.tools.compile import MakeJob

RC = "{RC}"
SCTK = "{SCTK}"


def get_tool():
    return CloneGitRepositoryJob(RC, commit="{SHA}").out_repository  # [clone-tool]


def get_job():
    job = CloneGitRepositoryJob(RC, commit="{SHA2}", checkout_folder_name="rc")  # [clone-job]
    return job


def get_rc(commit, folder="returnn_common"):
    return CloneGitRepositoryJob(RC, commit=commit, checkout_folder_name=folder).out_repository.copy()  # [clone-rc]


def compile_sctk(url=SCTK, branch=None, commit=None):
    repo = CloneGitRepositoryJob(url=url, branch=branch, commit=commit).out_repository  # [clone-sctk]
    return MakeJob(folder=repo).out_links["bin"]


def get_fixed(commit=None):
    commit = commit or "{SHA}"  # reassigned: what a call gives is not what the clone gets
    return CloneGitRepositoryJob(RC, commit=commit).out_repository  # [clone-fixed]


DEFAULT_RC = get_rc("{SHA2}")  # [local-call]
SHARED_ROOT = CloneGitRepositoryJob(RC, commit="{SHA}", checkout_folder_name="shared").out_repository.copy()  # [shared]
SHARED_JOB = CloneGitRepositoryJob(RC, commit="{SHA2}", checkout_folder_name="shared")  # [shared-job]
JOB = get_job()
""",
    "exps/other/__init__.py": "",
    "exps/other/tools.py": f"""\
from i6_core.tools.git import CloneGitRepositoryJob


def get_rc(commit):
    return CloneGitRepositoryJob("{RETURNN}", commit=commit).out_repository  # [other-rc]
""",
    "exps/pkg/__init__.py": "from ..tools import get_rc, SHARED_ROOT  # re-exported\n",
    # set overwrites in place on objects the module tools binds (they mention no clone and no helper): by name
    "exps/shares.py": """\
from exps.tools import DEFAULT_RC, JOB, SHARED_ROOT as ROOT
from exps.pkg import SHARED_ROOT as VIA_PACKAGE

DEFAULT_RC.hash_overwrite = "RC_SHARED"  # [ow-shared-rc]
ROOT.hash_overwrite = "ROOT_SHARED"  # [ow-shared-root]
VIA_PACKAGE.hash_overwrite = "PACKAGE_SHARED"  # [ow-shared-package]
JOB.out_repository.hash_overwrite = "JOB_VIA_HELPER"  # [ow-shared-helper]


def not_shared(ROOT):
    ROOT.hash_overwrite = "PARAMETER"  # a parameter of the same name: not the import
""",
    # ... and as attributes of the module
    "exps/shares_by_module.py": """\
from . import tools
import exps.tools

tools.SHARED_JOB.out_repository.hash_overwrite = "JOB_SHARED"  # [ow-shared-job]
copied = exps.tools.SHARED_ROOT.copy()
copied.hash_overwrite = "COPY_SHARED"  # [ow-shared-copy]
tools.SHARED_JOB.hash_overwrite = "A_JOB"  # a job has no hash_overwrite of its own: no path's hash changes
""",
    "exps/users_abs.py": f"""\
from exps.tools import compile_sctk, get_fixed, get_rc, get_tool
from exps import tools

COMMIT = "{SHA}"

root = get_tool()
root.hash_overwrite = "TOOL_ROOT"  # [ow-tool]
rc = get_rc(COMMIT).copy()  # [call-rc]
rc.hash_overwrite = "RC_V2"  # [ow-rc]
named = tools.get_rc(commit="{SHA2}", folder="rc2")  # [call-named]
named.join_right("sub").hash_overwrite = "SUB"  # [ow-named]
sctk = compile_sctk(branch="v2.4.12").copy()  # [call-sctk]
sctk.hash_overwrite = "SCTK_BINARY"  # the MakeJob's output: no clone's
pinned = compile_sctk(commit="{SHA}")  # [call-pinned]
computed = compile_sctk(commit=COMMIT, branch=pick())  # [call-computed]
unpinned = get_rc(choose())  # no literal commit: no clone made here, but the helper's clone is what it returns
unpinned.hash_overwrite = "UNPINNED"  # [ow-unpinned]
fixed = get_fixed("{SHA2}")
fixed.hash_overwrite = "FIXED"  # [ow-fixed]
""",
    "exps/users_rel.py": f"""\
from .tools import get_rc as rc, get_job
from .other import tools as other_tools
from . import tools


def build():
    a = rc("{SHA}")  # [rel-alias]
    b = other_tools.get_rc("{SHA}")  # [rel-other]
    c = tools.get_job().out_repository
    c.hash_overwrite = "JOB"  # [ow-job]
    d = get_job().out_repository.copy_append("x")
    d.hash_overwrite = "JOB2"  # [ow-job2]
""",
    "exps/users_star.py": f"from exps.other.tools import *\n\nget_rc('{SHA2}')  # [star]\n",
    "exps/users_reexport.py": f"from exps.pkg import get_rc\n\nget_rc('{SHA2}', 'x')  # [reexport]\n",
    "exps/calls.py": f"get_rc('{SHA}')  # imports no get_rc: not followed\n",
    "exps/shadowing.py": f"""\
from exps.tools import get_rc


def get_rc(commit):  # its own get_rc, which the call below names
    return commit


get_rc("{SHA}")
""",
}


def write_package(root) -> None:
    for name, text in PACKAGE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def at(marker: str) -> str:
    """file:line of the line a marker comment is on, in PACKAGE (below recipe/)"""
    for name, text in PACKAGE.items():
        for number, line in enumerate(text.splitlines(), 1):
            if line.endswith(f"# [{marker}]"):
                return f"recipe/{name}:{number}"
    raise KeyError(marker)


def shown(site) -> tuple:
    extra = {k: v for k, v in site.arguments.items() if k not in ("url", "commit")}
    return (site.where, site.url, site.commit, extra, site.expressions, [f"{o.file}:{o.line}" for o in site.overwrites])


def test_helpers_are_followed_through_each_files_imports_with_their_defaults_and_what_they_return(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    write_package(tmp_path / "recipe")
    sites, warnings = scan_paths([Path("recipe/exps")])
    assert warnings == []
    folder, shared = {"checkout_folder_name": "returnn_common"}, {"checkout_folder_name": "shared"}
    assert [shown(site) for site in sites] == [
        (at("clone-tool"), RC, SHA, {}, {}, [at("ow-tool")]),
        # overwrites in a stable order: by file (in scan order), then line; whichever was found first
        (
            at("clone-job"),
            RC,
            SHA2,
            {"checkout_folder_name": "rc"},
            {},
            [at(m) for m in ("ow-shared-helper", "ow-job", "ow-job2")],
        ),
        (at("clone-rc"), RC, None, {}, {"commit": "commit", "checkout_folder_name": "folder"}, [at("ow-unpinned")]),
        (at("clone-sctk"), None, None, {}, {"url": "url", "branch": "branch", "commit": "commit"}, []),
        (at("clone-fixed"), RC, None, {}, {"commit": "commit"}, [at("ow-fixed")]),
        (at("local-call"), RC, SHA2, folder, {}, [at("ow-shared-rc")]),  # a helper called in its own module
        (at("shared"), RC, SHA, shared, {}, [at(m) for m in ("ow-shared-root", "ow-shared-package", "ow-shared-copy")]),
        (at("shared-job"), RC, SHA2, shared, {}, [at("ow-shared-job")]),
        (at("call-rc"), RC, SHA, folder, {}, [at("ow-rc")]),
        (at("call-named"), RC, SHA2, {"checkout_folder_name": "rc2"}, {}, [at("ow-named")]),
        # the helper's literal defaults where the call gives nothing: the URL (a module constant), no commit
        (at("call-sctk"), SCTK, None, {"branch": "v2.4.12"}, {}, []),
        (at("call-pinned"), SCTK, SHA, {"branch": None}, {}, []),
        (at("call-computed"), SCTK, SHA, {}, {"branch": "pick()"}, []),
        (at("reexport"), RC, SHA2, {"checkout_folder_name": "x"}, {}, []),
        (at("rel-alias"), RC, SHA, folder, {}, []),
        (at("rel-other"), RETURNN, SHA, {}, {}, []),  # the other get_rc: the one this file imports
        (at("star"), RETURNN, SHA2, {}, {}, []),
        (at("other-rc"), RETURNN, None, {}, {"commit": "commit"}, []),
    ]
    by_place = {site.where: site for site in sites}
    assert by_place[at("call-rc")].helper == f"get_rc(commit=...), whose clone is at {at('clone-rc')}"
    assert by_place[at("call-rc")].overwrites == [Overwrite(at("ow-rc").split(":")[0], int(at("ow-rc")[-1:]), "RC_V2")]
    assert by_place[at("clone-tool")].risks == [f"hash_overwrite assigned on its output ({at('ow-tool')})"]
    job_shared = at("ow-shared-job").split(":")
    assert by_place[at("shared-job")].overwrites == [Overwrite(job_shared[0], int(job_shared[1]), "JOB_SHARED")]
    assert by_place[at("shared-job")].risks == [f"hash_overwrite assigned on its output ({at('ow-shared-job')})"]
    assert by_place[at("call-sctk")].risks == ["no commit: follows branch 'v2.4.12' (unpinned)"]
    assert [by_place[at(m)].followed for m in ("clone-rc", "clone-sctk", "other-rc", "clone-tool", "clone-fixed")] == [
        True,
        True,
        True,
        False,
        False,  # its commit parameter is reassigned: calls of it are not followed
    ]

    # the helpers outside the scanned paths are found through the imports all the same (their own calls are not listed)
    outside, _ = scan_paths([Path("recipe/exps/users_abs.py")])
    assert [site.where for site in outside] == [
        at(m) for m in ("call-rc", "call-named", "call-sctk", "call-pinned", "call-computed")
    ]
    assert outside[0].helper == f"get_rc(commit=...), whose clone is at {at('clone-rc')}"


def test_a_helper_call_with_literal_defaults_is_adopted_with_the_same_job_id(
    tmp_path, monkeypatch, sisyphus_on_pythonpath, capsys
):
    monkeypatch.chdir(tmp_path)
    write_package(tmp_path / "recipe")
    sisyphus_on_pythonpath(tmp_path)
    result = report("recipe/exps/users_abs.py")
    sites = {call.site.where: call for call in result.calls}
    pinned, rc, sctk = sites[at("call-pinned")], sites[at("call-rc")], sites[at("call-sctk")]
    assert pinned.status == "adopt" and pinned.entry == "SCTK" and pinned.site.helper
    assert pinned.site.url == SCTK and pinned.job_ids and pinned.job_ids[0] == pinned.job_ids[1]
    assert rc.status == "note" and rc.job_ids[0] == rc.job_ids[1]
    assert rc.site.overwrites == [Overwrite("recipe/exps/users_abs.py", int(at("ow-rc").split(":")[1]), "RC_V2")]
    assert [reason.kind for reason in sctk.reasons] == ["no_commit"]
    main(["import", "recipe/exps/users_abs.py", "--set", "exp"])
    out = capsys.readouterr().out
    assert f"    through helper compile_sctk(commit=...), whose clone is at {at('clone-sctk')}\n" in out


def test_an_overwrite_on_an_object_of_another_module_is_reported_at_its_clone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_package(tmp_path / "recipe")
    result = report("recipe/exps")  # no Sisyphus: the ids unconfirmed, what the scan found all the same
    assert result.unconfirmed is not None
    site = next(call for call in result.calls if call.site.where == at("shared"))
    assert site.status == "note"
    assert [(o.file, o.value) for o in site.site.overwrites] == [
        ("recipe/exps/shares.py", "ROOT_SHARED"),
        ("recipe/exps/shares.py", "PACKAGE_SHARED"),
        ("recipe/exps/shares_by_module.py", "COPY_SHARED"),
    ]
    assert f"{at('shared')}: hash_overwrite assigned on its output ({at('ow-shared-root')}): jobs using" in "\n".join(
        result.notes
    )
    main(["import", "recipe/exps", "--set", "exp"])
    assert f"    risk: hash_overwrite assigned on its output ({at('ow-shared-copy')})\n" in capsys.readouterr().out


def test_only_regular_files_are_read(tmp_path):
    # reading a FIFO waits for a writer that never comes: a run in a subprocess, bounded, so a hang is a failure
    tree = tmp_path / "tree"
    tree.mkdir()
    os.mkfifo(tree / "trap.py")
    (tree / "null.py").symlink_to(os.devnull)
    (tree / "plain.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "named.py")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "sispin", "import", "tree", "named.py", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("pin import hangs on a FIFO named *.py")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["warnings"] == [
        "tree/null.py: not a regular file (a character device), skipped",
        "tree/trap.py: not a regular file (a FIFO), skipped",
        "named.py: not a regular file (a FIFO), skipped",
    ]
    text = subprocess.run(
        [sys.executable, "-m", "sispin", "import", "tree"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    ).stdout
    assert text.splitlines()[-2:] == [
        "warning: tree/null.py: not a regular file (a character device), skipped",
        "warning: tree/trap.py: not a regular file (a FIFO), skipped",
    ]


# a real patch: lines, a tab, a CRLF line, quotes (three in a row, one at the end), a backslash at a line's end
PATCH = (
    "diff --git a/nn.py b/nn.py\n--- a/nn.py\n+++ b/nn.py\n@@ -1,2 +1,2 @@\n" '-\tV = 0\r\n+\tV = """1"""  # \\\n x = "'
)
PATCHED_CALL = f'''\
from i6_core.tools.git import CloneGitRepositoryJob

j = CloneGitRepositoryJob(
    "{RC}",
    commit="{SHA}",
    patches=[
        """\\
diff --git a/README b/README
--- a/README
+++ b/README
@@ -1 +1 @@
-old
+new
""",
        {PATCH!r},
    ],
)
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_call_with_patches_is_adopted_and_its_patches_read_back_identical(
    tmp_path, monkeypatch, sisyphus_on_pythonpath, capsys, newline
):
    monkeypatch.chdir(tmp_path)
    sisyphus_on_pythonpath(tmp_path)
    (tmp_path / "pin.toml").write_bytes(f"# my setup{newline}version = 1{newline}".encode())
    (tmp_path / "c.py").write_text(PATCHED_CALL)
    patches = ["diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1 +1 @@\n-old\n+new\n", PATCH]
    assert main(["import", "c.py", "--set", "exp", "--write"]) == 0, capsys.readouterr()
    assert 'replace with: experiment_set("exp").repo("returnn_common")  (same job id' in capsys.readouterr().out
    text = (tmp_path / "pin.toml").read_bytes().decode()
    assert f'patches = ["""{newline}diff --git a/README b/README{newline}--- a/README{newline}' in text
    assert text.count("\r\n") == (text.count("\n") if newline == "\r\n" else 0), "the file's line endings"
    assert load_lockfile(tmp_path / "pin.toml").get_set("exp").pin("returnn_common").job_kwargs == {"patches": patches}
    # the job id again, now from the pin.toml written: the entry is taken as it is, and gives the call's job id
    result = report("c.py")
    assert not result.problems and result.proposal.repos == {} and result.proposal.pins == {}
    (call,) = result.calls
    assert call.entry == "returnn_common" and call.job_ids[0] == call.job_ids[1]
