"""
Content keys (:mod:`sispin.graph.probe.contents`), in-process with the real Sisyphus and i6_core: a build compared
with a kept graph sends a key in place of the record of each job whose content a kept job has, and the parent makes
that record from the kept one. Whatever jobs a graph holds, what the parent explains from the keys must be what it
explains from the records themselves; a key is made only where it can stand for a record.
"""

from __future__ import annotations

import collections
import enum
from typing import Any, Dict, List, Tuple

import pytest

from sispin.graph.explain import RecordsCompared
from sispin.graph.probe.schema import Arg, Content, JobRecord


@pytest.fixture(scope="module")
def jobs(real_sisyphus) -> Any:
    """The job classes of these tests, made in the test's process (Sisyphus keeps one object per id)."""
    from sisyphus import Job, Task

    class Source(Job):
        def __init__(self, commit: str) -> None:
            self.commit = commit
            self.out = self.output_path("repository", directory=True)

        def tasks(self) -> Any:
            yield Task("run")

    class Use(Job):
        def __init__(self, value: Any, other: Any = None) -> None:
            self.value = value
            self.other = other
            self.out = self.output_path("out")

        def tasks(self) -> Any:
            yield Task("run")

    return collections.namedtuple("Jobs", "Source Use")(Source, Use)


class Holder:
    """An object of config code holding values (its state is walked, as Sisyphus hashes it)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


class Empty:
    """An object with no state: the record shows it by Sisyphus's bytes."""


class Colour(enum.Enum):
    RED = 1


class Ordered(dict):
    """A dict of config code's own kind."""


def _overwritten(path: Any) -> Any:
    """:return: a copy of path carrying an overwrite (as a pin's alias does until a move drops it)"""
    copy = path.copy()
    copy.hash_overwrite = "ALIAS"
    return copy


def _values(source: Any) -> Dict[str, Tuple[Any, ...]]:
    """Argument shapes, each built on a source's path: what a kept graph and a moved one would both hold."""
    out, old = source.out, source.commit.startswith("1")
    return {
        "a path": (out,),
        "a derived path": (out.join_right("sub"),),
        "a copy": (out.copy(),),
        "in a dict": ({"root": out, "lr": 0.1, "layers": [1, 2, 3]},),
        "in a subclass of dict": (Ordered(root=out),),
        "in an object": (Holder(root=out, n=3),),
        "an overwrite only the old graph has": (_overwritten(out) if old else out,),
        "one path twice in the old graph, two in the new": ([out, out if old else out.join_right("sub")],),
        "twice, one object": ([out, out],),
        "twice, two objects": ([out, out.copy()],),
        "the source job itself": (source,),
        "an enum, a function, a class": ([Colour.RED, len, Holder, out],),
        "in a set": ({out},),
        "an empty object": ([Empty(), out],),
        "a big container": ([list(range(400)), out],),
        "a huge container": ([list(range(20_001)), [out]],),
        "a huge container, its cut holding no path": ([list(range(20_001)), [1, Holder(n=2)], out],),
        "deep, its cut holding no path": ([[[[[[[[[[[[[1]]]]]]]]]]]], out],),
        "deep": ([[[[[[[[[[[[[out]]]]]]]]]]]]],),
        "a leaf, and in a set": ([out, {out}],),
        "a leaf, and below a cut": ([out, list(range(20_001)), [out]],),
        "a dict's key": ({out: 1},),
        "a dict's key and its value": ({out: out},),
    }


def _graph(jobs: Any, commit: str, changed: str = "") -> Tuple[List[Any], Dict[str, Any]]:
    """
    :param changed: a shape whose content differs in this graph (beyond the source's commit)
    :return: every job of a graph built on a source at commit, and per shape its job
    """
    source, other = jobs.Source(commit), jobs.Source(commit + "-other")
    shapes = {**_values(source), "two sources": ([source.out, other.out],)}
    made = {
        shape: jobs.Use(*arguments, other="changed" if shape == changed else None)
        for shape, arguments in shapes.items()
    }
    return [source, other, *made.values()], made


def _records(graph: List[Any]) -> Dict[str, JobRecord]:
    from sispin.graph.probe.records import recorded

    return {job.job_id(): recorded(job)[0] for job in graph}


def _explained(compared: RecordsCompared, old: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    return {shape: compared.explain(shape, old[shape].job_id(), new[shape].job_id()) for shape in old}


@pytest.mark.parametrize("changed", ["", "a path", "in an object", "two sources"])
def test_what_the_parent_explains_from_keys_is_what_it_explains_from_records(jobs, changed):
    from sispin.graph.probe.contents import records_and_contents

    old_jobs, old = _graph(jobs, "1" * 40)
    new_jobs, new = _graph(jobs, "2" * 40, changed)
    kept_records, kept_keys = records_and_contents(old_jobs, str, True)
    assert kept_records == _records(old_jobs), "the kept graph's records are what the records were"
    sent_records, sent_keys = records_and_contents(new_jobs, str, sorted({key.digest for key in kept_keys.values()}))
    assert sent_keys and len(sent_records) < len(new_jobs), "most jobs send a key in place of their record"
    from_keys = _explained(RecordsCompared(kept_records, sent_records, (kept_keys, sent_keys)), old, new)
    from_records = _explained(RecordsCompared(kept_records, _records(new_jobs)), old, new)
    assert from_keys == from_records


def test_a_key_stands_only_where_the_record_shows_every_path_by_its_creator(jobs):
    from sispin.graph.probe.contents import records_and_contents

    graph, made = _graph(jobs, "3" * 40)
    _, keys = records_and_contents(graph, str, True)
    keyless = sorted(shape for shape, job in made.items() if job.job_id() not in keys)
    # a set's record is one text, a cut container one digest, a dict's key a label: each hides the paths in it and
    # their creators, also where the same path is a leaf elsewhere; an object without state is shown by its bytes
    assert keyless == [
        "a dict's key",
        "a dict's key and its value",
        "a huge container",
        "a leaf, and below a cut",
        "a leaf, and in a set",
        "an empty object",
        "deep",
        "in a set",
    ]


def test_jobs_whose_content_differs_never_share_a_key(jobs):
    from sispin.graph.probe.contents import content_of

    source = jobs.Source("4" * 40)
    values = [
        0.1,
        0.10000000000000002,
        1,
        True,
        "1",
        [1, 2],
        (1, 2),
        {"a": 1, "b": 2},
        Holder(a=1),
        Holder(a=2),
        [source.out],
        [source.out, source.out],
    ]
    made = [jobs.Use(value) for value in values]
    assert len({job.job_id() for job in made}) == len(values), "Sisyphus tells them apart"
    keys = [content_of(job) for job in made]
    assert None not in keys
    digests = [key[0].digest for key in keys]
    assert len(set(digests)) == len(values), digests


def test_a_key_holds_its_paths_beside_the_digest_in_the_order_met(jobs):
    from sispin.graph.probe.contents import content_of

    first, second = jobs.Source("6" * 40), jobs.Source("7" * 40)
    keys = [
        content_of(jobs.Use(value))
        for value in ([first.out, first.out.copy()], [first.out, second.out], [first.out, first.out.join_right("x")])
    ]
    assert None not in keys
    assert len({key[0].digest for key in keys}) == 1, "the same content but the paths: one digest"
    text = "Path(Source, 'repository')"
    assert [key[0].paths for key in keys] == [
        [[first.job_id(), text], [first.job_id(), text]],
        [[first.job_id(), text], [second.job_id(), text]],
        [[first.job_id(), text], [first.job_id(), "Path(Source, 'repository/x')"]],
    ]


def test_the_parent_follows_a_keyed_job_to_the_new_creators_and_without_a_key_says_it_has_no_record():
    record = JobRecord({"x": Arg("d1", None, "old/Source.a"), "n": Arg("d2", "3")})
    (cause,) = RecordsCompared({"old/Use.a": record}, {}).explain("o", "old/Use.a", "new/Use.b").causes
    assert cause.reason is not None and cause.reason.startswith("no record of the new job")
    text = "Path(Source, 'out')"
    kept = Content("k", [["old/Source.a", text]], False, {"x": 0})
    keys = ({"old/Use.a": kept}, {"new/Use.b": Content("k", [["new/Source.b", text]], False)})
    (cause,) = RecordsCompared({"old/Use.a": record}, {}, keys).explain("o", "old/Use.a", "new/Use.b").causes
    assert cause.via == [("x", "old/Use.a", "new/Use.b")] and (cause.old, cause.new) == ("old/Source.a", "new/Source.b")


def _texts_of_one_digest() -> Tuple[str, str]:
    """Two path texts whose leaves share their 8-character digest (a birthday search: about 80,000 texts)."""
    seen: Dict[str, str] = {}
    for number in range(1_000_000):
        text = f"Path(Source, 'out{number}')"
        digest = Arg.of_text(text).digest
        if digest in seen:
            return seen[digest], text
        seen[digest] = text
    raise AssertionError("no two texts of one digest")


def test_keys_tell_path_leaves_apart_by_digest_as_records_do():
    first, second = _texts_of_one_digest()
    old_leaf, new_leaf = Arg.of_text(first, "old/Source.a"), Arg.of_text(second, "new/Source.b")
    records = ({"old/Use.a": JobRecord({"x": old_leaf})}, {"new/Use.b": JobRecord({"x": new_leaf})})
    kept = Content("k", [["old/Source.a", first]], False, {"x": 0})
    keys = ({"old/Use.a": kept}, {"new/Use.b": Content("k", [["new/Source.b", second]], False)})
    by_records = RecordsCompared(*records).explain("o", "old/Use.a", "new/Use.b").causes
    by_keys = RecordsCompared(records[0], {}, keys).explain("o", "old/Use.a", "new/Use.b").causes
    # one digest is one leaf to both: the pair differs in its input's creator, not in an argument of its own
    assert by_keys == by_records and [(cause.old, cause.new) for cause in by_keys] == [("old/Source.a", "new/Source.b")]


class Stated:
    """An object of config code that tells Sisyphus its own state."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def __sis_state__(self) -> Any:
        return self.state


class Labelled:
    """Objects of one state: dict keys of one label."""


class OwnHash:
    """An object with its own hash (as i6_core's ReturnnConfig), holding a cycle its hash never walks."""

    def __init__(self) -> None:
        self.post: Dict[str, Any] = {}
        self.post["self"] = self.post

    def _sis_hash(self) -> bytes:
        return b"own"


def test_values_that_sisyphus_hashes_are_recorded_whatever_their_kind(jobs):
    from sispin.graph.probe.contents import records_and_contents

    source = jobs.Source("8" * 40)
    values = {
        "a job's class": [jobs.Source, source.out],
        "a state of keys that do not compare": Stated({1: "a", "b": 2}),
        "keys of one label": {Labelled(): {"a": 1}, Labelled(): {"b": 2}},
        "a cycle its own hash never walks": [OwnHash(), source.out],
    }
    made = {name: jobs.Use(value) for name, value in values.items()}
    records, keys = records_and_contents(list(made.values()), str, True)
    assert sorted(records) == sorted(job.job_id() for job in made.values()), "every job recorded, none raised"
    assert records[made["a job's class"].job_id()].args["value[0]"].value.endswith("Source")
