"""
Every way a pinned commit reaches a job, as a hostile user found them (issue "The guarantee, round 3", second
round): each scenario builds a setup with two pinned repositories and real Sisyphus + i6_core, and ``pin snapshot`` /
``pin check`` must refuse it, naming what hides the commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from conftest import USE_JOB, git_commit
from results import checked, problems, snapshot_taken
from sispin.cli.main import main
from sispin.clonejob import clone_identity
from sispin.graph.build import load_graph
from sispin.graph.snapshot import read_recorded
from sispin.lock.loading import load_lockfile

#: recipe/usejob.py: a job that hashes whatever it is given
USE = "from sisyphus import Job, Task\n\n\n" + USE_JOB

HEADER = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import current_set, experiment_set
from usejob import Use
"""


class Reach:
    """Remotes ``rc`` and ``lib`` (commits 0..2, ``VALUE = i``) and a setup built per scenario."""

    def __init__(self, real_setup, make_repo):
        self.real_setup = real_setup
        self.urls: Dict[str, str] = {}
        self.commits: Dict[str, list] = {}
        for name in ("rc", "lib"):
            remote = make_repo(name)
            self.commits[name] = [git_commit(remote, {"__init__.py": f"VALUE = {i}\n"}, f"v{i}") for i in range(3)]
            self.urls[name] = f"file://{remote}"

    def setup(self, sets: str, configs: Dict[str, str], recipe: Dict[str, str] = None) -> Path:
        """
        :param sets: the ``[sets.*]`` tables, with {rc1}, {lib1}, ... for the commits
        :param configs: config file name -> code after HEADER
        :param recipe: more recipe modules (name -> code)
        """
        commits = {f"{name}{i}": commit for name, all in self.commits.items() for i, commit in enumerate(all)}
        repos = "".join(f'[repos.{name}]\nurl = "{url}"\ncheckout = "{name}"\n\n' for name, url in self.urls.items())
        root = self.real_setup(repos + sets.format(**commits), {name: HEADER + code for name, code in configs.items()})
        for name, code in {"usejob.py": USE, **(recipe or {})}.items():
            (root / "recipe" / name).write_text(code)
        return root


@pytest.fixture
def reach(real_setup, make_repo) -> Reach:
    return Reach(real_setup, make_repo)


def refused(*expected: str) -> str:
    """Both checks refuse the setup, each saying every expected text."""
    out = "\n".join(map(str, snapshot_taken().hidden))
    for text in expected:
        assert text in out, out
    out = problems(checked())
    for text in expected:
        assert text in out, out
    return out


def test_state_in_a_base_class_slots_is_seen(reach, capsys):
    # @dataclass(slots=True) with inheritance: the base class's slots hold the value read from the pinned code
    models = (
        "class Base:\n    __slots__ = ('version',)\n\n    def __init__(self, version):\n"
        "        self.version = version\n\n\nclass Model(Base):\n    __slots__ = ('name',)\n\n"
        "    def __init__(self, version, name):\n        super().__init__(version)\n        self.name = name\n"
    )
    config = """
def py():
    with experiment_set("a").imported("lib"):
        import lib

        model = Model(lib.VALUE, "m")
    cfg = ReturnnConfig({"learning_rate": 0.1}, post_config={"model": model}, black_formatting=False)
    tk.register_output("a/config", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup(
        '[sets.a]\nconfigs = ["config/a.py"]\nlib = "{lib1}"\n',
        {"a.py": "from models import Model\n" + config},
        {"models.py": models},
    )
    refused("WriteReturnnConfigJob", "keeps its id when the pins move")


def test_an_alias_accepts_its_own_value_not_a_longer_one(reach, capsys):
    sets = (
        '[sets.a]\nconfigs = ["config/a.py"]\nrc = {{ commit = "{rc1}", hash_overwrite = "LEGACY" }}\n'
        'lib = {{ commit = "{lib1}", hash_overwrite = "LEGACY_V2" }}\n'
    )
    config = """
def py():
    exp = experiment_set("a")
    old = exp.repo("rc").copy()
    old.hash_overwrite = "LEGACY_V2"
    tk.register_output("a/old", Use(old).out)
    tk.register_output("a/new", Use(exp.repo("lib")).out)
"""
    reach.setup(sets, {"a.py": config})
    refused("'LEGACY_V2'", "config/a.py:")


def test_a_bound_value_on_a_path_that_is_no_clone_of_its_pin_is_refused(reach, capsys):
    sets = '[sets.a]\nconfigs = ["config/a.py"]\nrc = {{ commit = "{rc1}", hash_overwrite = "LEGACY_ROOT" }}\n'
    config = """
LOCAL = tk.Path("/somewhere/local_rc", hash_overwrite="LEGACY_ROOT")


def py():
    tk.register_output("a/baseline", Use(LOCAL).out)
    tk.register_output("a/use", Use(experiment_set("a").repo("rc")).out)
"""
    reach.setup(sets, {"a.py": config})
    refused("'LEGACY_ROOT'", "/somewhere/local_rc", "config/a.py:")


def test_the_text_of_a_path_built_from_a_pin_is_a_use_of_the_pin(reach, capsys):
    config = """
def py():
    mid = Use(experiment_set("a").repo("rc"))
    tk.register_output("a/mid", mid.out)
    cfg = ReturnnConfig({"lr": 1e-3}, post_config={"data": mid.out.get_path()}, black_formatting=False)
    tk.register_output("a/config", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config})
    refused("WriteReturnnConfigJob", "keeps its id when the pins move")


def test_a_clone_jobs_own_path_text_is_a_use_of_the_pin(reach, capsys):
    config = """
def py():
    clone = experiment_set("a").clone_job("rc")
    cfg = ReturnnConfig({"lr": 1e-3}, post_config={"rc": clone._sis_path("output/repository")}, black_formatting=False)
    tk.register_output("a/config", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config})
    refused("WriteReturnnConfigJob", "keeps its id when the pins move")


def test_another_sets_pinned_code_in_a_config_is_refused(reach, capsys):
    sets = (
        '[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n\n'
        '[sets.base]\nconfigs = ["config/base.py"]\nlib = "{lib1}"\n'
    )
    config = """
def py():
    exp = experiment_set("a")
    with experiment_set("base").imported("lib"):
        import lib

        value = lib.VALUE
    cfg = ReturnnConfig({"rc_root": exp.repo("rc")}, post_config={"lib_value": value}, black_formatting=False)
    tk.register_output("a/config", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    base = '\ndef py():\n    tk.register_output("base/lib", experiment_set("base").repo("lib"))\n'
    reach.setup(sets, {"a.py": config, "base.py": base})
    refused("sets.a", "'base'", "config/a.py:")


def test_current_set_at_import_time_is_refused_however_deep_the_call(reach, capsys):
    tools = (
        "from sispin import current_set\n\n\ndef _root():\n    return current_set().repo('rc')\n\n\nRC_ROOT = _root()\n"
    )
    config = '\nfrom default_tools import RC_ROOT\n\n\ndef py():\n    tk.register_output("a/rc", Use(RC_ROOT).out)\n'
    reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config}, {"default_tools.py": tools})
    said = "recipe/default_tools.py:5: UnknownNameError: current_set() at module level of recipe/default_tools.py"
    assert main(["snapshot"]) == 9
    assert said in capsys.readouterr().err
    assert said in problems(checked())


def test_a_value_once_bound_stays_bound_after_its_set_is_renamed(reach, capsys):
    sets = '[sets.a]\nconfigs = ["config/a.py"]\nrc = {{ commit = "{rc1}", hash_overwrite = "LEGACY_ROOT" }}\n'
    config = '\ndef py():\n    tk.register_output("a/use", Use(current_set().repo("rc")).out)\n'
    root = reach.setup(sets, {"a.py": config})
    assert main(["snapshot"]) == 0
    lock = root / "pin.toml"
    rc1, rc2 = reach.commits["rc"][1], reach.commits["rc"][2]
    bound = f'rc = {{ commit = "{rc1}", hash_overwrite = "LEGACY_ROOT" }}'
    # renamed and moved without the alias: recorded, and set a dropped from the snapshot
    lock.write_text(lock.read_text().replace(bound, f'rc = "{rc2}"').replace("[sets.a]", "[sets.a2]"))
    assert main(["snapshot"]) == 0
    assert "[sets.a]" not in (root / "pin.snapshot.toml").read_text()
    # the value bound again, to the new commit: its old ids (set a's work) would pass for other code
    lock.write_text(lock.read_text().replace(f'rc = "{rc2}"', bound.replace(rc1, rc2)))
    capsys.readouterr()
    out = "\n".join(map(str, snapshot_taken().hidden))
    assert (
        f"hash_overwrite 'LEGACY_ROOT' stood for {rc1[:7]} (checkout_folder_name='rc') when recorded in "
        "pin.snapshot.toml" in out
    ), out
    assert checked().problems


def test_a_job_keeping_its_own_outputs_text_is_no_use_of_a_pin(reach):
    # as i6_core's ReturnnTrainingJob puts its model folder's text into its own config: it moves with its own id
    keeps = (
        "from sisyphus import Job, Task\n\n\nclass Keeps(Job):\n    def __init__(self, thing):\n"
        "        self.thing = thing\n        self.out = self.output_path('out')\n"
        "        self.where = self.out.get_path()\n\n    def tasks(self):\n        yield Task('run')\n"
    )
    use = 'tk.register_output("a/k", Keeps(experiment_set("a").repo("rc")).out)'
    config = f"\nfrom keeps import Keeps\n\n\ndef py():\n    {use}\n"
    root = reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config}, {"keeps.py": keeps})
    graph = load_graph(load_lockfile(root / "pin.toml"), "a")
    assert graph.value_uses == (), "no build with the pins moved is needed"


def test_a_dotted_set_name_is_quoted_in_messages(reach, capsys):
    config = '\ndef py():\n    tk.register_output("v2/use", Use(experiment_set("exp.v2").repo("rc")).out)\n'
    reach.setup('[sets."exp.v2"]\nconfigs = ["config/v2.py"]\nrc = "{rc1}"\n', {"v2.py": config})
    assert "sets.'exp.v2': no snapshot in " in problems(checked())


TWO_PINS = '[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\nlib = "{lib1}"\n'


@pytest.mark.parametrize(
    "unhashed",
    [
        'post_config={"lib_root": exp.repo("lib")}',
        'post_config={"lib_value": value}',
    ],
    ids=["a clone path", "imported content"],
)
def test_a_job_hashing_one_pin_is_checked_for_what_it_holds_of_another(reach, capsys, unhashed):
    config = f"""
def py():
    exp = experiment_set("a")
    with exp.imported("lib"):
        import lib

        value = lib.VALUE
    cfg = ReturnnConfig({{"rc_root": exp.repo("rc")}}, {unhashed}, black_formatting=False)
    tk.register_output("a/config", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup(TWO_PINS, {"a.py": config})
    refused("WriteReturnnConfigJob")


def test_a_job_keeping_its_id_through_one_pins_alias_is_checked_for_another_pin(reach, capsys):
    sets = (
        '[sets.a]\nconfigs = ["config/a.py"]\nrc = {{ commit = "{rc1}", hash_overwrite = "LEGACY" }}\nlib = "{lib1}"\n'
    )
    config = """
def py():
    exp = experiment_set("a")
    cfg = ReturnnConfig({"rc_root": exp.repo("rc")}, post_config={"lib_root": exp.repo("lib")}, black_formatting=False)
    tk.register_output("a/config", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup(sets, {"a.py": config})
    refused("WriteReturnnConfigJob")


def test_the_history_of_bound_values_survives_writes_while_other_aliases_are_bound(reach, capsys):
    sets = (
        '[sets.a]\nconfigs = ["config/a.py"]\nrc = {{ commit = "{rc1}", hash_overwrite = "LEGACY" }}\n\n'
        '[sets.b]\nconfigs = ["config/b.py"]\nlib = {{ commit = "{lib1}", hash_overwrite = "OTHER" }}\n'
    )
    configs = {
        "a.py": '\ndef py():\n    tk.register_output("a/use", Use(experiment_set("a").repo("rc")).out)\n',
        "b.py": '\ndef py():\n    tk.register_output("b/use", Use(experiment_set("b").repo("lib")).out)\n',
    }
    root = reach.setup(sets, configs)
    rc1, rc2 = reach.commits["rc"][1], reach.commits["rc"][2]
    assert main(["snapshot"]) == 0
    snapshot = root / "pin.snapshot.toml"
    rc_clone = clone_identity({"commit": rc1, "checkout_folder_name": "rc"})
    lib_clone = clone_identity({"commit": reach.commits["lib"][1], "checkout_folder_name": "lib"})
    assert read_recorded(snapshot)[1] == {"LEGACY": [rc_clone], "OTHER": [lib_clone]}
    lock = root / "pin.toml"
    bound = f'rc = {{ commit = "{rc1}", hash_overwrite = "LEGACY" }}'
    lock.write_text(lock.read_text().replace(bound, f'rc = "{rc2}"'))  # the alias dropped, as an upgrade does
    assert main(["snapshot"]) == 0
    assert read_recorded(snapshot)[1]["LEGACY"] == [rc_clone], "kept while set b's alias is written beside it"
    lock.write_text(lock.read_text().replace(f'rc = "{rc2}"', bound.replace(rc1, rc2)))
    capsys.readouterr()
    assert f"hash_overwrite 'LEGACY' stood for {rc1[:7]} (checkout_folder_name='rc') when recorded" in "\n".join(
        map(str, snapshot_taken().hidden)
    )


WRAPPERS = """\
class Text(str):
    pass


class Number(int):
    pass


class Values(list):
    pass


class Holder:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value
"""


@pytest.mark.parametrize(
    "wrapped",
    [
        "mytypes.Text(str(v))",
        "mytypes.Number(v)",
        "functools.partial(str, v)",
        "mytypes.Holder(v).get",
        "mytypes.Values([v])",
    ],
)
def test_content_read_from_a_pin_is_seen_in_any_wrapper(reach, capsys, wrapped):
    config = f"""
import functools

import mytypes


def py():
    exp = experiment_set("a")
    with exp.imported("rc"):
        import rc

        v = rc.VALUE
    cfg = ReturnnConfig({{"x": 1}}, post_config={{"v": {wrapped}}}, black_formatting=False)
    tk.register_output("a/cfg", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config}, {"mytypes.py": WRAPPERS})
    refused("WriteReturnnConfigJob", "keeps its id when the pins move")


@pytest.mark.parametrize(
    "taken",
    [
        'experiment_set("a").clone_job("rc").work_path()',
        'tools.sh("echo {rc}", capture_output=True, rc=experiment_set("a").repo("rc"))',
    ],
    ids=["work_path", "sh"],
)
def test_a_checkouts_place_taken_through_sisyphus_helpers_is_a_use_of_the_pin(reach, capsys, taken):
    config = f"""
from sisyphus import tools


def py():
    cfg = ReturnnConfig({{"x": 1}}, post_config={{"v": {taken}}}, black_formatting=False)
    tk.register_output("a/cfg", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config})
    refused("WriteReturnnConfigJob", "keeps its id when the pins move")


def test_pinned_code_imported_in_settings_py_is_a_use_of_the_pin(reach, capsys):
    config = """
from sisyphus import global_settings as gs


def py():
    cfg = ReturnnConfig({"x": 1}, post_config={"v": gs.RC_VALUE}, black_formatting=False)
    tk.register_output("a/cfg", WriteReturnnConfigJob(cfg).out_returnn_config_file)
"""
    root = reach.setup('[sets.a]\nconfigs = ["config/a.py"]\nrc = "{rc1}"\n', {"a.py": config})
    settings = root / "settings.py"
    settings.write_text(
        settings.read_text()
        + '\nfrom sispin import experiment_set\n\nwith experiment_set("a").imported("rc"):\n    import rc\n\n'
        + "    RC_VALUE = rc.VALUE\n"
    )
    refused("WriteReturnnConfigJob", "settings.py")
