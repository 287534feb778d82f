"""
Adapter side of the hash guard: load Sisyphus configs and describe the job graph they build, without running a job.

Run by :mod:`sispin.graph` in the setup root, in a fresh process (Sisyphus keeps one global graph and one job
object per id, so every set gets its own process), as

- ``python -m sispin.sisyphus_probe graph OUT CONFIG ...``: the outputs, jobs and clones the configs build;
- ``python -m sispin.sisyphus_probe clone-ids OUT REQUEST``: job ids of hand-written CloneGitRepositoryJob calls
  and of their ``exp.repo()`` replacements;
- ``python -m sispin.sisyphus_probe set-clones OUT SET ...``: the job id of each of the sets' clone jobs.

It writes JSON to OUT rather than stdout, which config code may print to. It only reads work/ (to see which jobs
finished).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List


def describe(config_files: List[str]) -> Dict[str, Any]:
    """
    :param config_files: Sisyphus config files, relative to the setup root (the working directory)
    :return: {"outputs": {name: {"job", "path"}}, "jobs": {job id: finished}, "clones": [{"job", "url", "commit",
        "branch", "hash_overwrite"}]}
    """
    from sisyphus import graph
    from sisyphus import toolkit as tk
    from sisyphus.job import job_finished
    from sisyphus.loader import config_manager

    from sispin.clonejob import CLASS_NAME

    config_manager.load_configs(config_files)
    outputs = {}
    for target in tk.sis_graph.targets:
        if isinstance(target, graph.OutputPath):
            path = target._sis_path
            creator = path.creator
            outputs[target.name] = {"job": creator.job_id() if creator else None, "path": path.path}
    jobs = {}
    clones = []
    # update_graph=False: walk the graph as built, without the runnable checks that would touch work/
    for job in tk.sis_graph.jobs(update_graph=False):
        jobs[job.job_id()] = job_finished(job._sis_path())
        if type(job).__name__ == CLASS_NAME:
            overwrite = job.out_repository.hash_overwrite
            clones.append(
                {
                    "job": job.job_id(),
                    "url": job.url,
                    "commit": job.commit,
                    "branch": job.branch,
                    "hash_overwrite": None if overwrite is None else str(overwrite[-1]),
                }
            )
    return {"outputs": outputs, "jobs": jobs, "clones": clones}


def clone_ids(request: Dict[str, Any]) -> List[Dict[str, str]]:
    """
    :param request: {"set": set name, "calls": [{"repo", "positional", "arguments"}]}: each call as written
        (its first ``positional`` arguments positionally, in CloneGitRepositoryJob's parameter order)
    :return: per call {"original": job id of the call as written, "replacement": id of exp.clone_job(repo)}
    """
    from i6_core.tools.git import CloneGitRepositoryJob

    from sispin.clonejob import PARAMETERS
    from sispin.sets import experiment_set

    exp = experiment_set(request["set"])
    results = []
    for call in request["calls"]:
        names = [name for name, _ in PARAMETERS][: call["positional"]]
        args = [call["arguments"][name] for name in names]
        kwargs = {k: v for k, v in call["arguments"].items() if k not in names}
        results.append(
            {
                "original": CloneGitRepositoryJob(*args, **kwargs).job_id(),
                "replacement": exp.clone_job(call["repo"]).job_id(),
            }
        )
    return results


def set_clones(set_names: List[str]) -> Dict[str, Dict[str, str]]:
    """:return: set name -> repository name -> id of the set's CloneGitRepositoryJob for it"""
    from sispin.sets import experiment_set

    sets = [experiment_set(name) for name in set_names]
    return {exp.name: {repo: exp.clone_job(repo).job_id() for repo in exp.spec.pins} for exp in sets}


def main(argv: List[str]) -> int:
    """:param argv: ``graph OUT CONFIG ...``, ``clone-ids OUT REQUEST`` or ``set-clones OUT SET ...``"""
    mode, out, rest = argv[0], argv[1], argv[2:]
    if mode == "graph":
        report: Any = describe(rest)
    elif mode == "set-clones":
        report = set_clones(rest)
    else:
        with open(rest[0], encoding="utf-8") as handle:
            report = clone_ids(json.load(handle))
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
