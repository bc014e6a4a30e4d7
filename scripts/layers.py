"""Weir's layers and import cycles, studied from the imports alone (issue 57): `make layers`.

Reads the root packages from `.importlinter`, builds their import graph with grimp (the library
import-linter checks the contracts with; `TYPE_CHECKING` imports count), and prints:
- the packages by floor, top first: a package's floor is one above the highest floor it imports,
  and packages that import each other share a floor (said beside it); then each package's arrows
  to the others, with how many module imports each stands for;
- for each package, how many floors its modules stack into and every import cycle among them, with
  the arrows that close it.

`--floors PACKAGE` also prints that package's modules floor by floor. The contracts themselves
(layers, independence, no cycles) are checked by `lint-imports` in `make lint`; this script only
shows. Exit 0 always.

Usage: python scripts/layers.py [--floors PACKAGE] [CONFIG]
"""

from __future__ import annotations

import argparse
import configparser
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

Graph = Mapping[str, Iterable[str]]


def root_packages(config_text: str) -> list[str]:
    """The `root_packages` of an import-linter config (pure)."""
    parser = configparser.ConfigParser()
    parser.read_string(config_text)
    return parser["importlinter"]["root_packages"].split()


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The strongly connected components of `graph` (node -> nodes it imports), each sorted, in
    reverse topological order: a component comes after every component it imports (pure;
    Tarjan's algorithm, iterative so that a deep graph does not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next((t for t in targets if t not in index or t in on_stack), None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    components.append(sorted(component))
            elif target in index:
                low[node] = min(low[node], index[target])
            else:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(sorted(graph.get(target, ())))))
    return components


def floors(graph: Graph) -> list[list[str]]:
    """The nodes of `graph` by floor, bottom first: a node's floor is one above the highest floor
    it imports; the nodes of one cycle share a floor (pure)."""
    floor_of: dict[str, int] = {}
    for component in strongly_connected(graph):
        members = set(component)
        below = [floor_of[t] for n in component for t in graph[n] if t not in members]
        for node in component:
            floor_of[node] = max(below, default=-1) + 1
    stacked: list[list[str]] = [[] for _ in range(max(floor_of.values(), default=-1) + 1)]
    for node, floor in sorted(floor_of.items()):
        stacked[floor].append(node)
    return stacked


def cycles(graph: Graph) -> list[list[tuple[str, str]]]:
    """Every import cycle of `graph` as the arrows among the nodes of one strongly connected
    component of more than one node (pure)."""
    found = []
    for component in strongly_connected(graph):
        members = set(component)
        if len(members) > 1:
            found.append([(n, t) for n in component for t in sorted(graph[n]) if t in members])
    return found


def package_arrows(modules: Graph) -> dict[str, Counter[str]]:
    """For each top-level package, the other packages its modules import, with how many module
    imports each arrow stands for (pure)."""
    arrows: dict[str, Counter[str]] = {}
    for module, targets in modules.items():
        top = module.split(".")[0]
        arrows.setdefault(top, Counter()).update(t.split(".")[0] for t in targets if t.split(".")[0] != top)
    return arrows


def package_graph(modules: Graph) -> dict[str, set[str]]:
    """The imports between top-level packages that a module graph implies (pure)."""
    return {package: set(imported) for package, imported in package_arrows(modules).items()}


def within(modules: Graph, package: str) -> dict[str, set[str]]:
    """The imports among `package`'s own modules (pure)."""
    inside = {m for m in modules if m == package or m.startswith(package + ".")}
    return {m: {t for t in modules[m] if t in inside} for m in inside}


def report(modules: Graph, floors_of: str | None) -> list[str]:
    """The printed lines: packages by floor, then each package's floors and cycles (pure)."""
    packages = package_graph(modules)
    shared = {n for arrows in cycles(packages) for n, _ in arrows}
    lines = ["Packages by floor, top first (a floor imports only the floors below it):"]
    for number, floor in reversed(list(enumerate(floors(packages)))):
        note = "   (import each other)" if shared.intersection(floor) and len(floor) > 1 else ""
        lines.append(f"  {number}  {', '.join(floor)}{note}")
    lines.append("Arrows between packages (the module imports each stands for):")
    for package, imported in sorted(package_arrows(modules).items()):
        if imported:
            lines.append(
                f"  {package} -> " + ", ".join(f"{name} ({count})" for name, count in sorted(imported.items()))
            )
    total = 0
    lines.append("Modules of each package (floors, import cycles):")
    for package in sorted(packages):
        graph = within(modules, package)
        found = cycles(graph)
        total += len(found)
        lines.append(f"  {package}: {len(floors(graph))} floors, {len(found)} cycles")
        for arrows in found:
            members = sorted({n for n, _ in arrows})
            lines.append(f"    cycle of {len(members)} modules, {len(arrows)} arrows:")
            lines.extend(f"      {n} -> {t}" for n, t in arrows)
        if package == floors_of:
            for number, floor in reversed(list(enumerate(floors(graph)))):
                lines.append(f"    floor {number}: {', '.join(floor)}")
    lines.append(f"Import cycles: {total}")
    return lines


def main(argv: list[str]) -> int:
    """Build the graph of the configured packages and print the report (the imperative shell)."""
    import grimp

    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--floors", metavar="PACKAGE", help="also print PACKAGE's modules floor by floor")
    options.add_argument("config", nargs="?", default=".importlinter")
    args = options.parse_args(argv)
    sys.path.insert(0, str(Path.cwd()))  # bench is a folder of the checkout, as lint-imports finds it
    packages = root_packages(Path(args.config).read_text())
    graph = grimp.build_graph(*packages, cache_dir=None)
    modules = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    print("\n".join(report(modules, args.floors)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
