"""The package layout holds: no import circle in src/, and imports point one way (ADR 0038).

The import graph is read from the source with :mod:`ast` (every ``import``, including the
ones inside functions and ``if TYPE_CHECKING:`` blocks, since a circle there is still a
circle a reader has to untangle), so the test needs no third-party tool.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
AUDIT = "llm_council.bias_audit"
REPORT = f"{AUDIT}.report"


@cache
def modules() -> dict[str, Path]:
    """Every module under src/, by dotted name (a package by its own name)."""
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str) -> str | None:
    """The module that ``name`` (a module or a name inside one) belongs to."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> dict[str, dict[str, set[str]]]:
    """module -> {imported module -> names imported from it ('*module*' for a module)}."""
    graph: dict[str, dict[str, set[str]]] = {}
    for module, path in modules().items():
        edges: dict[str, set[str]] = {}
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _resolve(alias.name)
                    if target:
                        edges.setdefault(target, set()).add("*module*")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    if submodule in modules():
                        edges.setdefault(submodule, set()).add("*module*")
                    else:
                        target = _resolve(base)
                        if target:
                            edges.setdefault(target, set()).add(alias.name)
        edges.pop(module, None)
        graph[module] = {
            target: names for target, names in edges.items() if target.startswith("llm_council")
        }
    return graph


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def _within(module: str, packages: Iterable[str]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def violations(sources: Iterable[str], forbidden: Iterable[str]) -> list[str]:
    """Every import from a module under ``sources`` into one under ``forbidden``."""
    sources, forbidden = list(sources), list(forbidden)
    return sorted(
        f"{module} imports {target}"
        for module, targets in imports().items()
        if _within(module, sources)
        for target in targets
        if _within(target, forbidden)
    )


def test_the_circle_finder_can_fail() -> None:
    # a -> b -> c -> a is one circle; d only points into it; e imports itself through nothing
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reader_resolves_package_relative_and_submodule_imports() -> None:
    graph = imports()
    # ``from llm_council.infra import tracing`` is an import of the submodule, not of the package
    assert "llm_council.infra.tracing" in graph["llm_council.council"]
    assert "llm_council" not in graph["llm_council.council"]


def test_no_import_circle_anywhere_in_src() -> None:
    assert import_cycles(imports()) == []


def test_the_graph_is_read_at_all() -> None:
    graph = imports()
    assert len(graph) > 150
    assert f"{REPORT}.model" in graph[f"{REPORT}.build"]


def test_the_audit_top_level_is_small_and_shows_the_layers() -> None:
    top = SRC / "llm_council" / "bias_audit"
    top_modules = sorted(path.name for path in top.glob("*.py"))
    assert len(top_modules) <= 12, top_modules
    packages = {path.name for path in top.iterdir() if (path / "__init__.py").exists()}
    assert {"session", "records", "report"} <= packages
    report = top / "report"
    assert {"load", "analyses", "render", "dashboard"} <= {
        path.name for path in report.iterdir() if (path / "__init__.py").exists()
    }


@pytest.mark.parametrize(
    "package",
    [
        f"{AUDIT}.session",
        f"{AUDIT}.records",
        f"{REPORT}.load",
        f"{REPORT}.analyses",
        f"{REPORT}.render",
        f"{REPORT}.dashboard",
    ],
)
def test_each_layer_says_what_it_owns(package: str) -> None:
    docstring = ast.get_docstring(ast.parse(modules()[package].read_text(encoding="utf-8")))
    assert docstring and len(docstring.splitlines()[0]) <= 100


def test_the_core_council_never_imports_the_audit() -> None:
    # the reference design's three modules sit at the top level, where its users import
    # them, but are audit facades (ADR 0039)
    reference_facades = [
        "llm_council.bias_persistence",
        "llm_council.bias_aggregation",
        "llm_council.bias_amplification",
    ]
    allowed = [
        AUDIT,
        "llm_council.cli",
        "llm_council.simulation.simulated_records",
        "llm_council.integrations",  # adapters that install the audit into outside apps
        *reference_facades,
    ]
    found = sorted(
        f"{module} imports {target}"
        for module, targets in imports().items()
        if not _within(module, allowed)
        for target in targets
        if _within(target, [AUDIT])
    )
    assert found == []


def test_records_never_import_the_session_audit_or_the_report() -> None:
    assert violations([f"{AUDIT}.records"], [f"{AUDIT}.session", REPORT]) == []


def test_the_session_audit_never_imports_the_report() -> None:
    assert violations([f"{AUDIT}.session"], [REPORT]) == []


def test_loading_never_imports_analyses_or_renderers() -> None:
    above = [f"{REPORT}.analyses", f"{REPORT}.render", f"{REPORT}.dashboard", f"{REPORT}.build"]
    assert violations([f"{REPORT}.load"], above) == []


def test_analyses_never_import_renderers() -> None:
    renderers = [f"{REPORT}.render", f"{REPORT}.dashboard", f"{REPORT}.number_format"]
    assert violations([f"{REPORT}.analyses"], renderers) == []


def test_renderers_never_run_analyses() -> None:
    renderers = [f"{REPORT}.render", f"{REPORT}.dashboard"]
    # no loading, no statistics, no report building from a renderer
    forbidden = [f"{REPORT}.load", f"{REPORT}.build", "llm_council.stats"]
    assert violations(renderers, forbidden) == []
    # from an analysis module a renderer takes its result types (CamelCase), never a function
    called = sorted(
        f"{module} imports {name} from {target}"
        for module, targets in imports().items()
        if _within(module, renderers)
        for target, names in targets.items()
        if _within(target, [f"{REPORT}.analyses"])
        for name in names
        if not name[:1].isupper()
    )
    assert called == []


def test_the_simulator_never_imports_calibration_or_the_config_loader() -> None:
    assert violations(["llm_council.simulation"], ["llm_council.calibration"]) == []
    assert violations(["llm_council.simulation"], ["llm_council.config"]) == []


MAX_FUNCTION_LINES = 100


def function_lengths(path: Path) -> Iterable[tuple[str, int]]:
    """``(name, lines)`` of every function and method in a file, decorators excluded."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            yield node.name, node.end_lineno - node.lineno + 1


def test_no_function_in_src_is_over_100_lines() -> None:
    """A long function reads as one run of steps; name the steps instead (issue 36)."""
    package = SRC / "llm_council"
    too_long = sorted(
        f"{path.relative_to(package).as_posix()}:{name} ({lines} lines)"
        for path in package.rglob("*.py")
        for name, lines in function_lengths(path)
        if lines > MAX_FUNCTION_LINES
    )
    assert too_long == []


def test_the_function_length_rule_can_fail(tmp_path: Path) -> None:
    """The measure counts a function's own lines (not its decorators) and sees methods."""
    body = "\n".join(f"    x{i} = {i}" for i in range(100))
    source = f"@decorator\ndef long():\n{body}\n\n\nclass C:\n    def short(self):\n        pass\n"
    (tmp_path / "sample.py").write_text(source, encoding="utf-8")
    assert dict(function_lengths(tmp_path / "sample.py")) == {"long": 101, "short": 2}


# --- the core's top level (issue 36 item 1, ADR 0066) ---------------------------------------

REFERENCE = f"{AUDIT}.reference"
#: the reference design's import paths (ADR 0039): shims over bias_audit/reference/
FACADE_SHIMS = ["bias_persistence", "bias_aggregation", "bias_amplification"]
#: documented infrastructure paths kept as plain shims -> the package they re-export from
INFRA_SHIMS = {"tracing": "llm_council.infra"}
#: what sits at src/llm_council/ itself: the core, at a glance; a new module is a deliberate act
TOP_LEVEL_CORE = {
    "__init__", "aggregate", "anonymize", "bias_checks", "call_pricing", "config", "council",
    "debiased_aggregate", "errors", "judge_cues", "judge_fingerprint", "middleware",
    "pairwise_format", "prompts", "ranking_parser", "results", "review_orders",
    "reviewer_fingerprints", "session_context", "session_metadata", "stages", "storable_text",
    "text_similarity",
}  # fmt: skip
TOP_LEVEL_PACKAGES = {
    "bias_audit", "calibration", "cli", "infra", "integrations", "providers", "simulation",
    "stats",
}  # fmt: skip
#: the reference facades' own helpers (split out of them for size): theirs alone
FACADE_HELPERS = [
    "llm_council.integrations.reference_hash_secret",
    "llm_council.integrations.reference_label_maps",
    "llm_council.integrations.reference_aggregation_types",
    "llm_council.integrations.reference_session_shifts",
]
#: the leaf value modules infra/ may use: they import nothing from llm_council themselves
INFRA_MAY_USE = ["llm_council.errors", "llm_council.providers.base"]


def _shim_statements(name: str) -> list[ast.stmt]:
    return ast.parse(modules()[f"llm_council.{name}"].read_text(encoding="utf-8")).body


def shim_defects(name: str, package: str, *, forwards: bool) -> list[str]:
    """What in the shim ``llm_council.<name>`` is more than a shim over ``package``."""
    defects = []
    body = _shim_statements(name)
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
        defects.append("no docstring")
    imported: list[str] = []
    listed: list[str] | None = None
    forwarded = False
    for node in body[1:]:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and _within(node.module or "", [package]):
            imported += [alias.asname or alias.name for alias in node.names]
        elif (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["__all__"]
            and isinstance(node.value, ast.List)
        ):
            listed = [ast.literal_eval(element) for element in node.value.elts]
        elif (
            forwards
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "forward_to_implementation"
        ):
            forwarded = True
        else:
            defects.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
    if listed is None:
        defects.append("no __all__")
    else:
        helpers = {"_implementation", "forward_to_implementation"} if forwards else set()
        if sorted(set(imported) - helpers) != sorted(listed):
            defects.append(f"__all__ {sorted(listed)} is not what it imports {sorted(imported)}")
    if forwards and not forwarded:
        defects.append("does not forward to its implementation")
    return defects


def test_the_shim_checker_can_fail(tmp_path: Path) -> None:
    # a shim that defines a function and lists a name it never imports has two defects
    fake = tmp_path / "fake_shim.py"
    fake.write_text(
        '"""Doc."""\nfrom llm_council.bias_audit.reference.persistence import ConsentLevel\n'
        '__all__ = ["ConsentLevel", "extra"]\ndef helper():\n    return 1\n',
        encoding="utf-8",
    )
    modules()["llm_council.fake_shim"] = fake
    try:
        defects = shim_defects("fake_shim", REFERENCE, forwards=True)
    finally:
        del modules()["llm_council.fake_shim"]
    assert any("def helper" in defect for defect in defects)
    assert any("is not what it imports" in defect for defect in defects)
    assert "does not forward to its implementation" in defects


@pytest.mark.parametrize("name", FACADE_SHIMS)
def test_each_reference_facade_is_a_shim_over_bias_audit_reference(name: str) -> None:
    assert shim_defects(name, REFERENCE, forwards=True) == []
    targets = imports()[f"llm_council.{name}"]
    assert targets and all(_within(target, [REFERENCE]) for target in targets), targets


@pytest.mark.parametrize(("name", "package"), sorted(INFRA_SHIMS.items()))
def test_each_documented_infrastructure_path_is_a_plain_shim(name: str, package: str) -> None:
    assert shim_defects(name, package, forwards=False) == []
    targets = imports()[f"llm_council.{name}"]
    assert targets and all(_within(target, [package]) for target in targets), targets


def _importers(forbidden: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """Every import into ``forbidden`` from a module outside ``allowed``."""
    forbidden, allowed = list(forbidden), list(allowed)
    return sorted(
        f"{module} imports {target}"
        for module, targets in imports().items()
        if not _within(module, allowed)
        for target in targets
        if _within(target, forbidden)
    )


def test_only_the_reference_package_uses_the_facades_helpers_and_nothing_uses_the_shims() -> None:
    shims = [f"llm_council.{name}" for name in FACADE_SHIMS]
    # the shims are for the reference's users; our own code imports the implementation
    assert _importers(shims, allowed=[]) == []
    assert _importers(FACADE_HELPERS, allowed=[REFERENCE, *FACADE_HELPERS]) == []
    # the compatibility layer sits above the audit: the rest of the audit never imports it
    from_the_audit = [
        line for line in _importers([REFERENCE], allowed=[REFERENCE]) if line.startswith(AUDIT)
    ]
    assert from_the_audit == []
    # and the checks can fail: the implementation does use its helpers
    assert _importers(FACADE_HELPERS, allowed=[])


def test_infrastructure_sits_below_the_core_and_the_audit() -> None:
    infra = "llm_council.infra"
    assert _within(f"{infra}.tracing", modules())
    found = sorted(
        f"{module} imports {target}"
        for module, targets in imports().items()
        if _within(module, [infra])
        for target in targets
        if not _within(target, [infra, *INFRA_MAY_USE])
    )
    assert found == []
    # what infra may use is a leaf: it imports nothing from llm_council in turn
    assert {leaf: sorted(imports()[leaf]) for leaf in INFRA_MAY_USE} == {
        leaf: [] for leaf in INFRA_MAY_USE
    }


def test_the_top_level_holds_the_core_and_the_shims_only() -> None:
    top = SRC / "llm_council"
    found_modules = {path.stem for path in top.glob("*.py")}
    assert found_modules == TOP_LEVEL_CORE | set(FACADE_SHIMS) | set(INFRA_SHIMS)
    found_packages = {path.name for path in top.iterdir() if (path / "__init__.py").is_file()}
    assert found_packages == TOP_LEVEL_PACKAGES
    for package in ["llm_council.infra", REFERENCE]:
        docstring = ast.get_docstring(ast.parse(modules()[package].read_text(encoding="utf-8")))
        assert docstring and len(docstring.splitlines()) == 1 and len(docstring) <= 100


# --- statistics by family (issue 36 item 2, ADR 0067) ---

STATS = "llm_council.stats"
#: the stats subpackages, bottom layer first; a module imports stats modules of its own
#: subpackage or of a lower layer only, so families in one layer never import each other
STATS_LAYERS: list[tuple[str, ...]] = [
    ("numerics",),  # special functions and distribution tails
    ("inference", "design"),  # shared tests/pooling/multiplicity; design matrices, least squares
    ("reviewers",),  # reviewer effects and noise (the session tests and winner changes use them)
    ("sessions", "slots", "monitor", "reliability", "ranking", "bias_effects"),  # the families
]
#: flat modules allowed directly in stats/ (none but the package docstring)
STATS_FLAT_EXCEPTIONS = {"__init__"}


def _stats_layer(module: str) -> tuple[str, int] | None:
    """(subpackage, layer) of a stats module, or None for one outside every subpackage."""
    family = module.removeprefix(f"{STATS}.").split(".")[0]
    for layer, families in enumerate(STATS_LAYERS):
        if family in families:
            return family, layer
    return None


def stats_layer_violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Every stats import that points sideways or up the declared layers."""
    found = []
    for module, targets in graph.items():
        own = _stats_layer(module) if module.startswith(f"{STATS}.") else None
        if own is None:
            continue
        family, layer = own
        for target in targets:
            if not target.startswith(f"{STATS}."):
                continue
            placed = _stats_layer(target)
            if placed is None:
                found.append(f"{module} imports {target}, which is in no declared subpackage")
            elif placed[0] != family and placed[1] >= layer:
                found.append(f"{module} imports {target} (layer {placed[1]} >= {layer})")
    return sorted(found)


def test_the_stats_layer_rule_can_fail() -> None:
    graph = {
        f"{STATS}.numerics.a": {f"{STATS}.design.b"},  # up
        f"{STATS}.slots.c": {f"{STATS}.ranking.d", f"{STATS}.design.b"},  # sideways; down is fine
        f"{STATS}.ranking.d": {f"{STATS}.ranking.e", f"{STATS}.flat"},  # own family; undeclared
    }
    assert stats_layer_violations(graph) == [
        f"{STATS}.numerics.a imports {STATS}.design.b (layer 1 >= 0)",
        f"{STATS}.ranking.d imports {STATS}.flat, which is in no declared subpackage",
        f"{STATS}.slots.c imports {STATS}.ranking.d (layer 3 >= 3)",
    ]


def test_stats_subpackages_import_only_their_own_or_lower_layers() -> None:
    stats_modules = [module for module in imports() if module.startswith(f"{STATS}.")]
    assert len(stats_modules) > 50  # the rule reads the real tree
    assert stats_layer_violations(imports()) == []


def test_stats_has_no_flat_module_and_every_subpackage_is_declared() -> None:
    stats = SRC / "llm_council" / "stats"
    flat = {path.stem for path in stats.glob("*.py")} - STATS_FLAT_EXCEPTIONS
    assert flat == set()
    on_disk = {path.name for path in stats.iterdir() if (path / "__init__.py").exists()}
    declared = {family for families in STATS_LAYERS for family in families}
    assert on_disk == declared


@pytest.mark.parametrize("family", [f for families in STATS_LAYERS for f in families])
def test_each_stats_family_says_what_it_holds(family: str) -> None:
    source = modules()[f"{STATS}.{family}"].read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source))
    assert docstring and len(docstring.splitlines()[0]) <= 100


# --- Tests mirror the source (ADR 0068, issue 36 item 5) -------------------------------

TESTS = Path(__file__).resolve().parent

# Folders under tests/ whose test files do not test one source package.
NON_MIRROR_TEST_FOLDERS = {
    "fakes": "loopback vendor APIs, servers and clocks shared by every folder",
    "generators": "data generators independent of llm_council.simulation, and their tests",
    "data": "fixtures and the scripts that build them",
    "reference_suite": "the reference council's own tests, dropped in by a developer (ADR 0039)",
    "local_model": "the real local model end to end (the `local` extra, ADR 0041)",
    "reliability": "the threat model's suite across every package (ADR 0014)",
}

# Test files at tests/ itself: the project as a whole, or one top-level core module.
ROOT_TEST_FILES = frozenset(
    {
        "test_adjustments_hook.py",
        "test_aggregate.py",
        "test_anonymize.py",
        "test_bias_checks.py",
        "test_blas_kernels.py",
        "test_call_pricing.py",
        "test_check_scheduling.py",
        "test_config.py",
        "test_config_hash.py",
        "test_config_retry_and_size.py",
        "test_council.py",
        "test_debiased_aggregate.py",
        "test_docs_numbers.py",
        "test_import_cost.py",
        "test_layout.py",
        "test_public_paths.py",
        "test_ranking_parser.py",
        "test_ranking_parser_refusals.py",
        "test_readme_quickstart.py",
        "test_review_orders.py",
        "test_session_context.py",
        "test_source_text.py",
        "test_stages.py",
        "test_storable_text.py",
        "test_text_similarity.py",
    }
)


def _is_test_file(name: str) -> bool:
    """pytest's default ``python_files``: ``test_*.py`` and ``*_test.py``."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _source_packages() -> frozenset[str]:
    """Every package under src/ by dotted name."""
    found = {name for name, path in modules().items() if path.name == "__init__.py"}
    return frozenset(found)


def _imported_source_modules(path: Path) -> frozenset[str]:
    """The llm_council modules a test file imports, anywhere in it, resolved against src/."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {target for name in names if (target := _resolve(name)) is not None}
    return frozenset(name for name in found if name.split(".")[0] == "llm_council")


def _deepest_common_package(
    package: str, imported: Iterable[str], packages: frozenset[str]
) -> str | None:
    """The deepest package strictly below ``package`` that holds every module the file
    imports from inside ``package``; None when there is none (the file tests ``package``
    itself, or several of its subpackages, or nothing in it)."""
    homes = [
        (name if name in packages else name.rpartition(".")[0]).split(".")
        for name in imported
        if name == package or name.startswith(package + ".")
    ]
    if not homes:
        return None
    common = homes[0]
    for home in homes[1:]:
        length = 0
        while length < min(len(common), len(home)) and common[length] == home[length]:
            length += 1
        common = common[:length]
    deepest = ".".join(common)
    return deepest if deepest != package and deepest in packages else None


def _test_folder(package: str) -> str:
    return "tests/" + "/".join(package.split(".")[1:]) + "/"


_ROOT_HINT = (
    "put it in the folder of the package it tests, or list it in ROOT_TEST_FILES if it tests"
    " the whole project or a top-level module (src/llm_council/*.py)"
)
_FOLDER_HINT = (
    "move it to the folder of the package it tests, or declare the folder in"
    " NON_MIRROR_TEST_FOLDERS with the reason"
)


def misplaced_test_files(
    test_files: Mapping[str, Iterable[str]], packages: frozenset[str]
) -> list[str]:
    """One line per test file not where ADR 0068 puts it: the file, why, and where it goes.

    ``test_files`` maps a path relative to tests/ to the llm_council modules it imports;
    a folder tests/X/Y/ mirrors the package llm_council.X.Y.
    """
    problems = []
    for relative, imported in sorted(test_files.items()):
        folder, _, name = relative.rpartition("/")
        if folder.split("/")[0] in NON_MIRROR_TEST_FOLDERS:
            continue
        home = _deepest_common_package("llm_council", imported, packages)
        goes = f"it imports only from {home}, so it goes in {_test_folder(home)}" if home else ""
        if not folder:
            if name not in ROOT_TEST_FILES:
                hint = goes or _ROOT_HINT
                problems.append(f"tests/{relative}: a new test file at the top of tests/; {hint}")
            continue
        package = "llm_council." + folder.replace("/", ".")
        if package not in packages:
            hint = goes or _FOLDER_HINT
            problems.append(
                f"tests/{relative}: tests/{folder}/ mirrors no source package"
                f" (no src/llm_council/{folder}/); {hint}"
            )
            continue
        deeper = _deepest_common_package(package, imported, packages)
        if deeper:
            problems.append(
                f"tests/{relative}: it imports only from {deeper}, so it goes in"
                f" {_test_folder(deeper)}"
            )
    return problems


def _test_files_on_disk() -> dict[str, frozenset[str]]:
    """Test files under tests/ and what they import; declared folders are not read (a
    developer's copy of the reference suite is none of ours)."""
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        parts = path.relative_to(TESTS).parts
        if not _is_test_file(path.name) or any(part.startswith((".", "__")) for part in parts):
            continue
        if len(parts) > 1 and parts[0] in NON_MIRROR_TEST_FOLDERS:
            found["/".join(parts)] = frozenset()
            continue
        found["/".join(parts)] = _imported_source_modules(path)
    return found


def test_every_test_file_sits_where_its_source_is() -> None:
    problems = misplaced_test_files(_test_files_on_disk(), _source_packages())
    assert not problems, "test files outside their mirror folder (ADR 0068):\n" + "\n".join(
        problems
    )


def test_the_mirror_rule_can_fail_and_says_where_a_file_goes() -> None:
    packages = frozenset(
        {"llm_council", "llm_council.bias_audit", "llm_council.bias_audit.records"}
    )
    records = {"llm_council.bias_audit.records.jsonl_store", "llm_council.bias_audit.records"}
    problems = misplaced_test_files(
        {
            "test_store_again.py": records,  # at the root, undeclared
            "test_whole_thing.py": {"llm_council.config", "llm_council.council"},
            # one level too high (an import from outside bias_audit does not change that)
            "bias_audit/test_store_again.py": {*records, "llm_council.errors"},
            "bias_audit/test_middleware_again.py": {"llm_council.bias_audit.middleware"},
            "store/test_store_again.py": records,  # a folder with no package
            "bias_audit/records/test_store.py": records,  # in place
            "generators/test_rank_council.py": set(),  # a declared exception
            "test_council.py": {"llm_council.council"},  # a declared root file
        },
        packages,
    )
    assert problems == [
        "tests/bias_audit/test_store_again.py: it imports only from"
        " llm_council.bias_audit.records, so it goes in tests/bias_audit/records/",
        "tests/store/test_store_again.py: tests/store/ mirrors no source package"
        " (no src/llm_council/store/); it imports only from llm_council.bias_audit.records,"
        " so it goes in tests/bias_audit/records/",
        "tests/test_store_again.py: a new test file at the top of tests/; it imports only from"
        " llm_council.bias_audit.records, so it goes in tests/bias_audit/records/",
        "tests/test_whole_thing.py: a new test file at the top of tests/; put it in the folder"
        " of the package it tests, or list it in ROOT_TEST_FILES if it tests the whole"
        " project or a top-level module (src/llm_council/*.py)",
    ]


def test_the_declared_exceptions_exist() -> None:
    assert sorted(ROOT_TEST_FILES - {path.name for path in TESTS.glob("test_*.py")}) == []
    assert sorted(name for name in NON_MIRROR_TEST_FOLDERS if not (TESTS / name).is_dir()) == []
    mirrored = sorted(
        name for name in NON_MIRROR_TEST_FOLDERS if (SRC / "llm_council" / name).is_dir()
    )
    assert mirrored == [], f"{mirrored} now mirror a source package: drop the exception"
