"""How app/ is built (DESIGN.md "Controllers in app/", issue 21), read from the source:

- the feature packages compose upward only: nothing but app.shell (and the package's lazy
  entry points in app/__init__.py) imports app.shell, the window that composes them;
- controllers never import each other: they are handed their panels and the shared services,
  and talk through those and Qt signals;
- imports sit at module top: at most MAX_FUNCTION_IMPORTS function-level imports of the
  project's own modules in app/, each with a comment that says why it must stay there;
- every folder of app/ with code is a package (the wheel ships `app*` packages only).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from tests.test_architecture import REPO_ROOT, ProjectImport, project_imports

APP_DIR = REPO_ROOT / "app"
MAX_FUNCTION_IMPORTS = 6


def _app_imports() -> list[ProjectImport]:
    return [edge for edge in project_imports()
            if edge.importer == "app" or edge.importer.startswith("app.")]


def _path(module: str) -> Path:
    base = REPO_ROOT.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@cache
def _controller_modules() -> frozenset[str]:
    """app modules that define a controller class (a class named ...Controller)."""
    found = set()
    for path in APP_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.ClassDef) and node.name.endswith("Controller")
               for node in tree.body):
            parts = path.relative_to(REPO_ROOT).with_suffix("").parts
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return frozenset(found)


def test_the_controllers_are_found() -> None:
    # Guards the checks below against passing on an empty or misread tree.
    controllers = _controller_modules()
    assert {"app.generate.controller", "app.takes.controller", "app.finish.controller",
            "app.library.controller", "app.models.controller", "app.batch.controller",
            "app.export.controller"} <= controllers
    assert any(edge.importer == "app.shell.studio" and edge.imported in controllers
               for edge in _app_imports())


def test_only_the_shell_imports_the_shell() -> None:
    offenders = sorted(f"{edge.importer}:{edge.line} -> {edge.imported}"
                       for edge in _app_imports()
                       if edge.imported.startswith("app.shell")
                       and not edge.importer.startswith("app.shell") and edge.importer != "app")
    assert not offenders, "the window composes the features, not the other way round:\n" + \
        "\n".join(offenders)


def test_controllers_never_import_each_other() -> None:
    controllers = _controller_modules()
    offenders = sorted(f"{edge.importer}:{edge.line} -> {edge.imported}"
                       for edge in _app_imports()
                       if edge.importer in controllers and edge.imported in controllers)
    assert not offenders, "controllers talk through services and signals, not imports:\n" + \
        "\n".join(offenders)


def test_function_level_imports_are_few_and_explained() -> None:
    inner = [edge for edge in _app_imports() if edge.in_function]
    assert len(inner) <= MAX_FUNCTION_IMPORTS, "\n".join(
        f"{edge.importer}:{edge.line} -> {edge.imported}" for edge in inner)
    unexplained = []
    for edge in inner:
        lines = _path(edge.importer).read_text(encoding="utf-8").splitlines()
        if not lines[edge.line - 2].strip().startswith("#"):
            unexplained.append(f"{edge.importer}:{edge.line} -> {edge.imported}")
    assert not unexplained, "a function-level import needs a comment above it saying why:\n" + \
        "\n".join(unexplained)


def test_every_app_folder_with_code_is_a_package() -> None:
    missing = sorted(str(folder.relative_to(REPO_ROOT))
                     for folder in [APP_DIR, *APP_DIR.rglob("*")]
                     if folder.is_dir() and folder.name != "__pycache__"
                     and any(folder.glob("*.py")) and not (folder / "__init__.py").exists())
    assert not missing, f"folders with Python code but no __init__.py: {missing}"
