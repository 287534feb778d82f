"""
Why a job id changed (nix-diff for Sisyphus): walk an output's old and new job down through the inputs whose ids
changed, to the root causes, the deepest jobs whose own hashed arguments differ, and name those arguments with old
and new values.

A job's record (made by :mod:`sispin.graph.probe`) lists every hashed argument path with a digest of its
content, its value when short, and for a path the id of the job that creates it. Two records of one job explain a
change: a path whose creator's id changed is an input that changed (followed down); any other difference is the
job's own. Records come from a live graph or from pin.snapshot.toml, so a change can be explained in CI, where the
old configs are gone.
"""

from __future__ import annotations

__all__ = [
    "Difference",
    "Cause",
    "Explanation",
    "RecordsCompared",
    "is_full_sha_repr",
    "shown",
    "short_id",
    "is_commit_only",
    "cause_key",
    "pin_moved",
    "summary",
    "ChangeGroup",
    "SetChanges",
    "compare_set",
]

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from sispin.clonejob import CLASS_NAME
from sispin.graph.price import Cost, price_of
from sispin.graph.probe.schema import Arg, Content, JobRecord, RecordedOutput, SetGraph
from sispin.lock.lockfile import Lockfile, is_full_sha
from sispin.text import count, shown_key


@dataclass(frozen=True)
class Difference:
    """One argument path whose leaf differs; old or new is None where the path is absent on that side."""

    path: str
    old: Optional[Arg]
    new: Optional[Arg]


@dataclass
class Cause:
    """
    A root cause: a job whose own arguments changed.

    :param old: its old id
    :param new: its new id
    :param via: the steps from the output's job down to it: (argument path in the user, old id, new id)
    :param differences: its own differing arguments (empty when they cannot be told: see ``reason``)
    :param custom_hash: its class defines its own hash(): the arguments differ, what it hashes may differ otherwise
    :param reason: why nothing finer can be said, if so
    """

    old: str
    new: str
    via: List[Tuple[str, str, str]] = field(default_factory=list)
    differences: List[Difference] = field(default_factory=list)
    custom_hash: bool = False
    reason: Optional[str] = None


@dataclass
class Explanation:
    """
    :param output: the registered output's name
    :param old: its job id in the old graph (None: new output)
    :param new: its job id now (None: gone)
    :param causes: the root causes, deepest first along each chain
    """

    output: str
    old: Optional[str]
    new: Optional[str]
    causes: List[Cause] = field(default_factory=list)


class RecordsCompared:
    """
    The records of two graphs, to explain the outputs whose job changed: each pair of jobs is compared once however
    many outputs reach it (every output of a set reaches the same few jobs, and a training's record holds thousands of
    arguments).

    :param old_records: job id -> record, of the old graph (a snapshot's or a live one)
    :param new_records: job id -> record, of the new graph
    :param contents: job id -> content key, of the old graph's jobs, and of the new graph's jobs whose build sent a key
        in place of a record (of a digest an old job has: the two differ in their paths alone, which the keys hold;
        see :mod:`sispin.graph.probe.contents`)
    """

    def __init__(
        self,
        old_records: Mapping[str, JobRecord],
        new_records: Mapping[str, JobRecord],
        contents: Tuple[Mapping[str, Content], Mapping[str, Content]] = ({}, {}),
    ) -> None:
        self.old_records, self.new_records = old_records, new_records
        self.old_contents, self.new_contents = contents
        # (old id, new id) -> the pair's own differences, and its inputs whose creating job changed (path, old, new)
        self._pairs: Dict[Tuple[str, str], Tuple[List[Difference], List[Tuple[str, str, str]]]] = {}
        # content digest -> an old job of it (made when first needed)
        self._of_digest: Optional[Dict[str, str]] = None

    def explain(self, output: str, old_id: Optional[str], new_id: Optional[str]) -> Explanation:
        """
        :param output: the output's name
        :param old_id: its old job id
        :param new_id: its new job id
        """
        explanation = Explanation(output, old_id, new_id)
        if old_id and new_id and old_id != new_id:
            self._compare(old_id, new_id, [], explanation.causes, set())
        return explanation

    def _compare(
        self, old_id: str, new_id: str, via: List[Tuple[str, str, str]], causes: List[Cause], seen: Set[Tuple[str, str]]
    ) -> None:
        if (old_id, new_id) in seen:
            return
        seen.add((old_id, new_id))
        keyed = self._keyed(old_id, new_id)
        if keyed is not None:  # the same content but the paths, which the keys hold: no record is needed
            own, inputs = keyed
            custom_hash, relocated = self.new_contents[new_id].custom_hash, False
        else:
            old, new = self.old_records.get(old_id), self.new_records.get(new_id) or self._made(new_id)
            if old is None or new is None:
                missing = "old" if old is None else "new"
                # records stay on the machine that took the snapshot (.sispin-cache): git holds what rebuilds them
                hint = (
                    " here (`pin explain --against REV` builds them from the setup's git history)"
                    if old is None
                    else ""
                )
                causes.append(Cause(old_id, new_id, via, reason=f"no record of the {missing} job's arguments{hint}"))
                return
            own, inputs = self._pair(old_id, new_id, old, new)
            custom_hash, relocated = new.custom_hash, old.relocated or new.relocated
        for path, old_input, new_input in inputs:
            self._compare(old_input, new_input, [*via, (path, old_id, new_id)], causes, seen)
        if own:
            causes.append(Cause(old_id, new_id, via, list(own), custom_hash))
        elif not inputs:
            reason = _relocated if relocated else _unexplained(old_id, new_id)
            causes.append(Cause(old_id, new_id, via, custom_hash=custom_hash, reason=reason))

    def _pair(
        self, old_id: str, new_id: str, old: JobRecord, new: JobRecord
    ) -> Tuple[List[Difference], List[Tuple[str, str, str]]]:
        """:return: the pair's own differing arguments, and its inputs whose creating job changed, in path order"""
        known = self._pairs.get((old_id, new_id))
        if known is not None:
            return known
        # two live records compare in detail (a network dict leaf by leaf); a recorded one at the snapshot's cut
        old_args, new_args = old.args, new.args
        if old.detail is not None and new.detail is not None:
            old_args, new_args = old.detail, new.detail
        own: List[Difference] = []
        inputs: List[Tuple[str, str, str]] = []
        # most leaves are equal (tuples, compared in C): only the others are sorted
        differing = [path for path in old_args.keys() | new_args.keys() if old_args.get(path) != new_args.get(path)]
        for path in sorted(differing, key=_leaf_order):
            a, b = old_args.get(path), new_args.get(path)
            if a is not None and b is not None and a.digest == b.digest:
                if a.job and b.job and a.job != b.job:
                    inputs.append((path, a.job, b.job))
            else:
                own.append(Difference(path, a, b))
        self._pairs[(old_id, new_id)] = (own, inputs)
        return own, inputs

    def _keyed(self, old_id: str, new_id: str) -> Optional[Tuple[List[Difference], List[Tuple[str, str, str]]]]:
        """
        :return: when the new job's build sent a content key of the old job's digest in place of its record: what
            :meth:`_pair` finds, from the keys' paths alone (the rest of the records is the same); else None
        """
        old, new = self.old_contents.get(old_id), self.new_contents.get(new_id)
        if old is None or new is None or old.digest != new.digest or new_id in self.new_records:
            return None
        known = self._pairs.get((old_id, new_id))
        if known is not None:
            return known
        own: List[Difference] = []
        inputs: List[Tuple[str, str, str]] = []
        for where in sorted(old.leaves, key=_leaf_order):  # the leaves as _pair tells them apart
            place = old.leaves[where]
            (old_job, old_text), (new_job, new_text) = old.paths[place], new.paths[place]
            # one text is one digest: most paths keep theirs, and only differing texts are hashed (as _pair tells
            # leaves apart by digest, two texts of one digest are one leaf here too)
            if old_text != new_text:
                a, b = _path_leaf(old, place), _path_leaf(new, place)
                if a.digest != b.digest:
                    own.append(Difference(where, a, b))
                    continue
            if old_job and new_job and old_job != new_job:
                inputs.append((where, old_job, new_job))
        self._pairs[(old_id, new_id)] = (own, inputs)
        return own, inputs

    def _made(self, new_id: str) -> Optional[JobRecord]:
        """
        :return: the record of a new job whose build sent a content key in place of it: an old job's of that digest,
            its paths as the key has them; None when no old job has the digest. Where the old job's record has a
            detailed part, so does this one, and it stands for the short part too (whose cut containers' digests are
            not in the key): compared with a job whose record has no detailed part, it is compared leaf by leaf where
            a build's record would show the cut container's digest
        """
        key = self.new_contents.get(new_id)
        if key is None:
            return None
        if self._of_digest is None:
            self._of_digest = {content.digest: job for job, content in self.old_contents.items()}
        template = self._of_digest.get(key.digest)
        record = self.old_records.get(template) if template is not None else None
        if record is None or template is None:
            return None
        paths = {where: _path_leaf(key, place) for where, place in self.old_contents[template].leaves.items()}
        detail = None if record.detail is None else {**record.detail, **paths}
        return JobRecord(detail or {**record.args, **paths}, key.custom_hash, detail)


def _path_leaf(key: Content, place: int) -> Arg:
    """:return: the record's leaf of the path at that place of the key"""
    creator, text = key.paths[place]
    return Arg.of_text(str(text), creator)


def _leaf_order(path: str) -> Tuple[Any, ...]:
    """:return: argument_order, ties broken by the path itself (``x['01']`` and ``x['1']``: never by a set's order)"""
    return argument_order(path), path


@functools.lru_cache(maxsize=65536)  # every output of a set names the same few thousand paths
def argument_order(path: str) -> Tuple[Any, ...]:
    """
    :return: a sort key for argument paths that puts list positions in numeric order (``x[2]`` before ``x[10]``)
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(path))


#: why a job differs whose arguments are equal once a build in a temporary copy wrote the setup's location as its own
_relocated = (
    "every recorded argument is equal once the setup's location is written as its own: the job hashes where the "
    "setup is (a path of it, as text), and the old graph was built in a temporary copy of the setup; its id differs "
    "there alone"
)


def _unexplained(old_id: str, new_id: str) -> str:
    if old_id.rsplit(".", 1)[0] != new_id.rsplit(".", 1)[0]:
        return "the job's class or module changed"
    return "every recorded argument is equal: the difference lies below the recorded cut, or in the job's own hash()"


def is_full_sha_repr(value: Optional[str]) -> bool:
    """:return: whether a recorded value is a quoted full commit SHA (its repr)"""
    return bool(value) and value[0] == value[-1] == "'" and is_full_sha(value[1:-1])


def shown(arg: Optional[Arg]) -> str:
    """:return: how a recorded leaf reads in an explanation: its value (a SHA shortened), else its digest"""
    if arg is None:
        return "(absent)"
    if arg.value is None:
        return f"#{arg.digest}"
    return arg.value[1:8] if is_full_sha_repr(arg.value) else arg.value


def _job_class(job: str) -> str:
    """:return: ``Class`` of a job id ``module/path/Class.hash``"""
    return short_id(job).rsplit(".", 1)[0]


def short_id(job: str) -> str:
    """:return: ``Class.hash`` of a job id ``module/path/Class.hash``"""
    return job.rsplit("/", 1)[-1]


def is_commit_only(cause: Cause) -> bool:
    """:return: whether a root cause is a CloneGitRepositoryJob whose commit alone changed"""
    return (
        short_id(cause.new).startswith(CLASS_NAME + ".")
        and bool(cause.differences)
        and all(d.path == "commit" for d in cause.differences)
    )


def pin_moved(cause: Cause, lockfile: Lockfile, set_name: str, records: Mapping[str, JobRecord]) -> Optional[str]:
    """
    :return: ``sets.SET.REPO`` when a commit-only cause is the set's pin of a locked repository moving, else None
    """
    if not is_commit_only(cause) or set_name not in lockfile.sets:
        return None
    args = records[cause.new].args
    url, commit = args.get("url"), args.get("commit")
    for name, pin in lockfile.sets[set_name].pins.items():
        repo = lockfile.repos[name]
        if url and commit and url.value == repr(repo.url) and commit.value == repr(pin.commit):
            return f"sets.{shown_key(set_name)}.{shown_key(name)}"
    return None


def summary(explanation: Explanation) -> str:
    """:return: one phrase naming the root causes, for the upgrade advisor's line of an output"""
    parts = []
    for cause in explanation.causes:
        # the job is always named (by its recorded id), so that outputs renewed by one cause share one phrase
        where = f" in {short_id(cause.old)}"
        if cause.reason:
            parts.append(f"{short_id(cause.new)}: {cause.reason}")
        for difference in cause.differences:
            parts.append(f"{difference.path}: {shown(difference.old)} -> {shown(difference.new)}{where}")
    if not parts:
        return ""
    more = f" (+{len(parts) - 3} more: pin explain)" if len(parts) > 3 else ""
    return "because " + "; ".join(parts[:3]) + more


#: runs of digits in an argument path (list positions)
_DIGITS = re.compile(r"(\d+)")

#: the cause of a change that the snapshot holds no job records for (written before they were kept)
_NO_RECORDS = "(no records of the recorded jobs here: `pin explain --against REV` builds them from git)"


@dataclass(order=True)
class ChangeGroup:
    """
    :param cause: the root causes the outputs share, as one phrase (``because ...``)
    :param outputs: (name, old id, new id) of each output, sorted by name
    """

    cause: str
    outputs: List[Tuple[str, str, str]]


@dataclass
class SetChanges:
    """
    How a set's graph differs from its snapshot.

    :param changed: names of the outputs whose job id changed
    :param groups: those outputs grouped under their root causes, sorted
    :param new: outputs the snapshot does not have
    :param gone: outputs the snapshot has and the graph no longer registers
    :param moved_paths: (name, old file, new file) of outputs whose job stayed but whose file changed
    :param renewed: how many recorded jobs the graph no longer has (their work is orphaned); None when the jobs of
        the recorded graph are not known here (no records kept)
    :param finished: how many of those are finished in work/
    :param cost: what those finished ones cost to make, as their usage in work/ says
    """

    changed: List[str]
    groups: List[ChangeGroup]
    new: List[str]
    gone: List[str]
    moved_paths: List[Tuple[str, str, str]]
    renewed: Optional[int]
    finished: Optional[int]
    cost: Optional[Cost] = None


def compare_set(
    recorded: Mapping[str, RecordedOutput], records: Optional[Mapping[str, JobRecord]], graph: SetGraph, work: Path
) -> SetChanges:
    """
    :param recorded: the snapshot's outputs of the set
    :param records: the records of the jobs the snapshot stands for (None: none are kept here)
    :param graph: the set's graph now
    :param work: the setup's work directory (to count renewed jobs that had finished)
    """
    # one line per root cause: the same arguments changed the same way in jobs of one class, whether the outputs share
    # the job or each has its own; an output with several root causes is counted under each
    by_cause: Dict[Tuple[str, ...], List[Tuple[str, str, str]]] = {}
    phrases: Dict[Tuple[str, ...], str] = {}
    jobs: Dict[Tuple[str, ...], Set[str]] = {}
    changed, moved = [], []
    compared = RecordsCompared(records or {}, graph.records)
    for name in sorted(set(recorded) & set(graph.outputs)):
        old, new = recorded[name], graph.outputs[name]
        if old.job != new.job:
            changed.append(name)
            explanation = compared.explain(name, old.job, new.job)
            for cause in explanation.causes or [None]:
                # the same cause: every differing argument the same (the line shows the first and how many more)
                key = (_NO_RECORDS,) if cause is None else cause_key(cause)
                phrases.setdefault(key, _NO_RECORDS if cause is None else _cause_phrase(cause, _job_class(cause.old)))
                by_cause.setdefault(key, []).append((name, old.job, new.job))
                jobs.setdefault(key, set()).update(() if cause is None else (cause.old,))
        elif old.path != new.path:
            moved.append((name, old.path, new.path))
    renewed = None if records is None else [job for job in records if job not in graph.jobs]
    finished = None if renewed is None else [job for job in renewed if (work / job / "finished").exists()]
    return SetChanges(
        changed=changed,
        groups=sorted(
            ChangeGroup(_in_jobs(phrases[key], sorted(jobs[key])), list(dict.fromkeys(outputs)))
            for key, outputs in by_cause.items()
        ),
        new=sorted(set(graph.outputs) - set(recorded)),
        gone=sorted(set(recorded) - set(graph.outputs)),
        moved_paths=moved,
        renewed=None if renewed is None else len(renewed),
        finished=None if finished is None else len(finished),
        cost=None if finished is None else price_of(work, finished).total,
    )


def cause_key(cause: Cause) -> Tuple[str, ...]:
    """:return: what makes two root causes one: the job's class and every differing argument, old -> new"""
    differences = (f"{d.path}: {shown(d.old)} -> {shown(d.new)}" for d in cause.differences)
    return (_job_class(cause.old), cause.reason or "", *differences)


def _cause_phrase(cause: Cause, job: str) -> str:
    """:return: ``because <the first argument, old -> new> (+N more) in <job>`` for one root cause"""
    if cause.reason or not cause.differences:
        return f"because {cause.reason or 'of its own hash()'} in {job}"
    first, more = cause.differences[0], len(cause.differences) - 1
    rest = f" (+{count(more, 'more argument')}: pin explain)" if more else ""
    return f"because {first.path}: {shown(first.old)} -> {shown(first.new)}{rest} in {job}"


def _in_jobs(phrase: str, jobs: List[str]) -> str:
    """:return: the root cause naming its job by id when there is one, else how many jobs and the first"""
    if not jobs or not phrase.endswith(f" in {_job_class(jobs[0])}"):
        return phrase
    if len(jobs) == 1:
        return phrase[: -len(_job_class(jobs[0]))] + short_id(jobs[0])
    return f"{phrase} ({len(jobs)} jobs: {short_id(jobs[0])}, ...)"
