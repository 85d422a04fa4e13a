"""
The layout is the architecture: each package imports only the layers
below it, and no module imports itself back through others.

Every import counts, including those inside functions and under
C{TYPE_CHECKING}: a cycle that only the type checker sees is still a cycle
a reader has to untangle.
"""

from __future__ import annotations

import ast
import configparser
from collections.abc import Iterator, Mapping
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

import reviewsd

ROOT = Path(reviewsd.__file__).parent

FOUNDATION = frozenset({"_version", "memory", "logs", "twisted_private"})
"""
Modules anything may use: the version, process memory, the log observers,
and the one adapter over Twisted's private APIs.
"""

ALLOWED: Mapping[str, frozenset[str]] = {
    "_version": frozenset(),
    "memory": frozenset(),
    "logs": frozenset(),
    "twisted_private": frozenset(),
    "data": FOUNDATION,
    "insights": FOUNDATION | {"data"},
    "web": FOUNDATION | {"data", "insights"},
    "mcp": FOUNDATION | {"data", "insights", "web"},
    "websub": FOUNDATION | {"data", "web"},
    "publishing": FOUNDATION | {"data", "insights", "web", "mcp"},
    "ops": FOUNDATION | {"data", "insights", "web", "mcp", "websub", "publishing"},
    "config": FOUNDATION | {"data", "web", "websub"},
    "tap": FOUNDATION
    | {"data", "insights", "web", "mcp", "websub", "publishing", "ops", "config"},
    "cli": FOUNDATION | {"data"},
    "__main__": frozenset({"cli"}),
}
"""
What each layer may import, lowest first: the data is below everything
that serves it; the web, MCP and WebSub faces read it; publishing runs every
renderer; operations watch them all; C{tap} wires.  The C{reviewsd}
command (C{cli}, and C{python -m reviewsd}) reads and writes data
directories and serves nothing.
"""


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = ROOT) -> Iterator[str]:
    """Every C{reviewsd} module a source file imports, anywhere in it."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from reviewsd.x import y" imports the module y when there is one
            targets = [
                f"{base}.{alias.name}"
                if _exists(f"{base}.{alias.name}", root)
                else base
                for alias in node.names
            ]
        else:
            continue
        yield from (t for t in targets if t.split(".")[0] == root.name)


def _exists(module: str, root: Path) -> bool:
    relative = Path(*module.split(".")[1:])
    return (root / relative).with_suffix(".py").is_file() or (
        root / relative / "__init__.py"
    ).is_file()


def layer(module: str) -> str:
    """The layer a module belongs to: its top-level package or module."""
    parts = module.split(".")
    return "_version" if len(parts) == 1 else parts[1]


def forbidden_imports(root: Path = ROOT) -> list[str]:
    """Each import that points up or sideways, as C{module -> imported}."""
    found = []
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        own = layer(name)
        for target in imports(path, root):
            other = layer(target)
            if other != own and other not in ALLOWED.get(own, frozenset()):
                found.append(f"{name} -> {target}")
    return found


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """The import cycles among modules (each found once, from one member)."""
    graph = {
        module_name(path, root): set(imports(path, root)) for path in root.rglob("*.py")
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


class LayerTests(SynchronousTestCase):
    def test_every_package_has_a_layer(self) -> None:
        """A new package or top-level module must be given its place."""
        layers = {layer(module_name(p)) for p in ROOT.rglob("*.py")}
        self.assertEqual(sorted(layers - set(ALLOWED)), [])

    def test_dependencies_point_down(self) -> None:
        self.assertEqual(forbidden_imports(), [])

    def test_no_import_cycles(self) -> None:
        self.assertEqual(import_cycles(), [])

    def test_an_upward_import_is_caught(self) -> None:
        """The checks can fail: a data module importing the web is reported."""
        root = Path(self.mktemp()) / "reviewsd"
        for package in ("data", "web"):
            (root / package).mkdir(parents=True)
            (root / package / "__init__.py").write_text("")
        (root / "__init__.py").write_text("")
        (root / "data" / "model.py").write_text(
            "def late():\n    from reviewsd.web import site\n"
        )
        (root / "web" / "site.py").write_text("from reviewsd.data import model\n")
        self.assertEqual(
            forbidden_imports(root), ["reviewsd.data.model -> reviewsd.web.site"]
        )
        self.assertEqual(
            import_cycles(root),
            [["reviewsd.data.model", "reviewsd.web.site", "reviewsd.data.model"]],
        )


TESTS = Path(__file__).parent


def borrowed_imports(root: Path = TESTS) -> list[str]:
    """
    Each import, anywhere under C{root}, of a test module or of the
    benchmarks, as C{file -> imported}: what tests share lives in
    C{tests.support}, so each test module can be read, run and moved alone.
    """
    found = []
    for path in sorted(root.rglob("*.py")):
        package = path.relative_to(root.parent).parent.parts
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package[: len(package) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                top, _, rest = target.partition(".")
                if top == "benchmarks" or (
                    top == root.name and rest.split(".")[0].startswith("test_")
                ):
                    found.append(f"{path.relative_to(root.parent)} -> {target}")
                    break
    return found


class TestModuleTests(SynchronousTestCase):
    def test_no_test_module_imports_another(self) -> None:
        """Helpers shared by test modules, or the benchmarks, live in support."""
        self.assertEqual(borrowed_imports(), [])

    def test_a_borrowed_import_is_caught(self) -> None:
        """The check can fail: test modules and benchmarks, however imported."""
        root = Path(self.mktemp()) / "tests"
        (root / "support").mkdir(parents=True)
        (root / "__init__.py").write_text("")
        (root / "support" / "__init__.py").write_text("from .. import test_a\n")
        (root / "test_a.py").write_text("from tests.support import x\n")
        (root / "test_b.py").write_text(
            "def late():\n    from tests.test_a import x\n    import benchmarks.suite\n"
        )
        self.assertEqual(
            borrowed_imports(root),
            [
                "tests/support/__init__.py -> tests.test_a",
                "tests/test_b.py -> tests.test_a",
                "tests/test_b.py -> benchmarks.suite",
            ],
        )


class PackagingTests(SynchronousTestCase):
    def test_every_package_is_installed(self) -> None:
        """
        setup.cfg names each package to install: one left out would pass
        every test run from the source tree and fail once installed.
        """
        config = configparser.ConfigParser()
        config.read(ROOT.parent / "setup.cfg")
        listed = set(config["options"]["packages"].split())
        packages = {module_name(path) for path in ROOT.rglob("__init__.py")} | {
            "twisted.plugins"
        }
        self.assertEqual(sorted(packages ^ listed), [])
