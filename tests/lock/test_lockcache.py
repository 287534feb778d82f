"""
The config path's cache of validated lockfiles (sispin.lock.cache): the same lockfile as a full validation gives, and
never one the current rules would refuse: other bytes, other validating code, a damaged or foreign cache file all
mean a full validation.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RECIPE_DIR, git
from sispin.errors import LockfileError
from sispin.lock import cache as lockcache
from sispin.lock.loading import load_lockfile

SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
#: every part of the format: repos with and without branch and checkout, plain and table pins with every argument
#: type, setup entries
LOCK = f"""\
version = 1

[repos.returnn_common]  # a comment
url = "https://github.com/rwth-i6/returnn_common"
branch = "main"
checkout = "returnn_common"

[repos.i6-models]
url = "git@github.com:rwth-i6/i6_models.git"

[sets.demo]
configs = ["config/demo.py", "config/more.py"]
returnn_common = "{SHA}"
i6-models = {{ commit = "{SHA}", branch = "main", clone_submodules = true, files_to_checkout = ["a"], patches = [] }}

[sets.empty]

[setup.sisyphus]
url = "https://github.com/rwth-i6/sisyphus"
commit = "{SHA}"
path = "tools/sisyphus"
"""


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    path = tmp_path / "setup" / "pin.toml"
    path.parent.mkdir()
    path.write_text(LOCK)
    return path


def cache_of(lock: Path) -> Path:
    return lock.parent / lockcache.CACHE_DIR / f"{lock.name}.pickle"


def test_a_later_load_comes_from_the_cache_and_equals_a_full_validation(lock, monkeypatch):
    first = lockcache.load_cached(lock)
    assert first == load_lockfile(lock)
    assert cache_of(lock).is_file()
    monkeypatch.setattr(lockcache, "parse_lockfile", lambda text, path: pytest.fail("validated again"))
    second = lockcache.load_cached(lock)
    assert second == first
    assert second.sets["demo"].pins["i6-models"].job_kwargs == {
        "branch": "main",
        "clone_submodules": True,
        "files_to_checkout": ["a"],
        "patches": [],
    }
    assert second.root == lock.parent


def test_other_bytes_are_validated_again(lock):
    lockcache.load_cached(lock)
    lock.write_text(LOCK.replace(f'returnn_common = "{SHA}"', 'returnn_common = "f7ad63a"'))
    with pytest.raises(LockfileError, match=r'sets.demo.returnn_common: "f7ad63a" is not a full 40-hex commit'):
        lockcache.load_cached(lock)
    lock.write_text(LOCK + "# a comment changes the bytes, not the pins\n")
    assert lockcache.load_cached(lock) == load_lockfile(lock)


def test_bytes_that_are_no_utf8_are_said_as_load_lockfile_says_and_never_cached(lock):
    lock.write_bytes(LOCK.encode() + b"# \xff\n")
    with pytest.raises(LockfileError) as expected:
        load_lockfile(lock)
    with pytest.raises(LockfileError) as said:
        lockcache.load_cached(lock)
    assert str(said.value) == str(expected.value)
    assert not cache_of(lock).exists()


def test_other_validating_code_validates_again(lock, tmp_path):
    # a copy of sispin whose rules refuse what the cache holds: a repository name with '-'
    package = tmp_path / "copy" / "sispin"
    shutil.copytree(RECIPE_DIR / "sispin", package, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import sys; from sispin.lock import cache; print(cache.load_cached(sys.argv[1]).sets['demo'].name)"
    environ = {**os.environ, "PYTHONPATH": str(package.parent)}
    assert subprocess.run(
        [sys.executable, "-c", code, str(lock)], env=environ, capture_output=True, text=True, check=True
    ).stdout.split() == ["demo"]
    source = (package / "lock" / "lockfile.py").read_text()
    stricter = source.replace('[A-Za-z0-9_.-]*")', '[A-Za-z0-9_.]*")', 1)
    assert stricter != source, "the name rule of lockfile.py is where this test expects it"
    (package / "lock" / "lockfile.py").write_text(stricter)
    refused = subprocess.run([sys.executable, "-c", code, str(lock)], env=environ, capture_output=True, text=True)
    assert refused.returncode == 1
    assert "repos.i6-models: names may use only letters" in refused.stderr


def test_the_validating_modules_are_read_from_the_imports_of_the_validator():
    # never a hand-written list: every module whose code validation runs is there, the writing side is not
    modules = lockcache.validating_modules()
    for needed in ("validate.py", "lockfile.py", "urls.py"):
        assert f"sispin/lock/{needed}" in modules
    assert "sispin/clonejob.py" in modules and "sispin/errors.py" in modules
    assert "sispin/lock/editing.py" not in modules and "sispin/lock/cache.py" not in modules


def test_a_change_of_the_url_rules_validates_again(lock, tmp_path):
    package = tmp_path / "copy" / "sispin"
    shutil.copytree(RECIPE_DIR / "sispin", package, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import sys; from sispin.lock import cache; print(cache.load_cached(sys.argv[1]).repos['i6-models'].url)"
    environ = {**os.environ, "PYTHONPATH": str(package.parent)}
    run = [sys.executable, "-c", code, str(lock)]
    assert subprocess.run(run, env=environ, capture_output=True, text=True, check=True).stdout.strip()
    urls = package / "lock" / "urls.py"
    stricter = urls.read_text().replace(
        "if _SCP_LIKE_RE.fullmatch(url):\n        return None", "if False:\n        pass"
    )
    assert stricter != urls.read_text(), "the scp-like rule of urls.py is where this test expects it"
    urls.write_text(stricter)
    refused = subprocess.run(run, env=environ, capture_output=True, text=True)
    assert refused.returncode == 1 and "repos.i6-models.url" in refused.stderr, refused.stderr


def test_without_the_validating_source_nothing_is_cached(lock, tmp_path):
    # an installation of bytecode only: the key cannot name the code, so every load validates
    package = tmp_path / "copy" / "sispin"
    shutil.copytree(RECIPE_DIR / "sispin", package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-b", str(package)], check=True)
    for name in lockcache.validating_modules():
        (package.parent / name).unlink()
    code = "import sys; from sispin.lock import cache; print(sorted(cache.load_cached(sys.argv[1]).sets))"
    environ = {**os.environ, "PYTHONPATH": str(package.parent)}
    result = subprocess.run([sys.executable, "-c", code, str(lock)], env=environ, capture_output=True, text=True)
    assert result.stdout.strip() == "['demo', 'empty']", result.stderr
    assert not cache_of(lock).exists()


def test_a_damaged_or_foreign_cache_file_is_ignored_and_replaced(lock, tmp_path):
    lockcache.load_cached(lock)
    cache = cache_of(lock)
    key = cache.read_bytes()[:32]
    marker = tmp_path / "ran"
    foreign = pickle.dumps(type("Evil", (), {"__reduce__": lambda self: (os.system, (f"touch {marker}",))})())
    for content in (b"", b"garbage", cache.read_bytes()[:-10], key + foreign, key + pickle.dumps([1, 2])):
        cache.write_bytes(content)
        assert lockcache.load_cached(lock) == load_lockfile(lock)
        assert cache.read_bytes()[:32] == key, "rewritten"
    assert not marker.exists(), "nothing in a cache file runs"


def test_a_setup_that_cannot_hold_the_cache_still_loads(lock):
    (lock.parent / lockcache.CACHE_DIR).write_text("a file where the cache directory would go")
    assert lockcache.load_cached(lock) == load_lockfile(lock)
    assert lockcache.load_cached(lock) == load_lockfile(lock)


def test_the_cache_is_ignored_by_git_and_as_readable_as_the_lock(lock):
    git(lock.parent, "init", "-q")
    lock.chmod(0o640)
    lockcache.load_cached(lock)
    assert git(lock.parent, "status", "--porcelain", "--untracked-files=all") == "?? pin.toml"
    assert cache_of(lock).stat().st_mode & 0o777 == 0o640


def test_errors_are_those_of_a_full_validation(tmp_path):
    missing = tmp_path / "pin.toml"
    with pytest.raises(LockfileError) as raised:
        lockcache.load_cached(missing)
    with pytest.raises(LockfileError) as expected:
        load_lockfile(missing)
    assert str(raised.value) == str(expected.value)
    missing.write_bytes(b"version = 1\n# \xff\n")
    with pytest.raises(LockfileError, match="cannot read"):
        lockcache.load_cached(missing)


SNAPSHOT = """\
version = 1

[sets.demo.outputs]
"demo/out" = { job = "m/Use.abc", path = "out" }
"""


def test_the_snapshot_is_read_through_the_same_cache_by_the_code_that_reads_it(tmp_path, monkeypatch):
    from sispin.graph import snapshot

    path = tmp_path / "pin.snapshot.toml"
    path.write_text(SNAPSHOT)
    first = snapshot.read_recorded(path)
    assert first == ({"demo": {"demo/out": snapshot.RecordedOutput("m/Use.abc", "out")}}, {})
    assert (tmp_path / lockcache.CACHE_DIR / "pin.snapshot.toml.pickle").is_file()
    monkeypatch.setattr(snapshot, "parse_snapshot", lambda text, where: pytest.fail("parsed again"))
    assert snapshot.read_recorded(path) == first
    monkeypatch.undo()
    path.write_text(SNAPSHOT.replace("m/Use.abc", "m/Use.def"))
    assert snapshot.read_recorded(path)[0]["demo"]["demo/out"].job == "m/Use.def", "other bytes are parsed again"
    path.write_text(SNAPSHOT.replace("version = 1", "version = 2"))
    for _ in range(2):  # refused each time: nothing refused is cached
        with pytest.raises(LockfileError, match="pin.snapshot.toml: version"):
            snapshot.read_recorded(path)
    modules = lockcache.validating_modules("sispin.graph.snapshot")
    assert "sispin/graph/snapshot.py" in modules and "sispin/lock/loading.py" in modules
