"""
The package's rooms and the direction of their imports (each subpackage's docstring says what it may import): read
from every import statement of the package, those inside functions too, so that a back-arrow fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

from conftest import RECIPE_DIR

PACKAGE = RECIPE_DIR / "sispin"
#: the config path: what a Sisyphus config and settings.py load
CONFIG_PATH = {"sispin", "sispin.errors", "sispin.clonejob", "sispin.sets", "sispin.imports", "sispin.settings_hook"}
#: room -> the rooms its modules may import (beside their own)
ALLOWED = {
    "text": set(),
    "errors": {"text"},
    "clonejob": set(),
    "lock": {"text", "errors", "clonejob"},
    "git": {"text", "errors", "clonejob", "lock"},
    "config": {"text", "errors", "clonejob", "lock", "git"},
    # the probe runs the config path in the Sisyphus process
    "probe": {"text", "errors", "clonejob", "lock", "config"},
    # the parent side reads the probe's report (PROBE_SEAM)
    "graph": {"text", "errors", "clonejob", "lock", "git", "config", "probe"},
    "adopt": {"text", "errors", "clonejob", "lock", "git", "graph", "probe"},
    "ops": {"text", "errors", "clonejob", "lock", "git", "graph", "adopt", "config", "probe"},
    "cli": {"text", "errors", "clonejob", "lock", "git", "graph", "adopt", "config", "probe", "ops"},
}
#: the probe's modules that the parent side imports: they import no Sisyphus
PROBE_SEAM = {
    "sispin.graph.probe",
    "sispin.graph.probe.schema",
    "sispin.graph.probe.codec",
    "sispin.graph.probe.ledger",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(RECIPE_DIR).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    top = module.split(".")[1] if "." in module else ""
    if top in ("errors", "clonejob", "text"):
        return top
    if module == "sispin.__main__":
        return "cli"
    if module == "sispin.graph.probe" or module.startswith("sispin.graph.probe."):
        return "probe"
    return "config" if module in CONFIG_PATH else top


def imports_of(path: Path) -> Set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "sispin"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sispin":
            found.add(node.module)
            directory = RECIPE_DIR / node.module.replace(".", "/")
            found |= {
                f"{node.module}.{alias.name}" for alias in node.names if (directory / f"{alias.name}.py").is_file()
            }
    return found


MODULES: Dict[str, Path] = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers_only(module):
    own = room(module)
    wrong = sorted(
        imported
        for imported in imports_of(MODULES[module])
        if imported != "sispin" and room(imported) != own and room(imported) not in ALLOWED[own]
    )
    assert not wrong, f"{module} ({own}) may import only {sorted(ALLOWED[own])}, not {wrong}"


def test_the_parent_imports_of_the_probe_only_its_report():
    for module, path in MODULES.items():
        if room(module) != "probe":
            wrong = sorted(i for i in imports_of(path) if room(i) == "probe" and i not in PROBE_SEAM)
            assert not wrong, f"{module} runs in the parent process: it may import of the probe only {PROBE_SEAM}"


@pytest.mark.parametrize("module", sorted(PROBE_SEAM))
def test_what_the_parent_imports_of_the_probe_imports_no_sisyphus(module):
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        assert not [name for name in names if name.split(".")[0] in ("sisyphus", "i6_core")], module
        # and nothing of the probe that does
        assert not [name for name in names if room(name) == "probe" and name not in PROBE_SEAM], module


def test_every_subpackage_describes_each_of_its_modules_and_says_what_it_may_import():
    for init in PACKAGE.rglob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        package = module_name(init)
        undescribed = sorted(
            f"{package}.{path.stem}"
            for path in init.parent.iterdir()
            if (path.suffix == ".py" and path.stem != "__init__" or (path / "__init__.py").is_file())
            and f":mod:`~{package}.{path.stem}`" not in doc
        )
        assert not undescribed, f"{package}'s docstring does not describe {undescribed}"
        assert "may import" in doc, f"{package}'s docstring must say what it may import"


def _import_graph() -> Dict[str, Set[str]]:
    """module -> the package's modules it imports (at its top or inside functions: both run)"""
    return {module: {i for i in imports_of(path) if i in MODULES and i != module} for module, path in MODULES.items()}


def test_no_import_circle():
    graph = _import_graph()
    # Tarjan's strongly connected components: a component of more than one module is a circle
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    circles: List[List[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def test_no_import_circle_finds_one(monkeypatch):
    # the check above, on a circle made on purpose: it must see it
    monkeypatch.setitem(globals(), "_import_graph", lambda: {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()})
    with pytest.raises(AssertionError, match=r"import circles: \[\['a', 'b', 'c'\]\]"):
        test_no_import_circle()


def test_no_cli_module_over_200_lines():
    for module, path in MODULES.items():
        if room(module) == "cli":
            lines = len(path.read_text().splitlines())
            assert lines <= 200, f"{module}: {lines} lines; a use case belongs in sispin.ops"


def test_no_module_over_450_lines_and_no_function_over_60():
    for module, path in MODULES.items():
        text = path.read_text()
        assert len(text.splitlines()) <= 450, f"{module}: {len(text.splitlines())} lines"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= 60, f"{module}.{node.name}: {length} lines"


def test_only_the_cli_prints():
    for module, path in MODULES.items():
        if room(module) == "cli":
            continue
        calls = [
            node.lineno
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
        ]
        assert not calls, f"{module} prints at lines {calls}"


def test_the_packages_pyproject_installs_are_every_subpackage():
    text = (RECIPE_DIR.parent / "pyproject.toml").read_text()
    for init in PACKAGE.rglob("__init__.py"):
        assert f'"{module_name(init)}"' in text, f"pyproject.toml does not install {module_name(init)}"


#: the methods that change a mapping in place
_WRITING_METHODS = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}


def environment_writes(source: str) -> List[int]:
    """:return: the lines of source that change ``os.environ`` (or call ``os.putenv``/``os.unsetenv``)"""

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    lines = []
    for node in ast.walk(ast.parse(source)):
        targets: List[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        if any(is_environ(t) or (isinstance(t, ast.Subscript) and is_environ(t.value)) for t in targets):
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func
            if (method.attr in _WRITING_METHODS and is_environ(method.value)) or method.attr in ("putenv", "unsetenv"):
                lines.append(node.lineno)
    return lines


#: the one module that may: a build forked from the probe is a process of its own, whose variables (the text of its
#: pins) its parent gives it, as a parent gives a child its environment
_OWN_PROCESS = PACKAGE / "graph" / "probe" / "forking.py"


def test_sispin_never_writes_os_environ():
    found = {
        f"{path.relative_to(RECIPE_DIR)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if path != _OWN_PROCESS
        for line in environment_writes(path.read_text())
    }
    assert not found, "sispin changes the process environment (every child gets an environment of its own)"


def test_the_environment_write_check_sees_each_form():
    forms = [
        "os.environ['X'] = '1'",
        "del os.environ['X']",
        "os.environ.update(x)",
        "os.environ.pop('X', None)",
        "os.environ.setdefault('X', '1')",
        "os.putenv('X', '1')",
        "os.environ = {}",
    ]
    assert [environment_writes(form) for form in forms] == [[1]] * len(forms)
    assert environment_writes("env = dict(os.environ)\nenv['X'] = '1'\nos.environ.get('X')") == []


#: what Sisyphus keeps for itself (``_sis_*``), and the internals of its modules the probe reaches into: named in the
#: adapter only (``config_manager.load_configs`` and ``.current_config``, how ``sis manager`` loads configs and what a
#: config's shared code asks, count as Sisyphus's API)
_SISYPHUS_INTERNALS = frozenset(
    {"JobSingleton", "sis_hash_helper", "get_object_state", "async_workflow", "_config_readers", "EnvironmentModifier"}
)
ADAPTER = PACKAGE / "graph" / "probe" / "adapter"


def sisyphus_internals(source: str) -> List[str]:
    """:return: each name of source's code (not its docstrings or comments) that is a Sisyphus internal"""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: List[str] = []
        if isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [alias.name.rpartition(".")[2] for alias in node.names] + [getattr(node, "module", "") or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names = [node.value]
        for name in names:
            last = name.rpartition(".")[2]
            if (last.startswith("_sis_") and not last.endswith("__")) or last in _SISYPHUS_INTERNALS:
                found.append(f"{node.lineno}: {last}")
    return found


def test_sisyphus_internals_are_named_in_the_adapter_only():
    found = {
        f"{path.relative_to(RECIPE_DIR)}:{where}"
        for path in PACKAGE.rglob("*.py")
        if ADAPTER not in path.parents
        for where in sisyphus_internals(path.read_text())
    }
    assert not found, "name them through sispin.graph.probe.adapter"
    for path in ADAPTER.glob("*.py"):
        assert sisyphus_internals(path.read_text()), f"{path.name}: the adapter is where they are"


def test_the_internals_check_sees_each_form():
    forms = [
        "job._sis_kwargs",
        "vars(job).get('_sis_id_cache')",
        "from sisyphus.job import JobSingleton",
        "config_manager._config_readers",
        "Job._sis_hash_static = f",
    ]
    assert all(sisyphus_internals(form) for form in forms)
    assert sisyphus_internals('"""the job\'s _sis_kwargs"""\nexcluded = cls.__sis_hash_exclude__') == []
