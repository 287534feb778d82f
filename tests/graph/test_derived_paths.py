"""
The commit stays in every hash even through derived paths: a copy of a clone's output (``.copy()``,
``join_right``) that carries a ``hash_overwrite`` and sits anywhere in a job's hashed arguments (a dict, a list, an
object's attributes, a ``DelayedFormat``) is refused by ``pin snapshot`` and fails ``pin check``, naming the set,
the job, the outputs and the argument path. Real Sisyphus + i6_core, two sets pinning different commits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git_commit
from sispin.adopt.scan import scan_source
from sispin.cli.main import main
from sispin.graph.build import load_graph
from sispin.graph.snapshot import read_snapshot
from sispin.lock.loading import load_lockfile

# one config per set: every form a real setup uses to hide a clone's commit, each in its own output
CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk
from sisyphus.delayed_ops import DelayedFormat

from sispin import experiment_set

OVERWRITE = {overwrite!r}


def hidden(path):
    if OVERWRITE:
        path.hash_overwrite = OVERWRITE
    return path


class Holder:
    def __init__(self, path):
        self.path = path


def py():
    root = experiment_set("{set}").repo("rc")
    forms = {{
        "copy": {{"rc": hidden(root.copy())}},
        "join_right": {{"nested": {{"pkg": hidden(root.join_right("pkg"))}}}},
        "list": {{"paths": ["x", hidden(root.copy())]}},
        "attribute": {{"holder": Holder(hidden(root.join_right("a")))}},
    }}
    for name, config in forms.items():
        job = WriteReturnnConfigJob(ReturnnConfig(config, black_formatting=False))
        tk.register_output("{set}/" + name, job.out_returnn_config_file)
    prolog = ReturnnConfig({{}}, python_prolog=[DelayedFormat("sys.path.insert(0, {{!r}})", hidden(root.copy()))])
    tk.register_output("{set}/delayed", WriteReturnnConfigJob(prolog).out_returnn_config_file)
"""

FORMS = {
    "copy": "returnn_config.config['rc']",
    "join_right": "returnn_config.config['nested']['pkg']",
    "list": "returnn_config.config['paths'][1]",
    "attribute": "returnn_config.config['holder'].path",
    "delayed": "returnn_config.python_prolog[0].args[0]",
}


def _setup(real_setup, make_repo, overwrite) -> Path:
    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"VERSION = {i}\n"}, f"change {i}") for i in range(2)]
    tables = (
        f'[repos.rc]\nurl = "file://{remote}"\n\n'
        f'[sets.a]\nconfigs = ["config/a.py"]\nrc = "{commits[0]}"\n\n'
        f'[sets.b]\nconfigs = ["config/b.py"]\nrc = "{commits[1]}"\n'
    )
    return real_setup(tables, {f"{name}.py": CONFIG.format(set=name, overwrite=overwrite) for name in ("a", "b")})


@pytest.fixture
def escaped(real_setup, make_repo) -> Path:
    return _setup(real_setup, make_repo, "FIXED")


def test_without_overwrite_two_commits_give_two_ids_in_every_form(real_setup, make_repo):
    root = _setup(real_setup, make_repo, None)
    assert main(["snapshot"]) == 0
    snapshot = read_snapshot(root / "pin.snapshot.toml")
    for form in FORMS:
        assert snapshot["a"][f"a/{form}"].job != snapshot["b"][f"b/{form}"].job, form
    assert main(["check", "--offline"]) == 0


def test_snapshot_refuses_every_derived_form(escaped, capsys):
    assert main(["snapshot", "--verbose"]) == 7
    captured = capsys.readouterr()
    assert not (escaped / "pin.snapshot.toml").exists(), "nothing recorded"
    lines = captured.out.splitlines()
    problems = [line for line in lines if line.startswith("problem: ")]
    # one assignment (in hidden(), line 12) is one root cause per set, whatever number of jobs it hides the commit from
    assert len(problems) == 2, captured.out
    for set_name in ("a", "b"):
        line = next(line for line in problems if line.startswith(f"problem: sets.{set_name}: "))
        assert (
            f"hash_overwrite 'FIXED' set at config/{set_name}.py:12 on i6_core/tools/git/CloneGitRepositoryJob." in line
        )
        assert f"hides the commit from {len(FORMS)} jobs" in line and len(line) <= 300 + len("problem: ")
        for form, argument in FORMS.items():
            assert any(
                line.startswith("    i6_core/returnn/config/WriteReturnnConfigJob.")
                and f"(outputs: {set_name}/{form}) hashes {argument}, a path of i6_core/tools/git/"
                "CloneGitRepositoryJob." in line
                and "with hash_overwrite='FIXED': its id does not change with the commit" in line
                for line in lines
            ), (set_name, form, captured.out)
    assert captured.err.startswith("pin: error: 2 places in the job graph hide a pinned commit from a job's hash")


def test_check_fails_naming_set_output_and_path(escaped, capsys):
    lockfile = load_lockfile(escaped / "pin.toml")
    a, b = load_graph(lockfile, "a"), load_graph(lockfile, "b")
    assert a.outputs["a/copy"].job == b.outputs["b/copy"].job, "the hazard: two commits, one id"
    assert main(["check", "--offline", "--verbose", "a"]) == 1
    out = capsys.readouterr().out
    assert "problem: sets.a: " in out and "(outputs: a/copy) hashes returnn_config.config['rc']" in out
    assert "(rc " in out, "the repository and commit of the clone are named"


# hand-written clones whose outputs, or copies of them, get a hash_overwrite in every assignment form
HAND_WRITTEN = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import tk

URL = "{url}"


def use(name, path):
    job = WriteReturnnConfigJob(ReturnnConfig({{"root": path}}, black_formatting=False))
    tk.register_output(name, job.out_returnn_config_file)


class Tools:
    def __init__(self):
        self.root = CloneGitRepositoryJob(URL, commit="{c0}").out_repository.copy()

    def hide(self):
        self.root.hash_overwrite = "SELF_ATTRIBUTE"


def py():
    tools = Tools()
    tools.hide()
    use("attribute", tools.root)

    sub = CloneGitRepositoryJob(URL, commit="{c1}").out_repository.join_right("pkg")
    sub.hash_overwrite = "JOIN_RIGHT"
    use("join_right", sub)

    paths = {{"rc": CloneGitRepositoryJob(URL, commit="{c2}").out_repository}}
    paths["rc"].hash_overwrite = "DICT_ITEM"
    use("dict", paths["rc"])

    annotated: tk.Path = CloneGitRepositoryJob(URL, commit="{c3}", checkout_folder_name="a").out_repository
    annotated.hash_overwrite: str = "ANNOTATED"
    use("annotated", annotated)

    CloneGitRepositoryJob(URL, commit="{c4}", checkout_folder_name="b").out_repository.copy().hash_overwrite = "X"
    kept = CloneGitRepositoryJob(URL, commit="{c4}", checkout_folder_name="c").out_repository
    use("kept", kept)
"""


def test_pin_import_marks_every_form_that_real_sisyphus_shows_escaping(real_setup, make_repo):
    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"VERSION = {i}\n"}, f"change {i}") for i in range(5)]
    config = HAND_WRITTEN.format(url=f"file://{remote}", **{f"c{i}": c for i, c in enumerate(commits)})
    root = real_setup('[sets.s]\nconfigs = ["config/s.py"]\n', {"s.py": config})

    escapes = load_graph(load_lockfile(root / "pin.toml"), "s").escapes
    assert sorted(e.hash_overwrite for e in escapes) == ["ANNOTATED", "DICT_ITEM", "JOIN_RIGHT", "SELF_ATTRIBUTE"]
    flagged = [
        (site.commit, site.arguments.get("checkout_folder_name"))
        for site in scan_source(config, "s.py")
        if any(risk.startswith("hash_overwrite assigned") for risk in site.risks)
    ]
    assert flagged == [(commits[0], None), (commits[1], None), (commits[2], None), (commits[3], "a"), (commits[4], "b")]
