"""No import circle among the product modules, counting every import: module level, under
TYPE_CHECKING and inside functions (a circle through a function-level import still ties the
two modules together, and is one refactoring away from an import-time failure).

Every product module under broker/, protocol/, storage/ and kafkalite/ (tests excluded) is
parsed with `ast`; relative imports are resolved, and `kafkalite.broker.x` and `broker.x` are
the same module (kafkalite/broker is a link to ../broker)."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the top-level folders reached as kafkalite.<name> (symlinks kafkalite/<name> -> ../<name>)
LINKED = ("broker", "protocol", "storage")

# A module a reader can hold in mind at once does one job; past this many lines it does several.
MAX_MODULE_LINES = 600


def _is_test(rel: Path) -> bool:
    return "tests" in rel.parts or rel.name.startswith(("test_", "conftest"))


def product_modules() -> dict[str, Path]:
    """Module name (kafkalite.…) -> file, for every product module."""
    found: dict[str, Path] = {}
    roots = [(ROOT / name, f"kafkalite.{name}") for name in LINKED] + [(ROOT / "kafkalite", "kafkalite")]
    for base, package in roots:
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base)
            if _is_test(rel) or any(part in LINKED for part in rel.parts[:1]) and base.name == "kafkalite":
                continue
            if any(p.startswith(".") or p == "node_modules" for p in rel.parts):
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _canonical(name: str) -> str:
    head = name.split(".", 1)[0]
    return f"kafkalite.{name}" if head in LINKED else name


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The product modules `module` imports, anywhere in its file."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    targets: set[str] = set()

    def add(name: str) -> None:
        """An edge to the deepest product module `name` names (a.b.c for `import a.b.c`)."""
        parts = _canonical(name).split(".")
        for i in range(len(parts), 0, -1):
            candidate = ".".join(parts[:i])
            if candidate in known:
                if candidate != module:
                    targets.add(candidate)
                return

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                source = f"{prefix}.{node.module}" if node.module else prefix
            else:
                source = node.module or ""
            # `from p import m` imports the module p.m when there is one, else a name of p
            for alias in node.names:
                add(f"{source}.{alias.name}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            add(node.args[0].value)
    return targets


@lru_cache(maxsize=1)
def import_graph() -> dict[str, set[str]]:
    modules = product_modules()
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle
    through them for the message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest path back to the component's first module, for a readable message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return component


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "kafkalite.broker.server" in graph and "kafkalite.protocol.records" in graph
    # function-level and TYPE_CHECKING imports count, relative ones are resolved
    assert "kafkalite.broker.groups.coordinator" in graph["kafkalite.broker.services"]
    assert "kafkalite.broker.state" in graph["kafkalite.broker.context"]
    assert not any(".tests" in name for name in graph)


def test_no_import_circle_among_product_modules() -> None:
    graph = import_graph()
    found = circles(graph)
    message = "\n".join(" -> ".join(one_cycle(graph, c)) for c in found)
    assert not found, f"import circles among product modules:\n{message}"


def test_no_product_module_is_over_the_size_of_one_job() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in product_modules().items()}
    assert len(sizes) > 100
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"
