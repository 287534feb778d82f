"""
``pin import PATH ... [--set NAME] [--write] [--json]``: the command line of :mod:`sispin.ops.import_pins`, and its
report: every call found with its arguments, risks and replacement, what pin.toml would get, notes and problems.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse
from pathlib import Path
from typing import Any, List

from sispin.cli.import_setup import proposed_document, setup_lines
from sispin.cli.options import add_command, json_output
from sispin.cli.output import Output
from sispin.clonejob import PARAMETERS
from sispin.lock.urls import redact_text, same_repository
from sispin.ops.import_pins import FoundCall, ImportResult, import_pins
from sispin.text import count, display_path, shown_key

#: the arguments a report shows beside url and commit, in the job's parameter order
_SHOWN_ARGUMENTS = tuple(name for name, _ in PARAMETERS if name not in ("url", "commit"))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "import",
        run,
        description="Scan Python files (statically: nothing is executed) for CloneGitRepositoryJob calls, report "
        "each with its arguments and risks, and propose [repos.*] and the pins of set NAME. --write adds them to "
        "pin.toml without touching existing entries. Exit 1 when a call is blocked (it cannot be adopted with "
        "the same job id); notes alone (what adopting implies) exit 0. With --config, the configs are loaded by "
        "real Sisyphus (no job runs) and the whole graph they build is adopted: exit 1 when that would change an "
        "id or hide a commit (nothing is written then).",
    )
    parser.add_argument("paths", metavar="PATH", nargs="+", type=Path, help="Python files or directories")
    parser.add_argument("--set", dest="set_name", metavar="NAME", help="the set that pins the found commits")
    parser.add_argument("--write", action="store_true", help="add the proposal to pin.toml (needs --set)")
    parser.add_argument(
        "--config",
        dest="configs",
        metavar="CONFIG",
        action="append",
        default=[],
        help="adopt the whole setup these configs build (repeatable; relative to the setup root, where pin.toml is "
        "or will be; PATH is still scanned, for the calls' replacements): every clone in the graph becomes a pin of "
        "the set, its hash_overwrite an alias bound to its commit; confirmed by building the graph again (every "
        "output keeps its job id); --write then records the snapshot too. Needs --set",
    )
    parser.add_argument(
        "--accept-unpinned",
        action="store_true",
        help="with --config: accept the clones that pin no full commit by their URL (allow_unpinned)",
    )
    json_output(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    result = import_pins(
        args.paths,
        set_name=args.set_name,
        write=args.write,
        configs=args.configs,
        accept_unpinned=args.accept_unpinned,
    )
    return render(result, out, as_json=args.json)


def render(result: ImportResult, out: Output, *, as_json: bool) -> int:
    """
    :param result: what ``pin import`` found, proposes and wrote
    :param out: the report (or JSON)
    :param as_json: print JSON instead of text
    :return: exit code: 0 (also with notes), or 1 when some call (with configs: the setup) cannot be adopted
    :raises SisyphusError: after the report, when job ids could not be computed (nothing was written)
    """
    # what is shown never repeats a secret-looking string found in the code; what is written is checked by pin.toml's
    # rules, which refuse a URL with credentials
    if as_json:
        out.json(_masked(result.to_json()))
    else:
        for line in _report_lines(result):
            out.result(redact_text(line))
        for problem in result.problems:
            out.result(redact_text(f"problem: {problem}"))
            for detail in problem.details:
                out.detail(redact_text(f"    {detail}"))
        if result.written:
            out.info(result.written)
    if result.unconfirmed is not None:
        raise result.unconfirmed
    if result.write and result.written is None and not as_json:
        out.info(f"{display_path(result.path)}: nothing written ({count(len(result.problems), 'problem')} above)")
    return 1 if result.problems else 0


def _report_lines(result: ImportResult) -> List[str]:
    """:return: the calls, the proposal, the warnings and the notes (the problems follow)"""
    files = len({call.site.file for call in result.calls})
    lines = [f"found {count(len(result.calls), 'CloneGitRepositoryJob call')} in {count(files, 'file')}"]
    for call in result.calls:
        lines += _call_lines(call, result.set_name)
    document = proposed_document(result.proposal, result.set_name, result.whole, result.set_exists)
    added = f" (added to the existing [sets.{shown_key(result.set_name)}]; nothing there changes)"
    lines += [f"\nproposed for pin.toml{added if result.set_exists else ''}:\n", document] if document else []
    lines += [f"warning: {warning}" for warning in result.warnings]
    by_file = result.by_file
    if _several_entries(result) and len(by_file) > 1 and result.whole is None:
        # one set may pin several commits of a repository; splitting by file is the other way, and often clearer
        lines.append("\nentries each file uses (to make one set per file instead: pin import FILE --set NAME):")
        lines += [f"    {file}: {', '.join(entries)}" for file, entries in by_file.items()]
    lines += [f"note: {note}" for note in result.notes]
    if result.whole is not None:
        lines += setup_lines(result.whole, result.set_name)
    return lines


def _call_lines(call: FoundCall, set_name: str) -> List[str]:
    site = call.site
    described = [site.url or f"url={site.expressions.get('url')}"]
    described.append(f"commit {site.commit}" if site.commit else "no commit")
    described += [f"{key}={site.arguments[key]!r}" for key in _SHOWN_ARGUMENTS if site.arguments.get(key) is not None]
    lines = [f"\n{site.where}  {'  '.join(described)}"]
    if site.helper:
        lines.append(f"    through helper {site.helper}")
    lines += [f"    risk: {risk}" for risk in site.risks]
    if call.unbuilt:
        lines.append(f"    not built by the configs of sets.{shown_key(set_name)}: stays as written, not pinned")
    elif call.entry:
        verdict = ""
        if call.job_ids:
            old, new = call.job_ids
            verdict = f"  (same job id {old})" if old == new else f"  (JOB ID DIFFERS: {old} -> {new})"
        if call.kept:  # the note on its hash_overwrite says why; the clone's own id is not what would change
            replacement, verdict = "keep as written until the pin is upgraded (pin.toml binds its hash_overwrite)", ""
        elif site.helper:
            replacement = f'pass experiment_set("{set_name}").commit("{call.entry}") as the commit'
        else:
            replacement = f'replace with: experiment_set("{set_name}").repo("{call.entry}")'
        lines.append(f"    {replacement}{verdict}")
    return lines


def _several_entries(result: ImportResult) -> bool:
    """Whether the proposal has more than one entry of a repository (its URL up to spelling)."""
    urls = [table["url"] for table in result.proposal.repos.values()]
    return any(same_repository(a, b) for i, a in enumerate(urls) for b in urls[i + 1 :])


def _masked(value: Any) -> Any:
    """A JSON-able value with every string (keys too) passed through :func:`redact_text`."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {_masked(key): _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value
