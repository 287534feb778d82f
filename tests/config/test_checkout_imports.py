"""Manager-side imports from the pinned commit (exp.checkout, exp.imported) and pin verify, on real repositories."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from conftest import git_commit
from sispin.cli.main import main
from sispin.errors import PinnedImportError
from sispin.sets import experiment_set

PACKAGE = "pinpkg"


def package_files(value: str) -> dict:
    init = f"VALUE = {value!r}\n\ndef value():\n    return VALUE\n\n"
    init += "def lazy():\n    from . import late\n    return late.LATE\n"
    return {
        "__init__.py": init,
        "sub.py": f"SUB = {value!r}\n",
        "late.py": f"LATE = {value!r}\n",
    }


@pytest.fixture
def two_sets(make_repo, write_lock, store_dir, monkeypatch):
    """Sets 'one' and 'two' pin two commits of a package whose functions return different values."""
    remote = make_repo("pinpkg")
    first = git_commit(remote, package_files("one"), "one")
    second = git_commit(remote, package_files("two"), "two")
    lock = write_lock(
        "version = 1\n\n"
        f'[repos.pkg]\nurl = "file://{remote}"\ncheckout = "{PACKAGE}"\n\n'
        f'[sets.one]\npkg = "{first}"\n\n[sets.two]\npkg = "{second}"\n'
    )
    monkeypatch.setenv("PIN_LOCK", str(lock))
    saved_modules = {k: v for k, v in sys.modules.items() if k.split(".")[0] == PACKAGE}
    saved_path = list(sys.path)
    yield lock, first, second
    for name in [k for k in sys.modules if k.split(".")[0] == PACKAGE]:
        del sys.modules[name]
    sys.modules.update(saved_modules)
    sys.path[:] = saved_path


def package_state():
    return {k: v for k, v in sys.modules.items() if k.split(".")[0] == PACKAGE}


def test_checkout_is_read_only_and_cheap_to_repeat(two_sets, store_dir):
    lock, first, _ = two_sets
    exp = experiment_set("one")
    path = exp.checkout("pkg")
    assert path.name == PACKAGE and path.parent.name == first
    assert path.is_relative_to(store_dir)
    assert (path / "sub.py").read_text() == "SUB = 'one'\n"
    assert not (os.stat(path / "sub.py").st_mode & 0o222), "no write bits"
    mtime = (path / ".git").stat().st_mtime_ns
    assert exp.checkout("pkg") == path
    assert (path / ".git").stat().st_mtime_ns == mtime, "made once"


def test_within_a_set_imports_are_stable(two_sets):
    exp = experiment_set("one")
    with exp.imported("pkg") as checkout:
        import pinpkg

        first = pinpkg
        assert pinpkg.value() == "one"
        assert pinpkg.__file__.startswith(str(checkout))
    with exp.imported("pkg"):
        import pinpkg
        import pinpkg.sub

        assert pinpkg is first, "the same module objects, not a re-import"
        assert pinpkg.sub.SUB == "one"


def test_two_sets_in_one_process_get_their_own_commit(two_sets):
    one, two = experiment_set("one"), experiment_set("two")
    results = []
    for exp in (one, two, one, two):
        with exp.imported("pkg"):
            import pinpkg.sub

            results.append((pinpkg.value(), pinpkg.sub.SUB))
    assert results == [("one", "one"), ("two", "two"), ("one", "one"), ("two", "two")]


def test_a_copy_imported_before_is_set_aside_and_restored(two_sets, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / PACKAGE).mkdir(parents=True)
    for name, text in package_files("elsewhere").items():
        (elsewhere / PACKAGE / name).write_text(text)
    sys.path.insert(0, str(elsewhere))
    import pinpkg

    outside = pinpkg
    before, path_before = package_state(), list(sys.path)
    with experiment_set("two").imported("pkg"):
        import pinpkg

        assert pinpkg is not outside and pinpkg.value() == "two"
    assert package_state() == before and sys.path == path_before, "the previous state is back"
    import pinpkg

    assert pinpkg is outside and pinpkg.value() == "elsewhere"


@pytest.mark.parametrize("other_copy", [False, True], ids=["nothing-else", "another-copy-present"])
def test_a_late_import_outside_the_block_is_refused(two_sets, tmp_path, other_copy):
    if other_copy:
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / PACKAGE).mkdir(parents=True)
        for name, text in package_files("elsewhere").items():
            (elsewhere / PACKAGE / name).write_text(text)
        sys.path.insert(0, str(elsewhere))
        import pinpkg  # noqa: F401
    with experiment_set("one").imported("pkg"):
        import pinpkg

        pinned = pinpkg
    with pytest.raises(ImportError, match=r"from the checkout of set 'one', pkg \w+, outside its `imported\(\)` block"):
        pinned.lazy()
    with experiment_set("one").imported("pkg"):
        assert pinned.lazy() == "one", "inside its block the same call works"
    if other_copy:
        import pinpkg

        assert pinpkg.lazy() == "elsewhere", "the other copy's own late imports are not affected"


def test_blocks_of_two_commits_cannot_nest(two_sets):
    with experiment_set("one").imported("pkg"):
        with pytest.raises(PinnedImportError, match="one process can use one copy of a module at a time"):
            with experiment_set("two").imported("pkg"):
                pass


def test_sync_sets_and_verify_catch_tampering(two_sets, capsys, store_dir):
    lock, first, second = two_sets
    assert main(["sync", "one", "two"]) == 0
    out = capsys.readouterr().out
    assert out.count("  made") == 2
    assert main(["sync", "one"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("  ok")
    assert main(["verify"]) == 0
    assert "pin verify: 0 problems in 2 checkouts" in capsys.readouterr().out

    one = experiment_set("one").checkout("pkg")
    os.chmod(one / "sub.py", 0o644)
    (one / "sub.py").write_text("SUB = 'tampered'\n")
    os.chmod(one, 0o755)
    (one / "extra.py").write_text("x = 1\n")
    assert main(["verify", "one"]) == 1
    out = capsys.readouterr().out
    assert "pinpkg has local changes: sub.py (modified), extra.py (untracked)" in out
    assert "pin verify: 1 problem in 1 checkouts" in out


def test_a_repository_holding_the_package_of_its_name_gives_that_package(make_repo, write_lock, store_dir, monkeypatch):
    # RETURNN's layout: the repository root has an __init__.py that only forwards (and changes sys.path), and the
    # package itself is returnn/ inside; beside it modules and test packages that must not be claimed
    remote = make_repo("rtlike")
    commit = git_commit(
        remote,
        {
            "__init__.py": "import sys\nsys.path.insert(0, 'x')\nraise ImportError('the root is not the package')\n",
            "rtlike/__init__.py": "VALUE = 'inner'\n",
            "rtlike/sub.py": "SUB = 'inner sub'\n",
            "rnn.py": "",
            "tests/__init__.py": "",
        },
    )
    repos = f'[repos.rt]\nurl = "file://{remote}"\ncheckout = "rtlike"\n'
    lock = write_lock(f'version = 1\n\n{repos}\n[sets.s]\nrt = "{commit}"\n')
    monkeypatch.setenv("PIN_LOCK", str(lock))
    path_before = list(sys.path)
    try:
        with experiment_set("s").imported("rt") as checkout:
            import rtlike.sub

            assert rtlike.VALUE == "inner" and rtlike.sub.SUB == "inner sub"
            assert rtlike.__file__ == str(checkout / "rtlike" / "__init__.py")
            assert importlib.util.find_spec("rnn") is None, "only the package of the checkout's name is provided"
        assert sys.path == path_before
    finally:
        for name in [k for k in sys.modules if k.split(".")[0] == "rtlike"]:
            del sys.modules[name]


@pytest.fixture
def shared_module(tmp_path, monkeypatch):
    """A shared recipe module of two sets (written per test), importable from a directory on sys.path."""
    directory = tmp_path / "recipe_shared"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))
    yield directory / "shared_tools.py"
    sys.modules.pop("shared_tools", None)


@pytest.mark.parametrize(
    "top", ["import pinpkg\n", "from pinpkg import value as pinned_value\n", "import pinpkg.sub as sub\n"]
)
def test_a_shared_module_holding_one_sets_copy_refuses_the_other_sets_block(two_sets, shared_module, top):
    # `sis manager -r a.py b.py`: set one's config imports the shared module first, inside its block
    shared_module.write_text(top + "def value():\n    import pinpkg\n    return pinpkg.value()\n")
    with experiment_set("one").imported("pkg"):
        import shared_tools

        assert shared_tools.value() == "one"
    with pytest.raises(PinnedImportError, match=r"module shared_tools \(.*shared_tools.py\) was first imported inside"):
        with experiment_set("two").imported("pkg"):
            pytest.fail("set two would run set one's code through shared_tools")


def test_a_shared_module_that_imports_inside_its_functions_serves_both_sets(two_sets, shared_module):
    shared_module.write_text("def value():\n    import pinpkg\n    return pinpkg.value()\n")
    with experiment_set("one").imported("pkg"):
        import shared_tools

        assert shared_tools.value() == "one"
    with experiment_set("two").imported("pkg"):
        assert shared_tools.value() == "two"
    with experiment_set("one").imported("pkg"):
        assert shared_tools.value() == "one"
