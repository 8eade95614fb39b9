#!/usr/bin/env python3
"""Keeps docs/ARCHITECTURE.md true to the tree.

1. Every path the document names in backquotes (`crates/engine/src/check.rs`,
   `sim/flags.rs`, `scripts/test/test_*.sh`) exists: tried from the repository's
   root, then from each crate's src/ (the document names core's files from
   crates/core/src). A glob must match at least one file.
2. "Where each kind of thing lives" holds for what is there now, so that the
   next one added touches the files the table says and no others:
   - every policy (a `PolicyInfo` constant in policy/{classic,flash,tiered}/)
     is a `pub mod` of its folder and listed in registry.rs's POLICIES;
   - every admitter (an `AdmitterInfo` in policy/admission/) likewise, in ADMITTERS;
   - every trace format file in trace/formats/ is a `pub mod` of formats/mod.rs
     and has a fuzz target (fuzz/fuzz_targets/NAME.rs, a [[bin]] in
     fuzz/Cargo.toml), which scripts/test/fuzz.sh runs by reading that file;
   - every NBD option the server answers (an `OPT_*` constant in crates/nbd/src/consts.rs
     that handshake.rs names) is also named by a test under crates/nbd/.

Usage: scripts/test/check_docs.py   (exit 1 and one line per broken claim)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
CORE = ROOT / "crates" / "core" / "src"

# Backquoted words that look like paths but name something else.
NOT_PATHS = {"src/"}


def tree_files() -> list[str]:
    """Every tracked-looking file and folder, as paths from the root (no build output)."""
    out = []
    for top in ("crates", "scripts", "python", "tests", "fuzz", "experiments", "examples", "docs"):
        for p in (ROOT / top).rglob("*"):
            if "target" not in p.parts and "__pycache__" not in p.parts and "corpus" not in p.parts:
                out.append(p.relative_to(ROOT).as_posix())
    return out


TREE: list[str] = []


def exists(name: str) -> bool:
    """`name` from the root or a crate's src/, or, written as the document does
    in a paragraph about one folder (`read.rs`, `formats/mod.rs`), the end of
    some path in the tree."""
    name = re.sub(r"\b[A-Z]{3,}\b", "*", name.rstrip("/"))  # `NAME.rs`: a placeholder
    bases = [ROOT, CORE] + sorted(p / "src" for p in (ROOT / "crates").iterdir() if (p / "src").is_dir())
    for base in bases:
        if any(ch in name for ch in "*?[{"):
            # `{classic,flash,tiered}` is the document's brace list, not a glob
            alts = [name]
            m = re.search(r"\{([^}]*)\}", name)
            if m:
                alts = [name[: m.start()] + a + name[m.end():] for a in m.group(1).split(",")]
            if all(list(base.glob(a)) for a in alts):
                return True
        elif (base / name).exists():
            return True
    if not any(ch in name for ch in "*?[{"):
        if not TREE:
            TREE.extend(tree_files())
        return any(t == name or t.endswith("/" + name) for t in TREE)
    return False


def doc_paths(text: str) -> list[tuple[int, str]]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for word in re.findall(r"`([^`\s]+)`", line):
            word = word.split("::")[0]
            if word in NOT_PATHS or word.startswith(("-", "http", "/", "$", "../")):
                continue
            if re.fullmatch(r"[\w.*?{},/-]+\.(rs|py|sh|md|toml|pyi)|[\w.{},*-]+(/[\w.{},*-]*)+/?", word):
                out.append((lineno, word))
    return out


def pub_mods(mod_rs: Path) -> set[str]:
    return set(re.findall(r"^pub mod (\w+);", mod_rs.read_text(), re.M))


def check_catalogue(errors: list[str], folders: list[str], kind: str, listed_in: str) -> None:
    registry = (CORE / "policy" / "registry.rs").read_text()
    block = registry[registry.index(f"pub static {listed_in}"):]
    block = block[: block.index("];")]
    for folder in folders:
        mods = pub_mods(CORE / "policy" / folder / "mod.rs")
        for f in sorted((CORE / "policy" / folder).glob("*.rs")):
            consts = re.findall(rf"^pub const (\w+): {kind}\s*=", f.read_text(), re.M)
            for const in consts:
                where = f"crates/core/src/policy/{folder}/{f.name}"
                if f.stem not in mods:
                    errors.append(f"{where}: not a `pub mod` of policy/{folder}/mod.rs")
                if not re.search(rf"\b{folder}::{f.stem}::{const}\b", block):
                    errors.append(f"{where}: {const} is not listed in registry.rs's {listed_in}")


def check_formats(errors: list[str]) -> None:
    formats = CORE / "trace" / "formats"
    mods = pub_mods(formats / "mod.rs")
    cargo = (ROOT / "fuzz" / "Cargo.toml").read_text()
    bins = set(re.findall(r'^name = "(\w+)"', cargo, re.M))
    for f in sorted(formats.glob("*.rs")):
        if f.stem in ("mod", "common"):
            continue
        where = f"crates/core/src/trace/formats/{f.name}"
        if f.stem not in mods:
            errors.append(f"{where}: not a `pub mod` of formats/mod.rs")
        if not (ROOT / "fuzz" / "fuzz_targets" / f.name).exists() or f.stem not in bins:
            errors.append(f"{where}: no fuzz target fuzz/fuzz_targets/{f.name} with its [[bin]] in fuzz/Cargo.toml")
    fuzz_sh = (ROOT / "scripts" / "test" / "fuzz.sh").read_text()
    if "Cargo.toml" not in fuzz_sh:
        errors.append("scripts/test/fuzz.sh: no longer takes its targets from fuzz/Cargo.toml")


def check_nbd_options(errors: list[str]) -> None:
    nbd = ROOT / "crates" / "nbd"
    consts = set(re.findall(r"pub const (OPT_\w+): u32", (nbd / "src" / "consts.rs").read_text()))
    handshake = (nbd / "src" / "handshake.rs").read_text()
    tests = "".join(p.read_text() for p in (nbd / "tests").glob("*.rs")) if (nbd / "tests").is_dir() else ""
    tests += "".join(re.findall(r"#\[cfg\(test\)\][\s\S]*", handshake))
    for c in sorted(consts):
        if re.search(rf"\b{c}\b", handshake) and not re.search(rf"\b{c}\b", tests):
            errors.append(f"crates/nbd/src/consts.rs: {c} is answered by handshake.rs but no test names it")


def main() -> int:
    errors: list[str] = []
    text = DOC.read_text()
    for lineno, word in doc_paths(text):
        if not exists(word):
            errors.append(f"docs/ARCHITECTURE.md:{lineno}: `{word}` names no file or folder in the tree")
    check_catalogue(errors, ["classic", "flash", "tiered"], "PolicyInfo", "POLICIES")
    check_catalogue(errors, ["admission"], "AdmitterInfo", "ADMITTERS")
    check_formats(errors)
    check_nbd_options(errors)
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"check_docs: docs/ARCHITECTURE.md names {len(doc_paths(text))} paths, all there; "
          "policies, admitters, trace formats and NBD options are where the document says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
