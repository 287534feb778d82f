"""
``pin configs``: the Sisyphus configs of a set, listed or changed.

The change is written like every other edit of pin.toml (comments, order and layout stay; under the lockfile's lock;
atomic); only the set's ``configs`` array changes. An added config must exist; a removed one must be listed.
"""

from __future__ import annotations

__all__ = ["ConfigsEdit", "configs_of", "edit_configs"]

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Sequence, Tuple

import tomlkit

from sispin.errors import ConcurrentChangeError, UsageError
from sispin.lock.editing import add_value, edit_lockfile
from sispin.lock.files import write_atomically
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, shown_key


@dataclass(frozen=True)
class ConfigsEdit:
    """
    :param lock: the pin.toml
    :param name: the set
    :param added: the configs appended
    :param removed: the configs taken out
    :param configs: the set's configs now
    """

    lock: Path
    name: str
    added: Tuple[str, ...]
    removed: Tuple[str, ...]
    configs: Tuple[str, ...]

    def commit_message(self) -> Tuple[str, List[str]]:
        """:return: the summary and body of ``--commit``'s commit"""
        changes = [f"+{config}" for config in self.added] + [f"-{config}" for config in self.removed]
        return f"pin configs {self.name}: {' '.join(changes)}", []


def configs_of(path: Path, name: str) -> Tuple[str, ...]:
    """
    :param path: the pin.toml
    :param name: a set
    :return: its configs (setup-relative)
    :raises UnknownNameError: when the set does not exist
    """
    return load_lockfile(path).get_set(name).configs


def edit_configs(path: Path, name: str, *, add: Sequence[str], remove: Sequence[str]) -> ConfigsEdit:
    """
    :param path: the pin.toml
    :param name: the set whose configs to change
    :param add: config files to append (setup-relative; each must exist and not be listed yet)
    :param remove: listed config files to take out
    :raises UsageError: when an added file does not exist or is listed already, or a removed one is not listed
    :raises UnknownNameError: when the set does not exist
    """
    lockfile = load_lockfile(path)
    spec = lockfile.get_set(name)
    spec.check_not_frozen("pin configs --add/--remove")
    for config in add:
        if config in spec.configs or add.count(config) > 1:
            raise UsageError(f"--add {config}: already listed in sets.{shown_key(name)}.configs")
        if not os.path.lexists(lockfile.root / config):
            raise UsageError(f"--add {config}: no such file in the setup {lockfile.root}")
    for config in remove:
        if config not in spec.configs:
            raise UsageError(
                f"--remove {config}: not in sets.{shown_key(name)}.configs ({', '.join(spec.configs) or 'empty'})"
            )
    wanted = [config for config in spec.configs if config not in remove] + list(add)

    def change(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        if current.sets.get(name) is None or current.get_set(name).configs != spec.configs:
            raise ConcurrentChangeError(
                f"{display_path(current.path)}: another process changed sets.{shown_key(name)} while this command ran; "
                "nothing written"
            )
        current.get_set(name).check_not_frozen("pin configs --add/--remove")  # frozen by another process meanwhile
        table: Any = document["sets"][name]  # type: ignore[index]
        if "configs" not in table:
            add_value(table, "configs", tomlkit.array())
        array = table["configs"]
        for config in remove:
            del array[[str(item) for item in array].index(config)]
        for config in add:
            array.append(config)

    def write(target: Path, text: str, updated: Lockfile) -> None:
        _check_only_configs_changed(lockfile, updated, name)
        write_atomically(target, text)

    edit_lockfile(path, change, rewritable_key="configs", write=write)
    return ConfigsEdit(path, name, tuple(add), tuple(remove), tuple(wanted))


def _check_only_configs_changed(before: Lockfile, after: Lockfile, name: str) -> None:
    """
    The text check lets the lines of every ``configs`` value change: before writing, make sure that only this
    set's did and that all else means the same.

    :raises AssertionError: a bug of this command (nothing is written)
    """
    others = {key: spec for key, spec in before.sets.items() if key != name}
    assert {key: spec for key, spec in after.sets.items() if key != name} == others, "another set changed"
    assert (
        after.repos == before.repos and after.setup == before.setup
    ), "more than sets.{shown_key(name)}.configs changed"
    assert after.sets[name].pins == before.sets[name].pins, f"the pins of sets.{shown_key(name)} changed"
