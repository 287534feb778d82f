"""
No file of the repository names a path of one machine: a home, a work or scratch mount, a temporary directory (but
those sispin itself makes there, named sispin-*), or the checkout's own location. A figure or an example that
depends on such a path cannot be repeated from the repository. Test fixtures are exempt: they write such paths on
purpose (a relative path refused, a .gitignore).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import List

from conftest import PROJECT_ROOT

#: an absolute path below a root that differs from machine to machine (not a URL's path, not ~/ or $HOME/)
_MACHINE_PATH_RE = re.compile(r"(?<![\w.~$}:/-])/(?:home|Users|root|u|work|scratch|mnt|nas|data|tmp|var/tmp)/[\w.-]+")
#: what sispin itself makes in a temporary directory, the same on every machine
_SISPIN_OWN = re.compile(r"/(?:var/)?tmp/sispin-")


def machine_paths(text: str, checkout: Path) -> List[str]:
    """:return: the machine paths a text names (the checkout's own location among them)"""
    found = [match.group(0) for match in _MACHINE_PATH_RE.finditer(text) if not _SISPIN_OWN.match(match.group(0))]
    return found + ([str(checkout)] if str(checkout) in text else [])


def test_no_file_of_the_repository_names_a_machine_path():
    listed = subprocess.run(["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    named = []
    for name in listed.stdout.splitlines():
        path = PROJECT_ROOT / name
        if name.startswith("tests/") or not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        named += [f"{name}: {found}" for found in machine_paths(text, PROJECT_ROOT)]
    assert not named, named


def test_a_machine_path_is_found_and_urls_and_home_relative_paths_are_not():
    checkout = Path("/srv/checkouts/sispin")
    assert machine_paths("(/tmp/run1/old-setup/pin.toml: sets.exp1)", checkout) == ["/tmp/run1"]
    assert machine_paths("see /home/alice/setup and /u/bob/x", checkout) == ["/home/alice", "/u/bob"]
    assert machine_paths(f"cd {checkout} && make", checkout) == [str(checkout)]
    quiet = "https://h/u/x/repo ~/scratch/x $HOME/tmp/y /tmp/sispin-slurm/slurm.conf /data/ recipe/tmp/x"
    assert machine_paths(quiet, checkout) == []
