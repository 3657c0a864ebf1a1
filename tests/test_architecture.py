"""Architecture contracts of the house (DESIGN.md, issue 21), read from the source with ast so
they hold for code no test happens to import:

- no import circle among the modules of app/ and engines/, counting module-level and
  function-level imports alike (a function-level import only hides a circle, it does not break
  it), and the packages a submodule import runs first; imports under `if TYPE_CHECKING:` do
  not count, they never run;
- no import circle among the packages of app/ and engines/ either (a package is the first two
  dotted parts: engines.store, app.common, engines.request): each package sits above or below
  another, never both, so a newcomer can read them bottom up;
- imports at module top: fewer than MAX_FUNCTION_LEVEL_IMPORTS function-level imports of
  project modules in all, each with a comment that says why it cannot be at the top;
- heavy optional libraries (HEAVY_MODULES) reach engines/ only through engines.lazy;
- engines.cli is a front end like app/: no module outside it imports it;
- no module in app/ or engines/ over MAX_LINES lines;
- no two classes in app/ and engines/ share a name (a name means one thing).

That engines/ never imports Qt or sounddevice is checked in test_layering.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from engines.catalog.tables import MODEL_SETS, PRECISION_NAMES, TIER_NAMES

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "engines")
MAX_LINES = 400
# Issue 21: "function-level imports of the project's own modules under 20 in total".
MAX_FUNCTION_LEVEL_IMPORTS = 20
# Imported in engines/ only through engines.lazy.lazy_import (declared at module top, loaded on
# first use), never by an import statement: seconds of startup, or absent on most machines.
HEAVY_MODULES = ("tensorrt", "cuda", "onnxruntime", "scipy", "pyloudnorm", "psycopg")
# Class names that may be defined more than once, with the reason; none today.
SHARED_CLASS_NAMES: dict[str, str] = {}


@dataclass(frozen=True)
class ProjectImport:
    """One import of a project module by another, as written in the source."""

    importer: str
    imported: str
    line: int
    in_function: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _sources() -> dict[str, Path]:
    """Dotted module name -> file, for every module of app/ and engines/."""
    return {_module_name(path): path
            for package in PACKAGES for path in sorted((REPO_ROOT / package).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module `name` names: itself, or the nearest package above it (a name
    imported from a module, `from engines.x import y`, is resolved by the caller first)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool,
             modules: dict[str, Path]) -> set[str]:
    """The project modules one import statement loads (`from pkg import sub` loads pkg.sub
    when sub is a module; otherwise the module the names come from)."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            target = _resolve(alias.name, modules)
            if target is not None:
                found.add(target)
        return found
    base = node.module or ""
    if node.level:
        package = importer if is_package else importer.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    for alias in node.names:
        # _resolve walks up: a name that is not a submodule resolves to the module it is from
        target = _resolve(f"{base}.{alias.name}", modules) if base else None
        if target is not None:
            found.add(target)
    return found


def _walk(node: ast.AST, in_function: bool, found: list[tuple[ast.AST, bool]]) -> None:
    """Every import statement under node with whether it runs inside a function, leaving out
    the bodies of `if TYPE_CHECKING:` (their `else:` still runs)."""
    for child in ast.iter_child_nodes(node):
        _walk_one(child, in_function, found)


def _walk_one(node: ast.AST, in_function: bool, found: list[tuple[ast.AST, bool]]) -> None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        found.append((node, in_function))
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for other in node.orelse:
            _walk_one(other, in_function, found)
        return
    inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    _walk(node, inner, found)


@cache
def project_imports() -> tuple[ProjectImport, ...]:
    modules = _sources()
    edges: list[ProjectImport] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        statements: list[tuple[ast.AST, bool]] = []
        _walk(tree, False, statements)
        for node, in_function in statements:
            assert isinstance(node, (ast.Import, ast.ImportFrom))
            for target in sorted(_targets(node, name, path.name == "__init__.py", modules)):
                if target != name:
                    edges.append(ProjectImport(name, target, node.lineno, in_function))
    return tuple(edges)


def _packages_above(module: str, modules: dict[str, Path]) -> list[str]:
    """The packages Python imports before `module` (engines.store for engines.store.rows)."""
    parts = module.split(".")
    return [name for name in (".".join(parts[:i]) for i in range(1, len(parts)))
            if name in modules]


def _import_graph() -> dict[str, set[str]]:
    """importer -> the modules its imports run. Importing a submodule first runs the packages
    above it, so those count too: `engines.store.rows` runs engines/store/__init__.py, and
    whatever that imports (a package of the importer's own is already running, so not those)."""
    modules = _sources()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for edge in project_imports():
        graph[edge.importer].add(edge.imported)
        own = set(_packages_above(edge.importer, modules)) | {edge.importer}
        graph[edge.importer].update(p for p in _packages_above(edge.imported, modules)
                                    if p not in own)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def _describe(component: list[str]) -> str:
    members = set(component)
    lines = [f"  circle of {len(component)} modules:"]
    for edge in project_imports():
        if edge.importer in members and edge.imported in members:
            where = "in a function" if edge.in_function else "at module level"
            lines.append(f"    {edge.importer}:{edge.line} -> {edge.imported} ({where})")
    return "\n".join(lines)


def test_the_import_graph_is_read() -> None:
    # Guards the checks below against passing on an empty or misread graph.
    edges = project_imports()
    assert len(_sources()) > 100
    assert any(e.importer == "app.shell.main_window" and e.imported.startswith("app.")
               for e in edges)
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _packages_above("engines.store.rows", _sources()) == ["engines", "engines.store"]


def _function_level_imports() -> list[ProjectImport]:
    return [edge for edge in project_imports() if edge.in_function]


def test_function_level_imports_of_project_modules_are_few(capsys) -> None:
    inner = _function_level_imports()
    with capsys.disabled():
        print(f"\nfunction-level imports of project modules: {len(inner)} "
              f"(engines {sum(e.importer.startswith('engines') for e in inner)}, "
              f"app {sum(e.importer.startswith('app') for e in inner)})")
    assert len(inner) < MAX_FUNCTION_LEVEL_IMPORTS, (
        f"{len(inner)} function-level imports of project modules (import them at module top, "
        f"or under `if TYPE_CHECKING:` when only types need them):\n" + "\n".join(
            f"  {edge.importer}:{edge.line} -> {edge.imported}" for edge in inner))


def test_each_function_level_import_says_why() -> None:
    # A comment on the import's line or the line above it: why it cannot be at the top.
    sources = _sources()
    silent = []
    for edge in _function_level_imports():
        lines = sources[edge.importer].read_text(encoding="utf-8").splitlines()
        here, above = lines[edge.line - 1], lines[edge.line - 2] if edge.line > 1 else ""
        if "#" not in here and not above.strip().startswith("#"):
            silent.append(f"  {edge.importer}:{edge.line}: {here.strip()}")
    assert not silent, "function-level imports without a comment saying why:\n" + \
        "\n".join(silent)


def _heavy_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of each import statement of a HEAVY_MODULES package that runs (those
    under `if TYPE_CHECKING:` never do), at module level or in a function."""
    statements: list[tuple[ast.AST, bool]] = []
    _walk(tree, False, statements)
    found = []
    for node, _in_function in statements:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            names = [node.module or ""] if not node.level else []
        found += [(node.lineno, name) for name in names
                  if name.split(".")[0] in HEAVY_MODULES]
    return found


def test_heavy_modules_reach_engines_only_through_lazy_import() -> None:
    probe = ast.parse("import scipy.signal\nfrom cuda.bindings import driver\nimport numpy\n"
                      "if TYPE_CHECKING:\n    import tensorrt\n"
                      "def f():\n    import onnxruntime as ort\n")
    assert [name for _, name in _heavy_imports(probe)] == [
        "scipy.signal", "cuda.bindings", "onnxruntime"]  # the walk sees them
    offenders = []
    for module, path in _sources().items():
        if module.startswith("engines."):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            offenders += [f"  {module}:{line}: import {name}"
                          for line, name in _heavy_imports(tree)]
    assert not offenders, ("heavy modules imported by a statement; declare them with "
                           "engines.lazy.lazy_import at module top instead:\n"
                           + "\n".join(offenders))


def test_no_import_circles_in_app_or_engines() -> None:
    circles = _circles(_import_graph())
    assert not circles, "import circles (module-level and function-level imports):\n" + \
        "\n".join(_describe(component) for component in circles)


def package_of(module: str) -> str:
    """The package a module belongs to for the package-level check: its first two dotted parts
    (engines.store.rows -> engines.store; engines.request stays itself)."""
    return ".".join(module.split(".")[:2])


def _package_graph() -> dict[str, set[str]]:
    """package -> the packages its modules import at run time (module or function level; the
    top packages app and engines, whose __init__ only names the layer, are left out)."""
    graph: dict[str, set[str]] = {}
    for edge in project_imports():
        importer, imported = package_of(edge.importer), package_of(edge.imported)
        if "." not in importer or "." not in imported:
            continue
        graph.setdefault(importer, set())
        graph.setdefault(imported, set())
        if importer != imported:
            graph[importer].add(imported)
    return graph


def test_no_import_circles_between_packages() -> None:
    graph = _package_graph()
    assert {"engines.store", "engines.delivery", "app.common", "app.widgets"} <= set(graph)
    assert "engines.finish" in graph["engines.delivery"]  # the graph holds real edges
    circles = _circles(graph)
    lines = []
    for component in circles:
        members = set(component)
        lines.append(f"  circle of {len(component)} packages: {', '.join(component)}")
        lines += [f"    {edge.importer}:{edge.line} -> {edge.imported}"
                  for edge in project_imports()
                  if package_of(edge.importer) in members and package_of(edge.imported) in members
                  and package_of(edge.importer) != package_of(edge.imported)]
    assert not circles, ("import circles between packages (move the piece one side needs to the "
                         "package below both):\n" + "\n".join(lines))


def test_nothing_outside_engines_cli_imports_it() -> None:
    offenders = sorted(
        f"{edge.importer}:{edge.line} -> {edge.imported}"
        for edge in project_imports()
        if (edge.imported == "engines.cli" or edge.imported.startswith("engines.cli."))
        and not (edge.importer == "engines.cli" or edge.importer.startswith("engines.cli."))
    )
    assert not offenders, "engines.cli is a front end; these import it:\n" + "\n".join(offenders)


def test_no_module_over_max_lines() -> None:
    long = sorted(
        (count, str(path.relative_to(REPO_ROOT)))
        for path in _sources().values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    )
    assert not long, f"modules over {MAX_LINES} lines (split them by job):\n" + "\n".join(
        f"  {name}: {count}" for count, name in long)


def test_no_two_classes_share_a_name() -> None:
    # Issue 21: `Take`, `Finished`, `Rendered` and `Outcome` each named two different classes.
    defined: dict[str, list[str]] = {}
    for module, path in _sources().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(f"{module}:{node.lineno}")
    assert len(defined) > 100  # the walk found the classes
    shared = {name: where for name, where in sorted(defined.items())
              if len(where) > 1 and name not in SHARED_CLASS_NAMES}
    assert not shared, "class names defined more than once (rename them to say what each is):\n" + \
        "\n".join(f"  {name}: {', '.join(where)}" for name, where in shared.items())


def _restated_name_lists(tree: ast.AST) -> list[tuple[int, str, list[str]]]:
    """Tuple, list and set literals holding two or more names of one catalog kind: a restated
    model, codec tier or precision list (one name alone, as a default or an example, is fine)."""
    kinds = {"model": set(MODEL_SETS), "codec tier": set(TIER_NAMES),
             "precision": set(PRECISION_NAMES)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            texts = {e.value for e in node.elts if isinstance(e, ast.Constant)
                     and isinstance(e.value, str)}
            found += [(node.lineno, kind, sorted(texts & names))
                      for kind, names in kinds.items() if len(texts & names) >= 2]
    return found


def test_the_model_tier_and_precision_lists_are_defined_once() -> None:
    # Issue 33: the CLI restated the tier list and the model keys were literal in 9 files, so a
    # new tier or model set had to be added in each (and one was always missed).
    assert _restated_name_lists(ast.parse('MODELS = ("demo", "sm-sfx")\nTIERS = ["fp8", '
                                          '"legacy"]\nP = {"fp16", "bf16"}')) != []
    offenders = [
        f"{module}:{line}: a {kind} list {names}"
        for module, path in _sources().items() if not module.startswith("engines.catalog")
        for line, kind, names in _restated_name_lists(ast.parse(path.read_text("utf-8")))
    ]
    assert not offenders, ("lists of catalog names restated outside engines/catalog (take them "
                           "from engines.catalog.tables):\n" + "\n".join(offenders))


def test_one_gpu_job_entry_point() -> None:
    """GPU work goes in as one job type by one submit and comes back by one outcome signal (plus
    one progress signal): no submit_* side doors, no per-kind signals to keep in step."""
    from PySide6.QtCore import Signal

    from app.common.gpu_service import GpuService
    from app.common.worker import GpuWorker, WorkerHost

    for cls in (GpuService, GpuWorker, WorkerHost):
        signals = sorted(name for name, value in vars(cls).items() if isinstance(value, Signal))
        submits = sorted(name for name in vars(cls) if name.startswith("submit"))
        assert signals in (["outcome", "progress"], ["shutdownRequested", "submitted"]), (
            cls.__name__, signals)
        assert submits in ([], ["submit"], ["submit", "submitted"]), (cls.__name__, submits)
    side_doors = [
        f"{module}: {node.attr}" for module, path in _sources().items()
        if module.startswith("app.")
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Attribute) and node.attr.startswith("submit_")]
    assert not side_doors, "GPU work goes through GpuService.submit(job):\n" + "\n".join(
        side_doors)


# Issue 33: a handler catches what its call is meant to raise (app.common.expected_errors);
# `except Exception` stays only at safety nets (a Qt slot's or thread's top, the excepthook,
# close and shutdown paths), and this many at most in app/.
MAX_CATCH_ALLS_IN_APP = 38
CATCH_ALL_NAMES = ("Exception", "BaseException")
# `# noqa: BLE001 - why` (other codes may share the noqa), two words of why at least
SAYS_WHY = re.compile(r"#\s*noqa:[^#]*\bBLE001\b[^#-]*-\s*\S+\s+\S+")


def _catch_alls(tree: ast.AST) -> list[int]:
    """Lines of `except:`, `except Exception` and `except BaseException` (alone or in a tuple)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler):
            continue
        caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        if node.type is None or any(
                isinstance(c, ast.Name) and c.id in CATCH_ALL_NAMES for c in caught):
            lines.append(node.lineno)
    return lines


def _app_catch_alls() -> list[tuple[str, int, str]]:
    found = []
    for module, path in _sources().items():
        if not module.startswith("app."):
            continue
        text = path.read_text("utf-8")
        source_lines = text.splitlines()
        found += [(str(path.relative_to(REPO_ROOT)), n, source_lines[n - 1])
                  for n in _catch_alls(ast.parse(text))]
    return found


def test_each_catch_all_in_app_says_why_it_must_catch_everything() -> None:
    """`except Exception:  # noqa: BLE001 - <why>` on the handler's own line: a reader sees at
    once that the catch-all is a safety net, and which."""
    silent = [f"  {where}:{n}: {line.strip()}" for where, n, line in _app_catch_alls()
              if not SAYS_WHY.search(line)]
    assert not silent, ("a catch-all without a `# noqa: BLE001 - why` comment (or catch what "
                        "is meant, app/common/expected_errors.py):\n" + "\n".join(silent))


def test_catch_alls_in_app_stay_few() -> None:
    found = _app_catch_alls()
    assert len(found) <= MAX_CATCH_ALLS_IN_APP, (
        f"{len(found)} catch-alls in app/ (at most {MAX_CATCH_ALLS_IN_APP}); catch what is "
        "meant instead:\n" + "\n".join(f"  {where}:{n}" for where, n, _ in found))
