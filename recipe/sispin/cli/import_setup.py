"""``pin import --config``'s part of the report: what adopting the whole setup pins, accepts and keeps."""

from __future__ import annotations

__all__ = ["setup_lines", "proposed_document"]

from typing import List, Optional

import tomlkit

from sispin.adopt.propose import Proposal, add_to_document
from sispin.adopt.setup import SetupAdoption, add_adoption
from sispin.text import count, shown_key


def setup_lines(whole: SetupAdoption, set_name: str) -> List[str]:
    """:return: what adopting the setup's graph pins, accepts and keeps"""
    lines = [
        f"\nthe setup as sets.{shown_key(set_name)} ({', '.join(whole.configs)}): {count(whole.jobs, 'job')}, "
        f"{count(whole.outputs, 'output')}, {count(whole.clones, 'clone')}"
    ]
    for repo, commit in sorted(whole.pinned.items()):
        alias = f"  hash_overwrite {whole.aliases[repo]!r} bound to it" if repo in whole.aliases else ""
        lines.append(f"    {repo} {commit[:7]}{alias}")
    for url in whole.unpinned:
        accepted = "accepted by URL (allow_unpinned)" if whole.accepted else "not accepted (--accept-unpinned)"
        lines.append(f"    {url}  no full commit: {accepted}")
    for config in whole.waiting:
        lines.append(
            f"note: {config} waits for unfinished jobs: what it builds after that is not adopted yet (run the import "
            "again once they finished)"
        )
    if whole.graph is not None:
        kept = "keeps its job id" if whole.kept == 1 else "keep their job id"
        lines.append(f"{whole.kept} of {count(whole.outputs, 'output')} {kept}")
    return lines


def proposed_document(
    proposal: Proposal, set_name: str, whole: Optional[SetupAdoption], set_exists: bool
) -> Optional[str]:
    """
    :param set_exists: whether pin.toml has the set already: then only what is added to it is shown (its configs and
        pins stay as they are)
    :return: what pin.toml would get (the scan's proposal, or the whole setup's adoption); None for nothing
    """
    if not (proposal.repos or proposal.pins or whole):
        return None
    document = tomlkit.document()
    if whole is not None:
        add_adoption(document, whole, set_name)
    else:
        add_to_document(document, proposal, set_name)
        if set_exists:  # only what is added to it: its configs stay as they are
            del document["sets"][set_name]["configs"]
    return tomlkit.dumps(document).strip()
