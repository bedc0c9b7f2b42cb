"""No import cycles inside seq2bert.

The graph: one node per module of seq2bert/, one edge per ``import`` statement naming another seq2bert module —
at module level, under ``if TYPE_CHECKING:``, and inside functions alike. A lazy import is no way out of a
cycle: it only moves the failure to the first call, and the two modules still cannot be understood, tested or
moved one without the other. The one thing not counted is what Python does by itself: importing ``a.b.c``
first runs the packages ``a`` and ``a.b`` (a package's ``__init__`` that imports one of its modules, as
seq2bert/models/__init__.py imports the registry, is an edge like any other). A module named by a string
(``importlib.import_module("seq2bert.…")``) would hide an edge, so there must be none; the CLI's plugins
($SEQ2BERT_PLUGINS) are the user's modules, named at run time.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seq2bert"


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The seq2bert modules that ``import`` statements anywhere in ``path`` name."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x, from ..y import z
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # `from a.b import c`: the module a.b.c if there is one, else a.b
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as one cycle through it."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(path_through(edges, component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def path_through(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """One cycle inside a strongly connected ``component``: a → … → a (breadth first from its first module)."""
    start = min(component)
    parent, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v] & component):
            if w == start:
                path = [v]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if w not in parent:
                parent[w] = v
                queue.append(w)
    return sorted(component)


def test_no_module_of_seq2bert_imports_itself_through_others():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_no_seq2bert_module_is_imported_by_a_string():
    calls = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module",
                "__import__",
            ):
                literal = node.args and isinstance(node.args[0], ast.Constant)
                if literal and str(node.args[0].value).startswith("seq2bert"):
                    calls.append(f"{name}: {node.args[0].value}")
    assert not calls, calls


@pytest.mark.parametrize(
    "edges, expected",
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c", "a"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b", "a"], ["c", "d", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(edges, expected):
    assert sorted(cycles(edges)) == expected


def test_the_graph_sees_lazy_and_type_checking_imports(tmp_path):
    known = {
        "seq2bert.x": tmp_path / "x.py",
        "seq2bert.y": tmp_path / "y.py",
        "seq2bert.z": tmp_path / "z.py",
    }
    known["seq2bert.x"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from seq2bert.y import Y\n"
        "def f():\n    from seq2bert import z\n    return z\n"
    )
    assert imported("seq2bert.x", known["seq2bert.x"], known) == {"seq2bert.y", "seq2bert.z"}


# tasks/ stands on the evaluation floor (seq2bert/tasks/task.py): the floors' tool (layering.py) has no rule
# for a package it does not know, so its floor is checked here, both ways
TASKS_READ = ("seq2bert.errors", "seq2bert.io", "seq2bert.config", "seq2bert.data", "seq2bert.evaluation")
BELOW_TASKS = ("nn", "data", "objectives", "decoding", "models", "evaluation")


def test_tasks_read_only_the_floors_below_them_and_nothing_below_reads_them():
    edges = graph()
    up = sorted(
        f"{m} → {t}"
        for m, targets in edges.items()
        if m.startswith("seq2bert.tasks")
        for t in targets
        if not t.startswith(("seq2bert.tasks", *TASKS_READ))
    )
    down = sorted(
        f"{m} → {t}"
        for m, targets in edges.items()
        if m.split(".")[1:2] and m.split(".")[1] in BELOW_TASKS
        for t in targets
        if t.startswith("seq2bert.tasks")
    )
    assert not up and not down, up + down


def test_commands_stand_below_the_cli_and_nothing_else_reads_them():
    """commands/ is the floor under cli.py: it never imports the CLI, and no floor below reads a command."""
    edges = graph()
    wrong = sorted(
        f"{m} → {t}"
        for m, targets in edges.items()
        for t in targets
        if (m.startswith("seq2bert.commands") and t == "seq2bert.cli")
        or (t.startswith("seq2bert.commands") and not m.startswith(("seq2bert.commands", "seq2bert.cli")))
    )
    assert not wrong, wrong
