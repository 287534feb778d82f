"""
The job graph of an experiment set, as Sisyphus builds it from the set's configs.

The core never imports Sisyphus: it runs :mod:`sispin.graph.probe` in a subprocess (:mod:`sispin.graph.runner`) and
reads what it reports. Nothing runs and nothing is written to work/.
"""

from __future__ import annotations

__all__ = [
    "Arg",
    "JobRecord",
    "Output",
    "Clone",
    "Escape",
    "Overwrite",
    "SetGraph",
    "load_graph",
    "outputs_above",
]

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from sispin.errors import SisyphusError
from sispin.graph.runner import run_probe
from sispin.lock.lockfile import Lockfile, inside_setup
from sispin.text import shown_key


@dataclass(frozen=True)
class Arg:
    """
    One hashed argument leaf of a job.

    :param digest: digest of its content (for a path: the creator's class, the file, the overwrite)
    :param value: its value as Python shows it, when short enough to keep
    :param job: for a path, the id of the job that creates it
    """

    digest: str
    value: Optional[str] = None
    job: Optional[str] = None

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


@dataclass(frozen=True)
class JobRecord:
    """
    :param args: argument path -> its leaf, cut at the size pin.snapshot.toml keeps
    :param custom_hash: the job's class defines its own ``hash()``, so its arguments may not be what it hashes
    :param detail: of a live graph, the leaves below that cut too, when there are more (None: args is complete)
    """

    args: Mapping[str, Arg]
    custom_hash: bool = False
    detail: Optional[Mapping[str, Arg]] = None


@dataclass(frozen=True)
class Output:
    """
    :param job: id of the job that creates the registered output ("" when no job creates it)
    :param path: the output's path inside the job directory
    """

    job: str
    path: str


@dataclass(frozen=True)
class Clone:
    """
    :param job: the CloneGitRepositoryJob's id
    :param url: its url argument
    :param commit: its commit argument (None: it follows a branch)
    :param hash_overwrite: the hash_overwrite set on its out_repository, if any
    :param alias: the value it carries as an alias (a string overwrite), if any
    :param changed: its arguments that its object no longer holds (set after the job got its id), ``name: old -> new``
    :param folder: the folder of its output (``checkout_folder_name``)
    :param files: its ``files_to_checkout`` (None: the whole commit)
    :param patches: its ``patches`` (None: none)
    :param branch: its ``branch`` argument (None: the default branch)
    :param submodules: its ``clone_submodules``
    """

    job: str
    url: str
    commit: Optional[str]
    hash_overwrite: Optional[str]
    changed: Tuple[str, ...] = ()
    folder: str = "repository"
    files: Optional[Tuple[str, ...]] = None
    patches: Optional[Tuple[str, ...]] = None
    branch: Optional[str] = None
    submodules: bool = False
    alias: Optional[str] = None


@dataclass(frozen=True)
class Assignment:
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


@dataclass(frozen=True)
class ValueUse:
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


@dataclass(frozen=True)
class Escape:
    """
    A path created by a CloneGitRepositoryJob (its output, a copy, a ``join_right``...) with a ``hash_overwrite``,
    among the hashed arguments of a job: that job's id no longer depends on the commit.

    :param job: the id of the job that hashes the path
    :param argument: where in the job's arguments, e.g. ``returnn_config.config['rc_root']``
    :param clone: the id of the CloneGitRepositoryJob that created the path
    :param hash_overwrite: the overwrite, as the user wrote it
    :param outputs: the registered outputs that depend on the job
    :param alias: the value it carries as an alias of the clone (see :func:`sispin.graph.probe.alias_form`), if any
    """

    job: str
    argument: str
    clone: str
    hash_overwrite: str
    outputs: Tuple[str, ...]
    alias: Optional[str] = None


@dataclass(frozen=True)
class Overwrite:
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


@dataclass(frozen=True)
class SetGraph:
    """
    :param set_name: the experiment set
    :param outputs: registered output name -> what creates it
    :param jobs: id of every job the outputs need -> whether it is finished in work/
    :param clones: the CloneGitRepositoryJobs among them
    :param escapes: every clone path with a hash_overwrite that a job hashes
    :param records: job id -> what its id is made of (for explaining a change)
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
    :param aliases: repository -> (commit, hash_overwrite) of each pin that binds a legacy overwrite to its commit
    :param overwrites: every string hash_overwrite on a path no clone created that a job hashes
    """

    set_name: str
    outputs: Dict[str, Output]
    jobs: Dict[str, bool]
    clones: Tuple[Clone, ...]
    escapes: Tuple[Escape, ...] = ()
    records: Dict[str, JobRecord] = field(default_factory=dict)
    inputs: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    pinned: Dict[str, str] = field(default_factory=dict)
    blind: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    changed_jobs: Tuple[str, ...] = ()
    value_uses: Tuple[ValueUse, ...] = ()
    awaits: Dict[str, int] = field(default_factory=dict)
    waiting: Tuple[str, ...] = ()
    states: Optional[Dict[str, Dict[str, str]]] = None
    assignments: Tuple[Assignment, ...] = ()
    collisions: Tuple[Tuple[str, str], ...] = ()
    aliases: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    overwrites: Tuple[Overwrite, ...] = ()


def load_graph(
    lockfile: Lockfile,
    set_name: str,
    lock_text: Optional[str] = None,
    *,
    states: bool = False,
    moved: Optional[Dict[str, Any]] = None,
    records: Union[str, Mapping[str, str], None] = None,
    scratch_checkouts: bool = False,
) -> SetGraph:
    """
    Build the set's job graph with real Sisyphus, in a subprocess.

    :param lockfile: the setup's lockfile
    :param set_name: the set whose ``configs`` to load
    :param lock_text: load against this lockfile content instead of the file (to see a move before making it)
    :param states: report the whole state of every job (to compare with another build)
    :param moved: build the set with its pins moved (``lock_text`` holds the moved pins): {"remap": [[url, pinned
        commit, moved commit]], "awaits": {config: awaits the real build passed}}
    :param records: whose argument records to take (walking them costs as much as hashing): "all" (to record the
        set), or the outputs' recorded job ids (the jobs below each output whose id differs, to explain it), or None
    :param scratch_checkouts: the build is at pins no lockfile holds (``lock_text``): code it checks out goes with it
    :raises SisyphusError: when Sisyphus is missing, the set has no configs, or loading them fails
    """
    spec = lockfile.get_set(set_name)
    if not spec.configs:
        raise SisyphusError(f"set {set_name!r} lists no configs in pin.toml (sets.{shown_key(set_name)}.configs)")
    for config in spec.configs:
        if not (lockfile.root / config).is_file():
            raise SisyphusError(f"sets.{shown_key(set_name)}.configs: {config} does not exist")
        if not inside_setup(lockfile.root, config):
            raise SisyphusError(
                f"sets.{shown_key(set_name)}.configs: {config} leads out of the setup through a symlink"
            )
    request = {"set": set_name, "configs": list(spec.configs), "states": states, "moved": moved, "records": records}
    what = f"loading the configs of set {set_name!r}" + (" with its pins moved" if moved else "")
    report = run_probe(lockfile, ["graph"], what, lock_text, request=request, scratch_checkouts=scratch_checkouts)
    return _set_graph(set_name, report)


def _set_graph(set_name: str, report: Dict[str, Any]) -> SetGraph:
    """The probe's report of a graph as a SetGraph."""
    above = outputs_above({name: o["job"] or "" for name, o in report["outputs"].items()}, report["inputs"])
    return SetGraph(
        set_name=set_name,
        outputs={name: Output(job=o["job"] or "", path=o["path"]) for name, o in report["outputs"].items()},
        jobs=dict(report["jobs"]),
        clones=tuple(
            Clone(
                c["job"],
                c["url"],
                c["commit"],
                c["hash_overwrite"],
                tuple(c["changed"]),
                c["folder"],
                None if c["files_to_checkout"] is None else tuple(c["files_to_checkout"]),
                None if c["patches"] is None else tuple(c["patches"]),
                c["branch"],
                bool(c["clone_submodules"]),
                c["alias"],
            )
            for c in report["clones"]
        ),
        escapes=tuple(
            Escape(e["job"], e["argument"], e["clone"], e["hash_overwrite"], above(e["job"]), e["alias"])
            for e in report["escapes"]
        ),
        records={
            job: JobRecord(
                {path: Arg(*leaf) for path, leaf in record["args"].items()},
                record["custom_hash"],
                {path: Arg(*leaf) for path, leaf in record["detail"].items()} if record["detail"] else None,
            )
            for job, record in report["records"].items()
        },
        inputs={job: tuple(ids) for job, ids in report["inputs"].items()},
        pinned=dict(report["pinned"]),
        blind={job: tuple(repos) for job, repos in report["blind"].items()},
        changed_jobs=tuple(report["changed_jobs"]),
        value_uses=tuple(ValueUse(u["what"], u["where"], u["repo"], u["set"]) for u in report["value_uses"]),
        awaits=dict(report["awaits"]),
        waiting=tuple(report["waiting"]),
        states=report.get("states"),
        assignments=tuple(Assignment(a["clone"], a["value"], a["where"], a["own"]) for a in report["assignments"]),
        collisions=tuple((c["job"], c["where"]) for c in report["collisions"]),
        aliases={repo: (commit, value) for _, commit, value, repo in report["aliases"]},
        overwrites=tuple(
            Overwrite(o["value"], o["path"], o["job"], o["argument"], o["where"] or "") for o in report["overwrites"]
        ),
    )


def outputs_above(outputs: Mapping[str, str], inputs: Mapping[str, Sequence[str]]) -> Callable[[str], Tuple[str, ...]]:
    """
    :param outputs: registered output name -> id of the job that creates it ("" for none)
    :param inputs: job id -> ids of the jobs whose outputs it uses
    :return: job id -> the outputs whose job is that job or uses it, directly or through others, sorted (each asked
        walks only the jobs above the job: a graph with hundreds of overwrites asks hundreds of times)
    """
    users: Dict[str, List[str]] = {}
    for job, used in inputs.items():
        for dependency in used:
            users.setdefault(dependency, []).append(job)
    created: Dict[str, List[str]] = {}
    for name, job in outputs.items():
        if job:
            created.setdefault(job, []).append(name)

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
