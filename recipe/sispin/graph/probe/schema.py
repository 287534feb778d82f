"""
What the probe reports, defined once for both sides of the process seam: the probe builds these objects and writes
them with ``to_json_text()``; the parent (:mod:`sispin.graph.build` and what it hands the graph to) reads them back
with ``from_json()`` (both of :mod:`sispin.graph.probe.codec`). A field has one name on both sides and in the JSON
between them, and ``from_json`` refuses a field too many or too few, so a renamed or missing field fails at once
instead of reading as a default.

This module imports no Sisyphus: the parent imports it.
"""

from __future__ import annotations

__all__ = [
    "Arg",
    "JobRecord",
    "Content",
    "RecordedOutput",
    "records_below",
    "differing_outputs",
    "Clone",
    "Assignment",
    "ValueUse",
    "Escape",
    "Overwrite",
    "SetGraph",
    "Failure",
    "CloneCall",
    "CloneIdsRequest",
    "CloneIds",
    "Reply",
]

import dataclasses
import hashlib
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from sispin.clonejob import PARAMETERS
from sispin.graph.probe.codec import JsonForm

#: a leaf whose text is longer is recorded by digest only
MAX_VALUE = 120


class Arg(NamedTuple):
    """
    One hashed argument leaf of a job. A report holds hundreds of thousands of them, so a leaf is a row (a named
    tuple): written by json's encoder as an array, with no call back into Python, read with one tuple construction,
    and compared by the tuple's own equality.

    :param digest: digest of its content (for a path: the creator's class, the file, the overwrite)
    :param value: its value as Python shows it, when short enough to keep
    :param job: for a path, the id of the job that creates it
    """

    digest: str
    value: Optional[str] = None
    job: Optional[str] = None

    @classmethod
    def of_text(cls, text: str, job: Optional[str] = None) -> Arg:
        """
        :param text: the leaf's canonical text (``repr`` of a string or number, ``Path(...)`` of a path)
        :param job: for a path, the id of the job that creates it
        :return: the leaf as a record keeps it: the text's digest, and the text itself when short and not a digest
        """
        digest = hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:8]
        return cls(digest, text if len(text) <= MAX_VALUE and not text.startswith("<") else None, job)

    def encode(self) -> str:
        """:return: the one-line form pin.snapshot.toml keeps: ``digest[ @job][ =value]``"""
        return (
            self.digest + (f" @{self.job}" if self.job else "") + (f" ={self.value}" if self.value is not None else "")
        )

    @classmethod
    def decode(cls, text: str) -> Arg:
        """:param text: what :meth:`encode` wrote"""
        digest, _, rest = text.partition(" ")
        job = None
        if rest.startswith("@"):
            job, _, rest = rest[1:].partition(" ")
        return cls(digest, rest[1:] if rest.startswith("=") else None, job or None)


@dataclasses.dataclass(frozen=True)
class JobRecord(JsonForm):
    """
    :param args: argument path -> its leaf, cut at the size pin.snapshot.toml keeps
    :param custom_hash: the job's class defines its own ``hash()``, so its arguments may not be what it hashes
    :param detail: of a live graph, the leaves below that cut too, when there are more (None: args is complete)
    :param relocated: a leaf held the setup's location, which a build in a temporary copy of the setup (``--against``)
        recorded as the setup's own: the job's id may differ from the setup's there alone
    """

    args: Mapping[str, Arg]
    custom_hash: bool = False
    detail: Optional[Mapping[str, Arg]] = None
    relocated: bool = False


@dataclasses.dataclass(frozen=True)
class Content(JsonForm):
    """
    A job's content key (made by :mod:`sispin.graph.probe.contents`): two jobs of one digest have records that differ
    only in their paths, which stand in the key in the same places.

    :param digest: digest of what the record is made of but its paths
    :param paths: each path, in the order the key met them: [the id of the job that creates it (None: none), its
        record's text] (lists, as JSON has them: a graph holds a key per job, each decoded without a call per field)
    :param custom_hash: the job's class defines its own ``hash()`` (as its record says)
    :param leaves: of a kept graph's job, each argument path whose leaf is a path -> its place in paths (what a job
        of the same digest is compared by, without the record); empty for a key sent in place of a record
    """

    digest: str
    paths: List[List[Optional[str]]]
    custom_hash: bool
    leaves: Dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class RecordedOutput(JsonForm):
    """
    A registered output of a set, as a build finds it and pin.snapshot.toml records it.

    :param job: id of the job that creates the registered output ("" when no job creates it)
    :param path: the output's path inside the job directory
    """

    job: str
    path: str


def records_below(outputs: Mapping[str, RecordedOutput]) -> Optional[Dict[str, str]]:
    """
    :param outputs: the outputs a build's graph is to be compared with (a snapshot's, another build's)
    :return: the ``records`` to ask the build for: output -> its job id, so that it records every job below each
        output whose job differs (:func:`differing_outputs`); None for no outputs, no record
    """
    return {name: output.job for name, output in outputs.items()} or None


def differing_outputs(outputs: Mapping[str, RecordedOutput], asked: Optional[Mapping[str, str]]) -> List[str]:
    """
    :param outputs: a build's outputs
    :param asked: the ``records`` the build was asked for (:func:`records_below`)
    :return: the outputs below which the build records every job: those whose job is not the one asked with
    """
    if not asked:
        return []
    return [name for name, output in outputs.items() if output.job and asked.get(name) != output.job]


@dataclasses.dataclass(frozen=True)
class Clone(JsonForm):
    """
    A CloneGitRepositoryJob of the graph: its arguments by their parameter names (:data:`sispin.clonejob.PARAMETERS`),
    as its object holds them.

    :param job: the job's id
    :param url: its url argument
    :param commit: its commit argument (None: it follows a branch)
    :param hash_overwrite: the hash_overwrite set on its out_repository, if any
    :param changed: its arguments that its object no longer holds (set after the job got its id), ``name: old -> new``
    :param checkout_folder_name: the folder of its output
    :param files_to_checkout: None: the whole commit
    :param patches: None: none
    :param branch: None: the default branch
    :param clone_submodules: whether it clones the submodules too
    :param alias: the value it carries as an alias (a string overwrite), if any
    :param where: ``file:line`` of the config code that first built it ("" when sispin built it, e.g. ``exp.repo()``,
        or the build was not watched)
    """

    job: str
    url: str
    commit: Optional[str]
    hash_overwrite: Optional[str]
    changed: Tuple[str, ...] = ()
    checkout_folder_name: str = "repository"
    files_to_checkout: Optional[Tuple[str, ...]] = None
    patches: Optional[Tuple[str, ...]] = None
    branch: Optional[str] = None
    clone_submodules: bool = False
    alias: Optional[str] = None
    where: str = ""

    def arguments(self) -> Dict[str, Any]:
        """:return: the job's arguments by parameter name, as a call that builds it would pass them"""
        held = {name: getattr(self, name) for name, _ in PARAMETERS}
        return {name: list(value) if isinstance(value, tuple) else value for name, value in held.items()}


@dataclasses.dataclass(frozen=True)
class Assignment(JsonForm):
    """
    A ``hash_overwrite`` that config code assigned on a path of a clone job.

    :param clone: the clone job's id
    :param value: the overwrite, as written
    :param where: ``file:line`` of the assignment (``pin.toml`` when sispin applied a pin's bound hash_overwrite)
    :param own: set on the clone's own output before any job used it, as ``exp.repo()`` sets a pin's alias (so
        moving the call to ``exp.repo()`` keeps every id)
    """

    clone: str
    value: str
    where: str
    own: bool = False


@dataclasses.dataclass(frozen=True)
class ValueUse(JsonForm):
    """
    A place where config code took a pinned value out of the graph as a plain value.

    :param what: the value, e.g. ``exp.commit('rc') of set 'demo'`` or ``get_path() of a path of <clone id>``
    :param where: ``file:line`` of the code that took it
    :param repo: the repository whose checkout or imported code it is (``exp.checkout``/``exp.imported``), if so
    :param set_name: the set whose lock values it is (the experiment set's API), if so
    """

    what: str
    where: str
    repo: Optional[str] = None
    set_name: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Escape(JsonForm):
    """
    A path created by a CloneGitRepositoryJob (its output, a copy, a ``join_right``...) with a ``hash_overwrite``,
    among the hashed arguments of a job: that job's id no longer depends on the commit.

    :param job: the id of the job that hashes the path
    :param argument: where in the job's arguments, e.g. ``returnn_config.config['rc_root']``
    :param clone: the id of the CloneGitRepositoryJob that created the path
    :param hash_overwrite: the overwrite, as the user wrote it
    :param alias: the value it carries as an alias of the clone (see :func:`sispin.graph.probe.main.alias_form`), if any
    """

    job: str
    argument: str
    clone: str
    hash_overwrite: str
    alias: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Overwrite(JsonForm):
    """
    A string ``hash_overwrite`` on a path no clone created, hashed by a job: it hashes like a clone's path carrying
    the same value as an alias.

    :param value: the overwrite
    :param path: the path's own text
    :param job: the first job found hashing it
    :param argument: where in that job's arguments
    :param where: ``file:line`` where config code gave the value ("" when unknown)
    """

    value: str
    path: str
    job: str
    argument: str
    where: str


@dataclasses.dataclass(frozen=True)
class SetGraph(JsonForm):
    """
    The job graph a set's configs build, as the probe reports it (``graph`` mode).

    :param set_name: the experiment set
    :param outputs: registered output name -> what creates it
    :param jobs: id of every job the outputs need -> whether it is finished in work/
    :param clones: the CloneGitRepositoryJobs among them
    :param escapes: every clone path with a hash_overwrite that a job hashes
    :param records: job id -> what its id is made of (for explaining a change)
    :param contents: job id -> its content key, when the build was asked for them: of the jobs it recorded (where a
        key stands for the record), or in place of the record of each job whose key the kept graph it is compared
        with has (the parent makes that record from the kept one)
    :param inputs: job id -> the ids of the jobs whose outputs it uses
    :param pinned: id of each clone of one of the set's pins (however built) -> that pin (its repository entry)
    :param blind: job id -> the pins it uses but keeps its id for when that pin's commit moves
    :param changed_jobs: jobs that use a pin and whose arguments changed after they got their id (the id cannot
        follow the commit; not checked for blindness)
    :param value_uses: where config code took a pinned value out of the graph (then only a build with the pins moved
        can tell what depends on it)
    :param awaits: per async config, how many ``await tk.async_run(...)`` it got past
    :param waiting: the configs still waiting for unfinished jobs (what they build after the wait is not known yet)
    :param states: job id -> attribute -> digest of its whole value, when the build was asked for them
    :param assignments: every hash_overwrite assigned on a clone's path while the configs loaded
    :param collisions: (job id, file:line) of constructions that a hash_overwrite bound to several commits merged
        into a job built before with other arguments
    :param aliases: repository -> (clone, hash_overwrite) of each pin that binds a legacy overwrite to its clone: the
        :func:`~sispin.clonejob.clone_identity` of the clone as the lock makes it (its commit, patches, ...)
    :param overwrites: every string hash_overwrite on a path no clone created that a job hashes
    :param requests: of each unfinished job, what its tasks ask the engine for, when the build was asked for them:
        (CPU-hours, GPU-hours, the most memory one task asks for in GB); None for a job whose request is not known
        (see :func:`sispin.graph.probe.requests.requested`)
    :param site_modules: the top-level modules the configs imported from the Python installation's site directories
        (TensorFlow, numpy...): what the builds of the set at moved pins import before they fork (see
        :func:`sispin.graph.build.load_graphs`); none when the configs changed the environment, which an import
        may read
    :param finished_of: job id -> whether Sisyphus finished it in work/, for each job id the build was asked about
        (the jobs of a kept graph: where this build's Sisyphus settings put work/ and what marks a job finished);
        None where a job's directory holds its tags, which the id does not
    """

    set_name: str
    outputs: Dict[str, RecordedOutput]
    jobs: Dict[str, bool]
    clones: Tuple[Clone, ...]
    escapes: Tuple[Escape, ...] = ()
    records: Mapping[str, JobRecord] = dataclasses.field(default_factory=dict)
    contents: Dict[str, Content] = dataclasses.field(default_factory=dict)
    inputs: Dict[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)
    pinned: Dict[str, str] = dataclasses.field(default_factory=dict)
    blind: Dict[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)
    changed_jobs: Tuple[str, ...] = ()
    value_uses: Tuple[ValueUse, ...] = ()
    awaits: Dict[str, int] = dataclasses.field(default_factory=dict)
    waiting: Tuple[str, ...] = ()
    states: Optional[Dict[str, Dict[str, str]]] = None
    assignments: Tuple[Assignment, ...] = ()
    collisions: Tuple[Tuple[str, str], ...] = ()
    aliases: Dict[str, Tuple[str, str]] = dataclasses.field(default_factory=dict)
    overwrites: Tuple[Overwrite, ...] = ()
    requests: Optional[Dict[str, Optional[Tuple[float, float, float]]]] = None
    site_modules: Tuple[str, ...] = ()
    finished_of: Dict[str, Optional[bool]] = dataclasses.field(default_factory=dict)

    def outputs_above(self) -> Callable[[str], Tuple[str, ...]]:
        """
        :return: job id -> the outputs whose job is that job or uses it, directly or through others, sorted (each
            asked walks only the jobs above the job: a graph with hundreds of overwrites asks hundreds of times)
        """
        users: Dict[str, List[str]] = {}
        for job, used in self.inputs.items():
            for dependency in used:
                users.setdefault(dependency, []).append(job)
        created: Dict[str, List[str]] = {}
        for name, output in self.outputs.items():
            if output.job:
                created.setdefault(output.job, []).append(name)

        def above(job: str) -> Tuple[str, ...]:
            seen, stack, names = {job}, [job], []
            while stack:
                current = stack.pop()
                names += created.get(current, ())
                for user in users.get(current, ()):
                    if user not in seen:
                        seen.add(user)
                        stack.append(user)
            return tuple(sorted(names))

        return above


@dataclasses.dataclass(frozen=True)
class Failure(JsonForm):
    """
    The configs' own error (or exit) in the probe.

    :param where: ``file:line`` of the deepest frame in the setup's own code (configs, recipes; not Sisyphus or sispin)
    :param exception: ``Type: message``
    :param traceback: the whole traceback
    :param exit_code: the exit code of the sispin error the configs raised (:data:`sispin.errors.EXIT_CODES`), if it
        was one
    """

    where: str
    exception: str
    traceback: str
    exit_code: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class CloneCall(JsonForm):
    """
    A CloneGitRepositoryJob call of config code, as written (``pin import`` asks what moving it to ``exp.repo()`` does).

    :param repo: the pin's repository it would be replaced with
    :param positional: how many of its arguments were given positionally (in the class's parameter order)
    :param arguments: every argument given, by parameter name
    """

    repo: str
    positional: int
    arguments: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class CloneIdsRequest(JsonForm):
    """
    What the probe's ``clone-ids`` mode is asked.

    :param set_name: the set whose pins replace the calls
    :param calls: the calls as written
    """

    set_name: str
    calls: Tuple[CloneCall, ...]


@dataclasses.dataclass(frozen=True)
class CloneIds(JsonForm):
    """
    The job ids of one :class:`CloneCall`, the probe's ``clone-ids`` report (one per call, in the request's order).

    :param original: the id of the call as written
    :param replacement: the id of the set's ``exp.clone_job(repo)``
    """

    original: str
    replacement: str


@dataclasses.dataclass(frozen=True)
class Reply(JsonForm):
    """
    What the probe writes to its OUT file, in every mode.

    :param report: the mode's report, as JSON data the parent reads back: a :class:`SetGraph` (``graph``), a
        :class:`CloneIds` per call (``clone-ids``), set -> repository -> clone job id (``set-clones``); None when it
        failed
    :param read: what the build read (a ledger of :mod:`sispin.graph.probe.ledger`), when it was asked to record
    :param failure: the configs' error, when they raised
    """

    report: Any = None
    read: Optional[Dict[str, Any]] = None
    failure: Optional[Failure] = None
