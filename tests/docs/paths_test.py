#!/usr/bin/env python3
"""Every repository path that a doc, a chart comment or a source comment names exists.

  paths_test.py ROOT

Reads README.md, docs/*.md, examples/**, deploy/** (the chart's templates and values, the
Prometheus rules, the Dockerfile) and the comments of src/**, tests/**, scripts/** and
CMakeLists.txt files, and finds words that look like a path of this repository: one that
starts with a top-level folder (src/gateway/config/config.h, docs/kv-events.md), or a file
path with a folder and an extension as source comments name them (gateway/front/tenants.h,
relative to src/ or to the naming file's folder). Each must exist, as written, relative to
the root, to src/, to tests/, to the naming file's folder or to an ancestor of it. Paths
outside the repository (../shared/...) are refused: a reader of the repository cannot
follow them. URLs, absolute paths and `<placeholders>` are not paths of the repository.

Prints one line per missing path (FILE:LINE: PATH) and exits 1 if there is any.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../.."))
TOP = [d for d in sorted(os.listdir(ROOT)) if os.path.isdir(os.path.join(ROOT, d)) and not d.startswith(".")
       and d not in ("build", "build-asan", "build-fuzz")]
EXT = r"(?:h|cc|cpp|md|yaml|yml|json|py|sh|txt|tpl|jinja|cmake|go|mod|toml|csv|jsonl)"
# A word: a path with at least one '/'. Characters of a path only; trailing punctuation
# (.,:;) is stripped afterwards.
WORD = re.compile(r"(?<![\w/.:<>$~{-])(\.\./)*[A-Za-z0-9_.][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_.*+{},-]+)+/?")
# Not repository paths: examples of a user's files and of files in a container or a
# model folder, Kubernetes resource names (group/version, kind/name) and API routes.
NOT_PATHS = re.compile(
    r"^(v1|v1alpha1|v2|apps/v1|policy/v1|\w+\.k8s\.io/|\w+(\.\w+)+/v\d|monitoring\.coreos\.com/|"
    r"inferencepolicy/|inferencepool/|inferenceprovider/|inferencetenant/|deploy/|deployment/|"
    r"svc/|service/|pod/|crd/|lease/|configmap/|secret/|provider/|text/|application/|"
    r"chat/|debug/)"
)


def candidates(text, folders):
    for m in WORD.finditer(text):
        w = m.group(0).rstrip(".,:;)")
        before = text[max(0, m.start() - 8):m.start()]
        if "://" in before or before.endswith("@"):
            continue
        if w.startswith("../"):
            if w.count("/") > 1:  # "../shared" alone names no file
                yield m.start(), w
            continue
        first = w.split("/")[0]
        if first in TOP or first in ("README.md", "Makefile", "Dockerfile", "CMakeLists.txt"):
            yield m.start(), w
        elif first in folders and re.search(r"/[A-Za-z0-9_.+-]+\." + EXT + r"$", w) and not NOT_PATHS.match(w):
            yield m.start(), w


def folders_near(naming_file):
    """Folder names a source comment may start a relative path with: those of src/ and
    tests/ and of the naming file's folder and its ancestors."""
    out = set()
    d = os.path.dirname(naming_file)
    bases = [os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")]
    while d.startswith(ROOT + "/"):
        bases.append(d)
        d = os.path.dirname(d)
    for b in bases:
        if os.path.isdir(b):
            out.update(e for e in os.listdir(b) if os.path.isdir(os.path.join(b, e)))
    return out


def expand(path):
    """messages_{request,response}_test.cc -> both names (shell brace expansion)."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",") for p in expand(path[:m.start()] + alt + path[m.end():])]


def exists(path, naming_file):
    if "{" in path:
        return all(exists(p, naming_file) for p in expand(path))
    if "*" in path or "<" in path or "{" in path or any(re.fullmatch(r"[A-Z_]+", c) for c in path.split("/")):
        return True  # a pattern or a placeholder (fuzz/corpus/NAME)
    path = path.rstrip("/")
    bases = [ROOT, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")]
    d = os.path.dirname(naming_file)
    while d.startswith(ROOT):
        bases.append(d)
        # tests/ mirrors src/: a test's comment names the source beside its mirror.
        rel = os.path.relpath(d, ROOT)
        if rel.startswith("tests/"):
            bases.append(os.path.join(ROOT, "src", rel[len("tests/"):]))
        d = os.path.dirname(d)
    for b in bases:
        full = os.path.normpath(os.path.join(b, path))
        if os.path.exists(full):
            return True
        # A stem: src/gateway/front/tenants (.h and .cc), benchmarks/policy_bench.
        folder, stem = os.path.split(full)
        if stem and os.path.isdir(folder) and any(f.startswith(stem + ".") for f in os.listdir(folder)):
            return True
    return False


def comment_text(path, text):
    """The comments of a source file (C++ // and /* */, # in scripts and CMake), with
    newlines kept so line numbers stay right; whole text for docs."""
    if path.endswith((".h", ".cc", ".cpp")):
        out = []
        for line in text.split("\n"):
            i = line.find("//")
            out.append(line[i:] if i >= 0 else "")
        return "\n".join(out)
    if path.endswith((".sh", ".py", ".cmake")) or os.path.basename(path) in ("CMakeLists.txt", "Makefile", "Dockerfile"):
        return "\n".join(line[line.find("#"):] if "#" in line else "" for line in text.split("\n"))
    return text


def files():
    for name in ("README.md", "Dockerfile", "Makefile", "CMakeLists.txt"):
        if os.path.exists(os.path.join(ROOT, name)):
            yield os.path.join(ROOT, name)
    for top in ("docs", "examples", "deploy", "src", "tests", "scripts", "cmake", "benchmarks", "tools"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d not in ("testdata", "fixtures", "golden", "__pycache__")]
            for f in filenames:
                if f.endswith((".md", ".h", ".cc", ".yaml", ".yml", ".tpl", ".txt", ".sh", ".py", ".cmake")) or \
                        f.startswith("Containerfile"):
                    yield os.path.join(dirpath, f)


def main():
    missing = []
    for path in files():
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("tests/docs/") or rel == "tests/layering/include_rules_test.py":
            continue  # examples and fixtures of tests about paths
        with open(path, errors="replace") as f:
            text = comment_text(rel, f.read())
        for pos, word in candidates(text, folders_near(path)):
            line = text.count("\n", 0, pos) + 1
            if word.startswith("../") and not os.path.normpath(os.path.join(os.path.dirname(path), word)).startswith(ROOT + "/"):
                missing.append(f"{rel}:{line}: {word} (outside the repository)")
            elif not exists(word, path):
                missing.append(f"{rel}:{line}: {word}")
    for m in missing:
        print(m)
    print(f"paths_test: {len(missing)} path(s) named but missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
