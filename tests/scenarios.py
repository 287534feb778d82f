"""
What several test files build their setups from: config texts, the slow remotes' pace, and the redirect of
the rwth-i6 URLs to the bundles of ../shared/mirrors.
"""

from __future__ import annotations

import os
from typing import Dict

from conftest import PROJECT_ROOT

#: a set's config: a RETURNN config holding its pin of rc and a learning rate (``.format(name=SET)``)
FREEZE_CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    config = ReturnnConfig({{"rc": experiment_set("{name}").repo("rc"), "learning_rate": 0.001}})
    tk.register_output("{name}/config", WriteReturnnConfigJob(config).out_returnn_config_file)
"""

#: a set whose manager imports pkg.a of its pin of rc (``exp.imported``)
IMPORTS = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    exp = experiment_set("imports")
    with exp.imported("rc"):
        import pkg.a

        value = pkg.a.VALUE
    tk.register_output("imports/config", WriteReturnnConfigJob(ReturnnConfig({"value": value})).out_returnn_config_file)
"""

#: the remote sends 25 kB every 0.25 s: a 400 kB repository below takes ~4 s, and git reports progress every second
CHUNK, PAUSE = 25_000, 0.25


def mirrors_redirect() -> Dict[str, str]:
    """git config entries that clone the rwth-i6 URLs from ../shared/mirrors when it is there (as .ci/run does)."""
    mirrors = PROJECT_ROOT.parent / "shared" / "mirrors"
    count = int(os.environ.get("GIT_CONFIG_COUNT", "0"))
    env = {}
    for name in ("returnn", "returnn_common"):
        if (mirrors / f"{name}.bundle").is_file():
            env[f"GIT_CONFIG_KEY_{count}"] = f"url.{mirrors}/{name}.bundle.insteadOf"
            env[f"GIT_CONFIG_VALUE_{count}"] = f"https://github.com/rwth-i6/{name}"
            count += 1
    if env:
        env["GIT_CONFIG_COUNT"] = str(count)
    return env


def task_environment(variables: dict) -> dict:
    """:return: os.environ as a task's process has it after Sisyphus set variables, a DEFAULT_ENVIRONMENT_SET"""
    return {**os.environ, **{key: value.replace("$$", "$") for key, value in variables.items()}}
