"""
The probe's report schema (:mod:`sispin.graph.probe.schema`), the one definition both sides of the process seam use:
a report survives JSON unchanged, and what the real probe writes has exactly the schema's fields, so that a field
renamed or dropped on one side fails here rather than reading as a default on the other.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any, Set

import pytest

from conftest import git_commit, make_setup, sisyphus_entry
from sispin.clonejob import PARAMETERS
from sispin.graph.build import run_probe
from sispin.graph.probe import main as probe_main
from sispin.graph.probe.schema import (
    Arg,
    Assignment,
    Clone,
    CloneCall,
    CloneIds,
    CloneIdsRequest,
    Content,
    Escape,
    Failure,
    JobRecord,
    Overwrite,
    RecordedOutput,
    Reply,
    SetGraph,
    ValueUse,
)
from sispin.lock.loading import load_lockfile

#: a graph with every field of every kind given, none at its default
WHOLE = SetGraph(
    set_name="demo",
    outputs={
        "demo/rc": RecordedOutput("i6_core/tools/git/CloneGitRepositoryJob.abc", "repository"),
        "x": RecordedOutput("", "p"),
    },
    jobs={"i6_core/tools/git/CloneGitRepositoryJob.abc": True, "m/Use.x": False},
    clones=(
        Clone(
            job="i6_core/tools/git/CloneGitRepositoryJob.abc",
            url="https://example.org/rc",
            commit="a" * 40,
            hash_overwrite="RC_ROOT",
            changed=("patches: None -> ['p.diff']",),
            checkout_folder_name="rc",
            files_to_checkout=("a.py", "b/"),
            patches=("p.diff",),
            branch="main",
            clone_submodules=True,
            alias="RC_ROOT",
        ),
    ),
    escapes=(Escape("m/Use.x", "config['root']", "i6_core/tools/git/CloneGitRepositoryJob.abc", "RC_ROOT", "RC_ROOT"),),
    records={"m/Use.x": JobRecord({"size": Arg("12ab34cd", "4")}, True, {"size": Arg("12ab34cd", "4", "m/Other.y")})},
    contents={
        "m/Use.x": Content("0f" * 16, [["m/Other.y", "Path(Other, 'out')"], [None, "Path('/x')"]], True, {"size": 0})
    },
    inputs={"m/Use.x": ("i6_core/tools/git/CloneGitRepositoryJob.abc",)},
    pinned={"i6_core/tools/git/CloneGitRepositoryJob.abc": "rc"},
    blind={"m/Use.x": ("rc",)},
    changed_jobs=("m/Use.x",),
    value_uses=(ValueUse("exp.commit('rc') of set 'demo'", "config/demo.py:3", "rc", "demo"),),
    awaits={"config/demo.py": 2},
    waiting=("config/demo.py",),
    states={"m/Use.x": {"size": "0123456789abcdef"}},
    assignments=(Assignment("i6_core/tools/git/CloneGitRepositoryJob.abc", "RC_ROOT", "config/demo.py:4", True),),
    collisions=(("m/Use.x", "config/demo.py:5"),),
    aliases={"rc": (json.dumps({"commit": "a" * 40}), "RC_ROOT")},
    overwrites=(Overwrite("DATA", "/data/x", "m/Use.x", "config['data']", "config/demo.py:6"),),
    site_modules=("numpy",),
)


def test_a_report_round_trips_through_json_unchanged():
    data = json.loads(json.dumps(WHOLE.to_json()))
    assert SetGraph.from_json(data) == WHOLE
    assert SetGraph.from_json(data).to_json() == data
    failed = Reply(failure=Failure("config/demo.py:3", "KeyError: 'x'", "Traceback ..."))
    assert Reply.from_json(json.loads(json.dumps(failed.to_json()))) == failed
    # pin import's question and the probe's answer
    request = CloneIdsRequest("demo", (CloneCall("rc", 1, {"url": "https://example.org/rc", "commit": "a" * 40}),))
    assert CloneIdsRequest.from_json(json.loads(json.dumps(request.to_json()))) == request
    ids = CloneIds("i6_core/tools/git/CloneGitRepositoryJob.abc", "i6_core/tools/git/CloneGitRepositoryJob.def")
    assert CloneIds.from_json(json.loads(ids.to_json_text())) == ids


def test_a_field_too_many_or_too_few_is_refused_not_read_as_a_default():
    data = WHOLE.to_json()
    with pytest.raises(ValueError, match="unknown fields \\['folder'\\]"):
        SetGraph.from_json({**data, "clones": [{**data["clones"][0], "folder": "rc"}]})
    clone = {k: v for k, v in data["clones"][0].items() if k != "files_to_checkout"}
    with pytest.raises(ValueError, match="missing fields \\['files_to_checkout'\\]"):
        SetGraph.from_json({**data, "clones": [clone]})
    # an argument's leaf is a row, an array of its fields (reports hold 100,000s), read by a path of its own
    record = data["records"]["m/Use.x"]
    assert record["args"]["size"] == ["12ab34cd", "4", None]
    too_many, too_few, by_name = (
        ["12ab34cd", "4", None, "rc"],
        ["12ab34cd"],
        {"digest": "12ab34cd", "value": "4", "job": None},
    )
    for leaf in (too_many, too_few, by_name):
        with pytest.raises(ValueError, match="Arg: .* is not an array of its fields \\['digest', 'value', 'job'\\]"):
            SetGraph.from_json({**data, "records": {"m/Use.x": {**record, "args": {"size": leaf}}}})
        with pytest.raises(ValueError, match="Arg: .* is not an array of its fields"):
            SetGraph.from_json({**data, "records": {"m/Use.x": {**record, "detail": {"size": leaf}}}})


def test_a_clone_carries_every_argument_of_the_job_by_its_parameter_name():
    fields = {field.name for field in dataclasses.fields(Clone)}
    assert {name for name, _ in PARAMETERS} <= fields
    assert set(WHOLE.clones[0].arguments()) == {name for name, _ in PARAMETERS}


def _fields(kind: Any) -> Set[str]:
    return {field.name for field in dataclasses.fields(kind)}


REPO_CONFIG = """\
from sisyphus import tk
from i6_core.text.processing import WriteToTextFileJob

from sispin import experiment_set


def py():
    exp = experiment_set("demo")
    root = exp.repo("rc")
    copy = root.copy()
    copy.hash_overwrite = "RC_COPY"
    tk.register_output("demo/rc", root)
    tk.register_output("demo/text", WriteToTextFileJob({"root": copy, "commit": exp.commit("rc")}).out_file)
"""


def test_the_real_probe_writes_exactly_the_fields_the_parent_reads(real_sisyphus, make_repo, tmp_path, monkeypatch):
    remote = make_repo("rc")
    commit = git_commit(remote, {"__init__.py": "X = 1\n"})
    lock = (
        f'version = 1\n\n[repos.rc]\nurl = "file://{remote}"\n\n[sets.demo]\nconfigs = ["config/demo.py"]\n'
        f'rc = "{commit}"\n\n' + sisyphus_entry(real_sisyphus)
    )
    root = make_setup(tmp_path / "setup", lock, real_sisyphus, {"demo.py": REPO_CONFIG})
    monkeypatch.chdir(root)
    request = {"set": "demo", "configs": ["config/demo.py"], "states": True, "moved": None, "records": "all"}
    written = run_probe(load_lockfile(root / "pin.toml"), ["graph"], "loading demo", request=request)
    graph = SetGraph.from_json(written)
    assert graph.to_json() == written
    assert graph.clones and graph.escapes and graph.records and graph.value_uses and graph.states
    assert set(written) == _fields(SetGraph)
    for kind, objects in [
        (RecordedOutput, written["outputs"].values()),
        (Clone, written["clones"]),
        (Escape, written["escapes"]),
        (JobRecord, written["records"].values()),
        (ValueUse, written["value_uses"]),
    ]:
        assert objects and all(set(each) == _fields(kind) for each in objects), kind.__name__
    leaves = [arg for record in written["records"].values() for arg in record["args"].values()]
    assert leaves and all(len(leaf) == len(Arg._fields) for leaf in leaves)


@pytest.mark.parametrize("kind", [SetGraph, Clone])
def test_the_probe_gives_every_field_of_its_report_none_left_to_a_default(kind):
    calls = [
        node
        for node in ast.walk(ast.parse(Path(probe_main.__file__).read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == kind.__name__
    ]
    assert len(calls) == 1
    given = {keyword.arg for keyword in calls[0].keywords if keyword.arg}
    # a Clone's arguments come by their parameter names, as its object holds them
    given |= {name for name, _ in PARAMETERS} if kind is Clone else set()
    assert given == _fields(kind)
