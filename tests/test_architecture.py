"""The package layering of docs/architecture.md holds: a module imports only its own layer or those
below it, the CLI is imported by nothing of the pipeline, and there is no import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "flows", "tasks", "schemas", "docreview_testing")

#: Layer of each package prefix (longest prefix wins); see docs/architecture.md.
LAYERS = {
    "schemas": -1,
    "tasks.textnorm": 0,
    "tasks.runnames": 0,
    "tasks.store": 1,
    "tasks.ingest": 2,
    "tasks.review": 3,
    "tasks.check": 4,
    "tasks.observe": 5,
    "flows": 6,
    "docreview_testing": 6.5,  # test doubles and generators: only the CLI, tests and benchmarks use them
    "cli": 7,
}


def layer(module: str) -> float:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """Project modules imported anywhere in ``path`` (top level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    return {m: imports(p, set(found)) - {m} for m, p in found.items()}


def test_every_import_points_down_the_layers():
    wrong = []
    for module, targets in graph().items():
        if module.startswith("schemas.migrations"):
            continue  # Alembic's env.py reads the tables, like any schema module
        for target in targets:
            if target.split(".")[0] in PACKAGES and layer(target) > layer(module):
                wrong.append(f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles():
    edges = graph()
    cycles = set()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for nxt in edges.get(node, ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    for a, targets in edges.items():
        for b in targets:
            # a package's __init__ importing nothing is fine; a module pair reaching each other is a cycle
            if b in edges and reaches(b, a):
                cycles.add(tuple(sorted((a, b))))
    assert not cycles, sorted(cycles)


def test_no_http_test_server_in_the_pipeline():
    for package in ("flows", "tasks", "schemas"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert "BaseHTTPRequestHandler" not in text and "ThreadingHTTPServer" not in text, path


def test_every_flow_fits_on_one_screen():
    """A flow's code (its body after the docstring; the formatter puts one parameter a line in the
    signature) is at most 50 lines: control flow only, the work lives in tasks."""
    for path in (ROOT / "flows").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                "flow" in ast.unparse(d).split("(")[0] for d in node.decorator_list
            ):
                body = node.body
                if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    body = body[1:]
                assert node.end_lineno - body[0].lineno + 1 <= 50, f"{path.name}:{node.name}"
