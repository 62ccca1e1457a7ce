#!/usr/bin/env python3
"""Check that every place which states ipu's version states the same one.

Usage: version_consistency.py <ipu source dir>

  * CMakeLists.txt           project(ipu VERSION x.y.z)         the single source of truth
  * include/ipu/version.hpp  IPU_VERSION_MAJOR/MINOR/PATCH (and IPU_VERSION_STRING)
  * vcpkg.json               "version" of the ipu port           (checked when present)
  * conanfile.py             the version the recipe sets: a `version = "..."` attribute, or
                             what set_version() extracts with re.search/re.match from the file
                             it loads (checked when present)
"""

import ast
import json
import pathlib
import re
import sys

VCPKG_JSON = ["ports/ipu/vcpkg.json", "packaging/vcpkg/ports/ipu/vcpkg.json"]
CONANFILE = ["conanfile.py", "packaging/conan/conanfile.py", "ports/conan/conanfile.py"]


def project_version(root: pathlib.Path) -> str:
    text = (root / "CMakeLists.txt").read_text()
    m = re.search(r"project\s*\(\s*ipu\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)\b", text)
    if not m:
        sys.exit("CMakeLists.txt: no `project(ipu VERSION x.y.z ...)`")
    return m.group(1)


def header_version(root: pathlib.Path, errors: list) -> str:
    path = root / "include/ipu/version.hpp"
    text = path.read_text()
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^\s*#\s*define\s+IPU_VERSION_{name}\s+([0-9]+)\b", text, re.M)
        if not m:
            errors.append(f"{path.relative_to(root)}: no IPU_VERSION_{name}")
            return "?"
        parts.append(str(int(m.group(1))))
    version = ".".join(parts)
    m = re.search(r'^\s*#\s*define\s+IPU_VERSION_STRING\s+"([^"]*)"', text, re.M)
    if m and m.group(1) != version:
        errors.append(f"{path.relative_to(root)}: IPU_VERSION_STRING \"{m.group(1)}\" but "
                      f"IPU_VERSION_MAJOR/MINOR/PATCH say {version}")
    return version


def vcpkg_version(path: pathlib.Path) -> str:
    data = json.loads(path.read_text())
    for key in ("version", "version-semver", "version-string"):
        if key in data:
            return str(data[key])
    return "?"


def conan_version(path: pathlib.Path, root: pathlib.Path) -> str:
    """The version the recipe would set, without importing conan."""
    tree = ast.parse(path.read_text(), str(path))
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if (isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "version" for t in node.targets)
                    and isinstance(node.value, ast.Constant)):
                return str(node.value.value)
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == "set_version"):
                continue
            strings = [n.value for n in ast.walk(fn)
                       if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            files = []
            for s in strings:
                for base in (path.parent, root):
                    if (base / s).is_file():
                        files.append(base / s)
                        break
            patterns = []
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                f = call.func
                if (isinstance(f, ast.Attribute) and f.attr in ("search", "match")
                        and isinstance(f.value, ast.Name) and f.value.id == "re"
                        and call.args and isinstance(call.args[0], ast.Constant)):
                    patterns.append(call.args[0].value)
            for file in files:
                text = file.read_text()
                for pattern in patterns:
                    m = re.search(pattern, text)
                    if m:
                        return m.group(1)
            return f"? (set_version() found no version with {patterns} in {[str(f) for f in files]})"
    return "? (neither a `version` attribute nor a set_version() method)"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    errors = []
    expected = project_version(root)
    found = {"CMakeLists.txt project(VERSION)": expected,
             "include/ipu/version.hpp": header_version(root, errors)}
    for rel in VCPKG_JSON:
        if (root / rel).is_file():
            found[rel] = vcpkg_version(root / rel)
    for rel in CONANFILE:
        if (root / rel).is_file():
            found[rel] = conan_version(root / rel, root)
    for where, version in found.items():
        mark = "ok" if version == expected else "MISMATCH"
        print(f"  {where:40} {version:12} {mark}")
        if version != expected:
            errors.append(f"{where}: {version}, but project(ipu VERSION) is {expected}")
    for e in errors:
        print("error: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
