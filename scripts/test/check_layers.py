#!/usr/bin/env python3
"""Checks that the modules of crates/core/src import one way: down the layers, never in a circle;
that the workspace's crates depend one way (CRATE_LAYERS); and that no files of a crate
(FILE_CYCLE_CRATES) import each other in a circle.

Reads every `use crate::…`, `use super::…` and `use self::…` statement and every path
written in the code (`crate::key::page_key(…)`) of crates/core/src, outside comments,
strings and `#[cfg(test)]` items (tests may reach anywhere), and turns them into arrows
between files: file A -> file B when A names something that B defines. A `pub use` in a
`mod.rs` is followed to the file that defines the name, so a module's re-exports are no
arrows of their own.

Then it fails, saying which file imports what and why that is wrong, on
  - an upward import: A -> B where B sits in a higher layer than A (LAYERS below);
  - an import cycle between modules (a circle of arrows, even inside one layer): each
    file is a module, except that trace/, device/ and sim/ count as one each (ONE_UNIT);
  - a file that no layer claims (add it to LAYERS).

Usage: scripts/test/check_layers.py [--graph]   (--graph prints the module-level arrows)

Checked by hand that it fails (exit 1): adding `use crate::sim::Simulator;` to
crates/core/src/trace/info.rs gives "upward import: trace/info.rs (layer 1 trace) ->
sim/mod.rs (layer 6 sim) [sim::Simulator]"; adding `use crate::policy::registry::POLICIES;`
to policy/classic/lru.rs gives that upward import and "import cycle between 2 modules:
policy/classic/lru.rs, policy/registry.rs" with the names that tie them.
"""

import re
import sys
from collections import defaultdict
from fnmatch import fnmatch
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "crates" / "core" / "src"

# Bottom (0) to top. A file may import files of its own layer or of lower ones; the
# first pattern a file matches gives its layer (paths relative to crates/core/src).
LAYERS = [
    (0, "vocabulary", ["lib.rs", "excerpt.rs", "units.rs", "key.rs", "spec.rs", "list.rs", "heap.rs"]),
    (1, "trace", ["trace/*"]),
    (1, "device", ["device/*"]),
    (2, "metrics", ["metrics.rs"]),
    (2, "policy interface", ["policy/mod.rs"]),
    (3, "policy building blocks", ["policy/mode.rs", "policy/sketch.rs", "policy/flash/block.rs",
                                   "policy/flash/page_lists.rs", "policy/*/mod.rs"]),
    (4, "policies", ["policy/classic/*", "policy/flash/*", "policy/tiered/*", "policy/admission/*",
                    "policy/sized/*"]),
    (5, "policy registry", ["policy/registry.rs"]),
    (6, "sim", ["sim/*"]),
    (7, "analysis", ["mrc/*"]),
    (8, "trace analyzer", ["analyze/*"]),
]


# The units whose import cycles are refused: a folder named here counts as one unit
# (its inside is its own business: a `mod.rs` and its children often use each other),
# every other file is a unit of its own.
ONE_UNIT = ["trace/", "device/", "sim/", "mrc/", "analyze/"]


def unit_of(rel):
    return next((f for f in ONE_UNIT if rel.startswith(f)), rel)


def layer_of(rel):
    for num, name, pats in LAYERS:
        if any(fnmatch(rel, p) for p in pats):
            return num, name
    return None


def strip_comments_and_strings(text):
    """Blanks out comments, string and char literals (keeping newlines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x..|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(text, i):
    """End of the item starting at i: after its `;` or its balanced `{…}` block."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return i


def strip_test_items(text):
    """Removes `#[cfg(test)]` items; returns (text, names of test-only child modules)."""
    test_mods, out, i = [], [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        rest = text[m.end():]
        dm = re.match(r"\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;", rest)
        if dm:
            test_mods.append(dm.group(1))
        i = item_end(text, m.end())
    out.append(text[i:])
    return "".join(out), test_mods


def expand_use_tree(tree):
    """`a::{b, c::{self, d as e}}` -> [["a","b"], ["a","c"], ["a","c","d"]]."""
    tree = re.sub(r"\s+", "", tree)

    def parse(s, prefix):
        paths, depth, start, parts = [], 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for p in filter(None, parts):
            brace = p.find("{")
            if brace >= 0:
                head = [x for x in p[:brace].split("::") if x]
                paths += parse(p[brace + 1:p.rindex("}")], prefix + head)
            else:
                seg = [x for x in p.split("::") if x]
                if seg and seg[-1] in ("self", "*"):
                    seg = seg[:-1]
                paths.append(prefix + seg)
        return paths

    return parse(tree, [])


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path (tuple) -> rel path
        self.test_only = set()
        self.text = {}
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src).as_posix()
            parts = rel[:-3].split("/")
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            self.files[tuple(parts)] = rel
        for mod, rel in self.files.items():
            raw = strip_comments_and_strings((src / rel).read_text())
            text, tests = strip_test_items(raw)
            self.text[rel] = text
            for t in tests:
                child = self.files.get(mod + (t,))
                if child:
                    self.test_only.add(child)
        # a test-only module's children are test-only too
        for mod, rel in self.files.items():
            for k in range(1, len(mod)):
                if self.files.get(mod[:k]) in self.test_only:
                    self.test_only.add(rel)
        self.mod_of = {rel: mod for mod, rel in self.files.items()}
        self.reexports = {rel: self.parse_reexports(rel) for rel in self.files.values()}

    def uses(self, rel):
        """(path segments, is_pub) of every use statement."""
        out = []
        for m in re.finditer(r"(?m)^\s*(pub(?:\([\w:\s]+\))?\s+)?use\s+([^;]+);", self.text[rel]):
            for seg in expand_use_tree(re.sub(r"\b(\w+)\s+as\s+\w+", r"\1", m.group(2))):
                out.append((seg, bool(m.group(1))))
        return out

    def parse_reexports(self, rel):
        table = {}
        for m in re.finditer(r"(?m)^\s*pub(?:\([\w:\s]+\))?\s+use\s+([^;]+);", self.text[rel]):
            tree = m.group(1)
            for seg in expand_use_tree(re.sub(r"\b(\w+)\s+as\s+\w+", r"\1", tree)):
                table[seg[-1]] = seg
            for a, b in re.findall(r"\b(\w+)\s+as\s+(\w+)", tree):
                for seg in expand_use_tree(re.sub(r"\b(\w+)\s+as\s+\w+", r"\1", tree)):
                    if seg[-1] == a:
                        table[b] = seg
        return table

    def absolute(self, rel, seg):
        """A path as written in `rel` -> absolute module path segments, or None (external)."""
        here = list(self.mod_of[rel])
        if seg[0] == "crate":
            return seg[1:]
        if seg[0] in ("super", "self"):
            base = here  # the module this file is
            i = 0
            while i < len(seg) and seg[i] in ("super", "self"):
                if seg[i] == "super":
                    base = base[:-1]
                i += 1
            return base + seg[i:]
        # a path relative to this module (e.g. `use formats::Format` in a mod.rs)
        if tuple(here + [seg[0]]) in self.files:
            return here + seg
        return None

    def resolve(self, path, depth=0):
        """Absolute segments -> (file that defines it, the name)."""
        k = len(path)
        while k > 0 and tuple(path[:k]) not in self.files:
            k -= 1
        rel = self.files[tuple(path[:k])]
        rest = path[k:]
        if rest and depth < 10 and rest[0] in self.reexports[rel]:
            target = self.absolute(rel, self.reexports[rel][rest[0]])
            if target is not None:
                return self.resolve(target + rest[1:], depth + 1)
        return rel, "::".join(path)

    def arrows(self):
        """{(a, b): set of names} over non-test files."""
        arrows = defaultdict(set)
        for rel in self.files.values():
            if rel in self.test_only:
                continue
            paths = [seg for seg, is_pub in self.uses(rel) if not (is_pub and self.is_own_reexport(rel, seg))]
            body = re.sub(r"(?m)^\s*(pub(?:\([\w:\s]+\))?\s+)?use\s+[^;]+;", "", self.text[rel])
            for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", body):
                paths.append(m.group(0).split("::"))
            # paths through a module brought into scope (`use super::classic;` … `classic::lru::INFO`)
            # or through a child module (`desktop::Desktop` in gen/mod.rs)
            here = list(self.mod_of[rel])
            scope = {}
            for seg, _ in self.uses(rel):
                ab = self.absolute(rel, seg)
                if ab and tuple(ab) in self.files:
                    scope[seg[-1] if seg[-1] not in ("super", "self") else ab[-1]] = ab
            for mod in self.files:
                if len(mod) == len(here) + 1 and list(mod[:-1]) == here:
                    scope.setdefault(mod[-1], list(mod))
            for m in re.finditer(r"(?<![\w:])(\w+)((?:::\w+)+)", body):
                if m.group(1) in scope and m.group(1) not in ("crate", "super", "self"):
                    paths.append(["crate"] + scope[m.group(1)] + m.group(2).split("::")[1:])
            for seg in paths:
                ab = self.absolute(rel, seg)
                if ab is None or not ab:
                    continue
                target, name = self.resolve(ab)
                if target != rel and target not in self.test_only:
                    arrows[(rel, target)].add(name)
        return arrows

    def is_own_reexport(self, rel, seg):
        """A `pub use` of a module's own child: a face, not an arrow."""
        ab = self.absolute(rel, seg)
        mod = list(self.mod_of[rel])
        return ab is not None and ab[:len(mod)] == mod and len(ab) > len(mod)


def cycles(nodes, arrows):
    graph = defaultdict(list)
    for a, b in arrows:
        graph[a].append(b)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def module_name(rel):
    """The module a file belongs to, for the summary graph."""
    parts = rel[:-3].split("/")
    if parts[0] in ("trace", "device", "sim"):
        return parts[0]
    if parts[0] == "policy":
        if rel == "policy/mod.rs":
            return "policy (interface)"
        if rel == "policy/registry.rs":
            return "policy::registry"
        if len(parts) == 2:
            return "policy::" + parts[1]
        return "policy::" + parts[1] + ("::" + parts[2] if rel.endswith(("block.rs", "page_lists.rs")) else "")
    return parts[0]


# The workspace's crates, bottom (0) to top: a crate may depend only on crates of lower
# layers (its [dependencies] in Cargo.toml; dev-dependencies are the tests' business).
CRATE_LAYERS = {
    "core": 0, "block": 0,
    "nbd": 1, "engine": 1,
    "server": 2,
    "daemon": 3,
    "cli": 4, "py": 4,
}
# The crates whose files are checked for import cycles one by one (core's layers above
# count some folders as one unit; here every file is one).
FILE_CYCLE_CRATES = ["core", "block", "nbd", "server", "engine", "daemon", "cli", "py"]


def crate_deps(name):
    """The workspace crates `crates/NAME/Cargo.toml` depends on (normal dependencies)."""
    toml = (SRC.parent.parent / name / "Cargo.toml").read_text()
    section = re.search(r"(?ms)^\[dependencies\]\n(.*?)(?=^\[|\Z)", toml)
    deps = []
    for line in (section.group(1) if section else "").splitlines():
        m = re.match(r"(ssdcache(?:-\w+)?)\s*(?:\.workspace|=)", line)
        if m:
            deps.append("core" if m.group(1) == "ssdcache" else m.group(1)[len("ssdcache-"):])
    return deps


def check_crates():
    """Crate dependencies that point up, and file import cycles inside the serve crates."""
    errors = []
    root = SRC.parent.parent
    for d in sorted(p.name for p in root.iterdir() if (p / "Cargo.toml").exists()):
        if d not in CRATE_LAYERS:
            errors.append(f"unassigned crate: crates/{d} is in no layer (add it to CRATE_LAYERS)")
            continue
        for dep in crate_deps(d):
            if CRATE_LAYERS.get(dep, 99) >= CRATE_LAYERS[d]:
                errors.append(f"crate dependency that does not point down: crates/{d} -> crates/{dep}")
    for name in FILE_CYCLE_CRATES:
        crate = Crate(root / name / "src")
        # A child naming its parent module's items is the module's inside, not a cycle;
        # what is refused is a circle through files none of which is the other's parent.
        arrows = {(a, b): n for (a, b), n in crate.arrows().items()
                  if not (b.endswith(("mod.rs", "lib.rs")) and a.startswith(b.rsplit("/", 1)[0] + "/" if "/" in b else ""))}
        files = [r for r in crate.files.values() if r not in crate.test_only]
        for comp in cycles(set(files), list(arrows)):
            ties = [f"    {a} -> {b} [{', '.join(sorted(n))}]" for (a, b), n in sorted(arrows.items())
                    if a in comp and b in comp]
            errors.append(f"import cycle in crates/{name} between {len(comp)} files: {', '.join(comp)}\n" + "\n".join(ties))
    return errors


def main():
    crate_errors = check_crates()
    for e in crate_errors:
        print(e)
    crate = Crate(SRC)
    arrows = crate.arrows()
    errors = []
    files = [r for r in crate.files.values() if r not in crate.test_only]
    for rel in files:
        if layer_of(rel) is None:
            errors.append(f"unassigned: {rel} is in no layer (add it to LAYERS in {Path(__file__).name})")
    for (a, b), names in sorted(arrows.items()):
        la, lb = layer_of(a), layer_of(b)
        if la and lb and lb[0] > la[0]:
            errors.append(f"upward import: {a} (layer {la[0]} {la[1]}) -> {b} (layer {lb[0]} {lb[1]}) "
                          f"[{', '.join(sorted(names))}]")
    units = {unit_of(r) for r in files}
    unit_arrows = {(unit_of(a), unit_of(b)) for (a, b) in arrows if unit_of(a) != unit_of(b)}
    for comp in cycles(units, unit_arrows):
        ties = [f"    {a} -> {b} [{', '.join(sorted(n))}]" for (a, b), n in sorted(arrows.items())
                if unit_of(a) in comp and unit_of(b) in comp and unit_of(a) != unit_of(b)]
        errors.append(f"import cycle between {len(comp)} modules: {', '.join(comp)}\n" + "\n".join(ties))
    if "--graph" in sys.argv:
        mods = defaultdict(set)
        for (a, b) in arrows:
            ma, mb = module_name(a), module_name(b)
            if ma != mb:
                mods[ma].add(mb)
        for m in sorted(mods):
            print(f"{m} -> {', '.join(sorted(mods[m]))}")
        mcycles = cycles(set(mods) | {x for v in mods.values() for x in v},
                         [(a, b) for a, bs in mods.items() for b in bs])
        for c in mcycles:
            print("module cycle:", " <-> ".join(c))
        print()
    if errors or crate_errors:
        print("\n".join(errors))
        print(f"\ncheck_layers: {len(errors) + len(crate_errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_layers: crates/core: {len(files)} files, {len(arrows)} arrows, every import points down, "
          f"no cycles; crate dependencies point down; no file cycle in {', '.join(FILE_CYCLE_CRATES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
