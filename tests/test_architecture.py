"""The layout of generator/ is its architecture: each subsystem imports only the ones
below it, every module says what it is for, and the architecture page of the docs
(docs/architecture.md) describes every package and module."""
from __future__ import annotations

import ast
import io
import re
import tokenize
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "generator"
LEAVES = {"errors", "system"}  # shared by every subsystem; they import nothing of the project
# What each part of generator/ may import (besides itself): catalogue → api → sitebuild, hosts,
# writes, which never import each other; a composer and the CLI on top.
ALLOWED = {
    "errors": set(),
    "system": set(),
    "catalogue": LEAVES,
    "api": LEAVES | {"catalogue"},
    "sitebuild": LEAVES | {"catalogue", "api"},
    "hosts": LEAVES | {"catalogue", "api"},
    "writes": LEAVES | {"catalogue", "api"},
    "importer": LEAVES | {"catalogue", "api"},
    "compose": LEAVES | {"catalogue", "api", "sitebuild", "hosts"},
    "cli": LEAVES | {"catalogue", "api", "sitebuild", "hosts", "writes", "importer", "compose"},
    "__main__": {"cli"},
}
SUBPACKAGES = ("catalogue", "api", "sitebuild", "hosts", "writes", "importer")


def modules(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def dotted(path: Path, package: Path) -> str:
    parts = ["generator", *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, package: Path) -> set[str]:
    """The modules of the project that a module imports, as dotted names."""
    name = dotted(path, package)
    # A package's relative imports start from itself, a module's from its package.
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "generator")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "generator":
                continue
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)  # (`from . import x`)
    return found


def unit(name: str) -> str | None:
    """The part of generator/ a dotted name belongs to (None for the package itself)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def violations(package: Path) -> list[str]:
    found = []
    for path in modules(package):
        name = dotted(path, package)
        mine = unit(name)
        for target in sorted(imported(path, package)):
            theirs = unit(target)
            if theirs is None or theirs == mine or theirs not in ALLOWED:
                continue  # (a name imported from the package itself; every part has a rule, tested above)
            if theirs not in ALLOWED.get(mine, set()):
                found.append(f"{name} imports {target}: {mine} may import only {sorted(ALLOWED.get(mine, ()))}")
    return found


def test_every_part_of_the_package_has_its_rule():
    parts = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert parts - {"__init__"} == set(ALLOWED)  # (__init__ is the package's map: it imports nothing, below)


def test_the_package_opens_with_its_map():
    """generator/__init__.py names every part of the package and imports none of them (a
    process that runs one module, as the background deleter does, imports the package first)."""
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = ast.get_docstring(tree).splitlines()
    for part in set(ALLOWED) - {"__main__"}:
        assert any(re.match(rf"\s+(?:\w+, )*{part}\b", line) for line in lines), f"the map has no line for {part}"


def test_subsystems_import_only_downward():
    assert violations(PACKAGE) == []


def test_a_forbidden_import_is_caught(tmp_path: Path):
    copy = tmp_path / "generator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "sitebuild" / "sneaky.py").write_text('"""x"""\nfrom ..hosts.nginx import write_configs\n')
    (copy / "catalogue" / "sneaky.py").write_text('"""x"""\nfrom generator.api import urls\n')
    (copy / "api" / "sneaky.py").write_text('"""x"""\nfrom .. import compose\n')
    assert sorted(violations(copy)) == sorted([
        "generator.api.sneaky imports generator.compose: api may import only ['catalogue', 'errors', 'system']",
        "generator.sitebuild.sneaky imports generator.hosts.nginx: sitebuild may import only "
        "['api', 'catalogue', 'errors', 'system']",
        "generator.sitebuild.sneaky imports generator.hosts.nginx.write_configs: sitebuild may import only "
        "['api', 'catalogue', 'errors', 'system']",
        "generator.catalogue.sneaky imports generator.api: catalogue may import only ['errors', 'system']",
        "generator.catalogue.sneaky imports generator.api.urls: catalogue may import only ['errors', 'system']",
    ])


@pytest.mark.parametrize("path", modules(PACKAGE), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_opens_with_its_job(path: Path):
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring and len(docstring) > 20, f"{path.relative_to(ROOT)} has no docstring saying what it is for"


def test_the_architecture_page_names_every_subsystem():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    for name in SUBPACKAGES:
        assert f"`{name}`" in section, name
        for module in sorted((PACKAGE / name).glob("*.py")):
            if module.stem != "__init__":
                assert f"`{module.stem}`" in section, f"{name}/{module.name}"


# ---- collections are declared once ----------------------------------------------------------
# A collection's names (data file stem, URL segment, model name) are written in its
# declaration (catalogue/resources.py) and in the hand-made rows of the synthetic catalogue,
# nowhere else in generator/: everything else iterates the declarations, so that a new
# collection is a declaration, not a hunt through the code.
NAMING_COLLECTIONS = {"catalogue/resources.py", "catalogue/synth.py"}
MOST_NAMING = 4  # (the bound the architecture sets: a few modules at most, and none that branches on a name)


def collection_names() -> set[str]:
    from generator.catalogue.resources import RESOURCES
    return {name for r in RESOURCES for name in (r.collection, r.name, r.label)}


def naming_collections(package: Path) -> dict[str, int]:
    """Each module of the package that writes a collection's name as a string, and how often."""
    names = collection_names()
    found = {}
    for path in modules(package):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        count = sum(1 for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names)
        if count:
            found[path.relative_to(package).as_posix()] = count
    return found


def test_only_the_declarations_name_collections():
    assert len(NAMING_COLLECTIONS) <= MOST_NAMING
    found = naming_collections(PACKAGE)
    assert set(found) <= NAMING_COLLECTIONS, f"collections named outside their declarations: {found}"


def test_a_collection_named_elsewhere_is_caught(tmp_path: Path):
    copy = tmp_path / "generator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "api" / "sneaky.py").write_text('"""x"""\ndef f(c):\n    return c == "bookshelves" or c == "Book"\n')
    assert set(naming_collections(copy)) - NAMING_COLLECTIONS == {"api/sneaky.py"}
    assert naming_collections(copy)["api/sneaky.py"] == 2


# ---- docstrings and comments name files that exist --------------------------------------------
# A path written in generator/'s docstrings and comments (`api/urls.py`, `templates/pages.js.j2`,
# `hosts/templates/router.js.j2`, `generator/...`, `tests/...`, `schemas/...`, or a module's file
# alone, `contract.py`) names a file of the project, found from the folder of the file that
# names it or one of the folders above it, or `module.name`: a module and something it defines.
# A dotted name of the package (`generator.api.routes`, `api.routes.resolve`, `compose.build`)
# names a module of generator/ and, after it, names that module defines. Paths with
# placeholders (`<site>/...`, `OUT/...`, `PREFIX/...`, `{name}`) and the built site's own
# (`api/v1/...`, `_meta/...`, a host's `edge-functions/...`, files with no folder but a
# module's) are what a build writes, not the project's files: not checked.
SOURCE_FILE = re.compile(r"\.(py|j2|mjs|js|html|json|yaml|toml|md|txt|cfg)$")
REFERENCE = re.compile(r"(?<![\w/.<>${}*-])((?:[A-Za-z_][\w-]*/)+[\w.-]+)")
SITE_PATHS = ("api/v1/", "_meta/", "edge-functions/")  # (paths in a built site, not in the project)
PLACEHOLDER = re.compile(r"^[A-Z]+/")  # (OUT/, PREFIX/: a folder the user names)
MODULE_FILE = re.compile(r"(?<![\w/.<>${}*-])([A-Za-z_]\w*\.py)(?![\w/])")  # (a module's file alone)
DOTTED = re.compile(r"(?<![\w/.<>${}*-])((?:generator\.)?(?:%s)(?:\.[A-Za-z_]\w*)+)(?![\w-]|\.\w)"
                    % "|".join(sorted(set(ALLOWED) - {"__main__"})))
FILE_ENDINGS = {"py", "j2", "mjs", "js", "html", "json", "yaml", "toml", "md", "txt", "cfg", "conf", "zip"}


def commentary(path: Path) -> list[tuple[int, str]]:
    """(line, text) of what a file says to its readers: a Python module's docstrings and
    comments; every line of a template, a page or a JavaScript module (whose comments a
    tokenizer of its own would be needed to pick out)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    found = [(token.start[0], token.string) for token in tokenize.generate_tokens(io.StringIO(text).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
    return sorted(found)


def defines(module: Path, name: str) -> bool:
    """Whether a Python module defines the name at its top level (or as a class's member)."""
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in node.names):
            return True
    return False


def looked_up(reference: str, named_in: Path, root: Path) -> Path | None:
    """The file a reference names, from the folder of the file that names it or one above
    (up to the project's root): a file itself, or for `module.name` the module."""
    module = reference.rpartition(".")[0]
    for folder in [named_in.parent, *named_in.parent.parents]:
        if folder != root and root not in folder.parents:
            break
        if (folder / reference).is_file():
            return folder / reference
        if module and (folder / f"{module}.py").is_file():
            return folder / f"{module}.py"
    return None


def wrong_references(package: Path, root: Path) -> list[str]:
    found = []
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        for line, text in commentary(path):
            for match in REFERENCE.finditer(text):
                reference = match.group(1).rstrip(".")
                if reference.startswith(SITE_PATHS) or PLACEHOLDER.match(reference):
                    continue
                target = looked_up(reference, path, root)
                if target is None and not SOURCE_FILE.search(reference):
                    continue  # (a folder, a media type, a URL path: nothing to look up)
                if target is None or (target.name != Path(reference).name
                                      and not defines(target, reference.rpartition(".")[2])):
                    found.append(f"{path.relative_to(root)}:{line}: {reference}")
            for match in MODULE_FILE.finditer(text):
                if looked_up(match.group(1), path, root) is None:
                    found.append(f"{path.relative_to(root)}:{line}: {match.group(1)}")
            for match in DOTTED.finditer(text):
                reference = match.group(1).rstrip(".")
                if reference.rpartition(".")[2] not in FILE_ENDINGS and not module_defines(reference, package):
                    found.append(f"{path.relative_to(root)}:{line}: {reference}")
    return found


def module_defines(reference: str, package: Path) -> bool:
    """Whether a dotted name (`generator.api.routes`, `api.routes.resolve`) is a module of
    the package followed by names that module defines."""
    parts = reference.removeprefix("generator.").split(".")
    for end in range(len(parts), 0, -1):
        folder = package.joinpath(*parts[:end])
        module = folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")
        if module.is_file():
            return all(defines(module, name) for name in parts[end:])
    return False


def test_docstrings_and_comments_name_files_that_exist():
    assert wrong_references(PACKAGE, ROOT) == []


def test_a_wrong_reference_is_caught(tmp_path: Path):
    copy = tmp_path / "generator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "api" / "sneaky.py").write_text(
        '"""Routes from api/routes.py, not api/nowhere.py; see templates/pages.js.j2."""\n'
        "# hosts/templates/pages.js.j2 is right, api/pages.nothing_here is not\n"
        "# urls.py is here, contract.py is not; generator.api.routes.resolve is, api.rutes is not,\n"
        "# and api.routes.resolved is not either; hosts/nginx/catalogue.conf and catalogue.conf are a site's\n")
    assert [wrong for wrong in wrong_references(copy, tmp_path) if "sneaky" in wrong] == [
        "generator/api/sneaky.py:1: api/nowhere.py",
        "generator/api/sneaky.py:1: templates/pages.js.j2",
        "generator/api/sneaky.py:2: api/pages.nothing_here",
        "generator/api/sneaky.py:3: contract.py",
        "generator/api/sneaky.py:3: api.rutes",
        "generator/api/sneaky.py:4: api.routes.resolved",
    ]


# ---- query backends are units ----------------------------------------------------------------
# Each query backend lives in api/backends/ (the registry, __init__.py, lists them): a module
# with its JavaScript twin beside it, and the index files it writes and reads named only there
# (`*_file` functions). Everything else iterates the registry: it imports `api.backends` or its
# shared `common`, never a backend's own module, and subclasses no Backend.
BACKENDS_DIR = PACKAGE / "api" / "backends"
SHARED = {"__init__", "common"}  # (the registry and what every backend uses)


def backend_modules(package: Path) -> list[Path]:
    return sorted(p for p in (package / "api" / "backends").glob("*.py") if p.stem not in SHARED)


def twinless(package: Path) -> list[str]:
    """The modules of api/backends/ without a JavaScript twin beside them, and twins without a module."""
    folder = package / "api" / "backends"
    twins = {p.name.split(".")[0] for p in folder.iterdir() if p.name.endswith((".js", ".js.j2"))}
    stems = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    return sorted([f"{stem}.py has no twin" for stem in stems - twins] + [f"{twin}.js has no module" for twin in twins - stems])


def backends_named_by_hand(package: Path) -> list[str]:
    """Modules outside api/backends/ that import a backend's own module, or define a backend."""
    folder = package / "api" / "backends"
    own = {f"generator.api.backends.{p.stem}" for p in backend_modules(package)}
    found = []
    for path in modules(package):
        if folder in path.parents:
            continue
        name = dotted(path, package)
        for target in sorted(imported(path, package)):
            if any(target == module or target.startswith(module + ".") for module in own):
                found.append(f"{name} imports {target}: iterate api.backends.BACKENDS instead")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Backend"
                                                      for b in node.bases):
                found.append(f"{name} defines the backend {node.name}: backends live in api/backends/")
    return found


def index_files_elsewhere(package: Path) -> list[str]:
    """Uses of a backend's index file names (its `*_file` functions) outside its own module:
    a format's writer and reader live together."""
    folder = package / "api" / "backends"
    owners = {}
    for path in backend_modules(package):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_file"):
                owners[node.name] = path
    found = []
    for path in modules(package):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            used = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if used in owners and owners[used] != path and (folder in path.parents or used != "page_file"):
                found.append(f"{path.relative_to(package)} uses {used} of {owners[used].name}")
    return sorted(set(found))


def test_every_backend_module_has_its_javascript_twin_beside_it():
    assert backend_modules(PACKAGE) and twinless(PACKAGE) == []


def test_backends_live_in_the_registry_and_nothing_names_one_by_hand():
    from generator.api.backends import BACKENDS
    assert backends_named_by_hand(PACKAGE) == []
    assert {type(b).__module__ for b in BACKENDS} <= {f"generator.api.backends.{p.stem}" for p in backend_modules(PACKAGE)}
    assert len({b.name for b in BACKENDS}) == len(BACKENDS)
    assert all((BACKENDS_DIR / f"{b.name}.py").is_file() for b in BACKENDS)  # (its twin: <name>.js.j2)


def test_index_files_are_written_and_read_by_their_backend_alone():
    assert index_files_elsewhere(PACKAGE) == []


def test_a_backend_out_of_place_is_caught(tmp_path: Path):
    copy = tmp_path / "generator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "api" / "backends" / "sneaky_backend.py").write_text('"""x"""\n')
    (copy / "api" / "backends" / "ordering.js.j2").unlink()
    (copy / "hosts" / "sneaky.py").write_text(
        '"""x"""\nfrom ..api.backends.search import Search\nfrom ..api.backends import common\n'
        "from ..api.backends.ordering import rank_file\n\n\nclass Mine(common.Backend):\n"
        "    def f(self):\n        return rank_file('books', 'title', 0)\n")
    assert twinless(copy) == ["ordering.py has no twin", "sneaky_backend.py has no twin"]
    assert backends_named_by_hand(copy) == [
        "generator.hosts.sneaky imports generator.api.backends.ordering: iterate api.backends.BACKENDS instead",
        "generator.hosts.sneaky imports generator.api.backends.ordering.rank_file: iterate api.backends.BACKENDS instead",
        "generator.hosts.sneaky imports generator.api.backends.search: iterate api.backends.BACKENDS instead",
        "generator.hosts.sneaky imports generator.api.backends.search.Search: iterate api.backends.BACKENDS instead",
        "generator.hosts.sneaky defines the backend Mine: backends live in api/backends/"]
    assert index_files_elsewhere(copy) == ["hosts/sneaky.py uses rank_file of ordering.py"]
