"""
What a new user trips over (issue "Two commands for a newcomer"): each message that misled, as it reads now. Real git,
real Sisyphus where a set is built.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import commit_setup, git, git_commit
from scenarios import FREEZE_CONFIG, IMPORTS
from sispin.cli.main import main


def _setup(real_setup, make_repo, configs):
    remote = make_repo("rc")
    commits = [git_commit(remote, {"pkg/__init__.py": "", "pkg/a.py": f"VALUE = {i}\n"}) for i in range(2)]
    sets = "".join(f'[sets.{name}]\nconfigs = ["config/{name}.py"]\nrc = "{commits[0]}"\n\n' for name in configs)
    tables = f'[repos.rc]\nurl = "file://{remote}"\n\n{sets}'
    return real_setup(tables, {f"{name}.py": text for name, text in configs.items()}), commits


def test_explain_takes_an_output_as_printed_and_names_the_outputs_there_are(real_setup, make_repo, capsys):
    root, _ = _setup(real_setup, make_repo, {"a": FREEZE_CONFIG.format(name="a")})
    assert main(["snapshot"]) == 0
    (root / "config" / "a.py").write_text(FREEZE_CONFIG.format(name="a").replace("0.001", "0.01"))
    capsys.readouterr()
    assert main(["explain"]) == 1
    printed = capsys.readouterr().out.splitlines()[0].split()[0]
    assert printed == "output/a/config"
    for name in (printed, "a/config"):
        assert main(["explain", "--output", name]) == 1, name
        assert capsys.readouterr().out.startswith("output/a/config  ")
    assert main(["explain", "--output", "output/a/nope"]) == 4
    assert capsys.readouterr().err == (
        "pin: error: no registered output 'output/a/nope' in set(s) a (they register: a/config)\n"
    )


def test_config_paths_are_relative_to_where_the_user_stands(real_setup, make_repo, monkeypatch, capsys):
    root, _ = _setup(real_setup, make_repo, {"a": FREEZE_CONFIG.format(name="a")})
    monkeypatch.chdir(root / "config")  # paths below are relative to config/
    assert main(["new", "exp2", "--config", "exp2.py"]) == 0
    assert (root / "config" / "exp2.py").is_file() and not (root / "exp2.py").exists()
    assert main(["configs", "exp2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "config/exp2.py"
    (root / "config" / "more.py").write_text(FREEZE_CONFIG.format(name="exp2"))
    assert main(["configs", "exp2", "--add", "more.py", "--remove", "./exp2.py"]) == 0
    assert capsys.readouterr().out.endswith("pin.toml: sets.exp2.configs = ['config/more.py']\n")
    assert main(["configs", "exp2", "--add", "../../elsewhere.py"]) == 2
    assert "--add ../../elsewhere.py: not inside the setup" in capsys.readouterr().err


def test_a_new_set_whose_config_does_not_load_is_an_error(real_setup, make_repo, capsys):
    root, _ = _setup(real_setup, make_repo, {"a": FREEZE_CONFIG.format(name="a")})
    (root / "config" / "broken.py").write_text("def py():\n    raise RuntimeError('not yet')\n")
    assert main(["new", "broken", "--configs", "config/broken.py"]) == 9
    err = capsys.readouterr().err
    assert "config/broken.py:2: RuntimeError: not yet" in err and "then `pin snapshot broken`" in err
    assert main(["configs", "broken"]) == 0  # the set was added all the same


def test_a_dry_run_leaves_the_store_as_it_was(real_setup, make_repo, store_dir, capsys):
    root, commits = _setup(real_setup, make_repo, {"imports": IMPORTS})
    assert main(["snapshot"]) == 0
    checkouts = sorted(path.name for path in (store_dir / "checkouts").glob("*/*") if path.is_dir())
    assert checkouts == [commits[0]]
    assert main(["upgrade", "imports", "--dry-run"]) == 0
    assert sorted(path.name for path in (store_dir / "checkouts").glob("*/*") if path.is_dir()) == checkouts
    # a build of the setup's history does not leave its temporary lockfile as a user of the store
    commit_setup(root)
    assert main(["explain", "--against", "HEAD"]) == 0
    users = [(store_dir / "lockfiles" / name).read_text().strip() for name in os.listdir(store_dir / "lockfiles")]
    assert users == [str(root / "pin.toml")], users
    capsys.readouterr()
    assert main(["gc"]) == 0
    assert "forgot" not in capsys.readouterr().out


def test_upgrade_help_names_every_flag_of_exit_8(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # argparse would break a line inside "--allow-unreachable"
    try:
        main(["upgrade", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "Exit 8 when a move needs --allow-downgrade, --allow-unrelated, --allow-unreachable or --accept-drift" in text
    )


def test_a_reader_that_stops_early_leaves_the_exit_code_as_it_is(history):
    # `pin status | head -1`: the rest of the output goes nowhere, no "Broken pipe" error, the command's code
    history.lock.write_text(history.text() + "".join(f'[sets.s{i}]\nrc = "{history.c[0]}"\n' for i in range(3000)))
    pin = [sys.executable, "-m", "sispin", "status"]  # some 200 kB: more than a pipe holds
    process = subprocess.Popen(pin, cwd=history.lock.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.read(1)
    process.stdout.close()
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""


def test_pin_run_runs_the_manager_and_stops_at_a_config_that_does_not_load(real_setup, make_repo, capsys):
    # (a clone job only: a WriteReturnnConfigJob formats with black, which an environment need not have)
    clone_only = "from sisyphus import tk\n\nfrom sispin import experiment_set\n\n\ndef py():\n"
    clone_only += '    tk.register_output("a/rc", experiment_set("a").repo("rc"))\n'
    root, commits = _setup(real_setup, make_repo, {"a": clone_only})
    assert main(["run", "a", "--", "-r"]) == 0
    assert git(root / "output" / "a" / "rc", "rev-parse", "HEAD") == commits[0]
    assert capsys.readouterr().out.splitlines()[:2] == ["sets.a: loading config/a.py", "sis manager -r config/a.py"]
    (root / "config" / "a.py").write_text("def py():\n    raise RuntimeError('broken on purpose')\n")
    assert main(["run", "a", "--", "-r"]) == 9
    assert capsys.readouterr().err == (
        "pin: error: loading the configs of set 'a' failed: config/a.py:2: RuntimeError: broken on purpose\n"
    )


def test_pin_run_again_without_a_terminal_answers_the_manager_and_prints_no_traceback(real_setup, make_repo):
    clone_only = "from sisyphus import tk\n\nfrom sispin import experiment_set\n\n\ndef py():\n"
    clone_only += '    tk.register_output("a/rc", experiment_set("a").repo("rc"))\n'
    root, commits = _setup(real_setup, make_repo, {"a": clone_only})
    command = [sys.executable, "-m", "sispin", "run", "a", "--", "-r"]
    first = subprocess.run(command, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "Traceback" not in first.stderr
    (root / "output" / "a" / "rc").unlink()  # what a second run is for: the outputs are made again
    again = subprocess.run(command, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stdout + again.stderr
    assert "(pin run: no terminal to ask; outputs and aliases are updated)" in again.stdout
    assert git(root / "output" / "a" / "rc", "rev-parse", "HEAD") == commits[0]
    (root / "output" / "a" / "rc").unlink()
    cancelled = subprocess.run(command, cwd=root, input="c\n", capture_output=True, text=True, timeout=120)
    assert cancelled.returncode == 0 and "pin run: no terminal" not in cancelled.stdout  # a piped answer is the answer
    assert not (root / "output" / "a" / "rc").exists()
    # a pipe that stays open and sends nothing (a script's ssh, a parent that never writes): answered, not waited on
    with open(root / "said.txt", "w") as said:
        silent = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=said, stderr=subprocess.STDOUT)
        assert silent.wait(timeout=120) == 0
        silent.stdin.close()
    assert "(pin run: no terminal to ask; outputs and aliases are updated)" in (root / "said.txt").read_text()
    with open(os.devnull, "w") as write_only:  # what nohup leaves as stdin when started from a terminal
        nohup = subprocess.run(command, cwd=root, stdin=write_only, capture_output=True, text=True, timeout=120)
    assert nohup.returncode == 0 and "Traceback" not in nohup.stdout + nohup.stderr, nohup.stderr
    (root / "work").rename(root / "elsewhere")  # the manager's question whether to create work/: not answered
    asked = subprocess.run(command, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert asked.returncode == 2 and "Traceback" not in asked.stderr
    assert asked.stderr.splitlines()[-1].startswith("pin: error: sis manager asks ")
