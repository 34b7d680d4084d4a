#!/usr/bin/env python3
"""The include rule: which folder of src/ may include which (the project's layering).

Cores are libraries the shells build on: pure ones (no I/O, no threads, time passed in)
and the I/O libraries below the shells (`http`, the transport; `ledger`, accounting's
stores). Shells are the programs' subcommands; they wire cores to I/O and never include
each other's headers:

  - a core includes only the cores listed for it in LAYERS;
  - a shell includes any core and nothing of another shell;
  - files directly under src/ (main.cc) may include anything (they register the shells);
  - every folder of src/ must be listed: a new folder fails the check until it is
    classified here (add it to LAYERS with its kind and, for a core, what it may use).

Checked: every `#include "x/..."` of every .h/.cc file under src/ whose first path
component `x` is a folder of src/. Angle-bracket includes and includes of files next to
the includer are not about layering and are skipped.

Usage: include_rules.py SRC_DIR   (exit 0: clean; 1: violations, one per line)
"""
import os
import re
import sys

CORE, SHELL = "core", "shell"

# folder: (kind, cores it may include; shells may include every core)
LAYERS = {
    # cores
    "common": (CORE, []),
    "api": (CORE, ["common"]),  # OpenAI/Anthropic codecs, SSE, error bodies (pure)
    "kv": (CORE, ["common"]),  # vLLM KV events: hashing, codec, sequence (pure); kv/zmq: ZeroMQ
    "tokenizer": (CORE, ["common"]),  # the served model's tokenizer, chat template (pure)
    "engine": (CORE, ["common", "kv"]),  # the vLLM-like engine model (pure)
    "routing": (CORE, ["common", "kv"]),  # router, predictor, strategies (pure; never engine)
    "policy": (CORE, ["common"]),  # InferencePolicy model, evaluation, taggers (pure)
    "admission": (CORE, ["common"]),  # in-flight limits, bounded wait queues (pure)
    "workload": (CORE, ["common"]),  # workloads and run results for bench and simulate
    "http": (CORE, ["common", "api"]),  # HTTP/1.1 server and client (transport)
    "accounting": (CORE, ["common"]),  # prices, usage records, budgets, limits (pure)
    "ledger": (CORE, ["common", "accounting"]),  # accounting I/O: stores, spool, writer, Redis
    "k8s": (CORE, ["common", "http"]),  # Kubernetes client: config, REST, reflectors, leases
    "crd": (CORE, ["common", "policy", "k8s", "accounting"]),  # kinference.io resources (pure)
    # shells
    "gateway": (SHELL, None),
    "enginesim": (SHELL, None),
    "sim": (SHELL, None),
    "bench": (SHELL, None),
    "controller": (SHELL, None),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def allowed(src_folder, target_folder):
    """None when src_folder may include target_folder, else why not."""
    if src_folder == target_folder:
        return None
    kind, cores = LAYERS[src_folder]
    target_kind = LAYERS[target_folder][0]
    if kind == SHELL:
        if target_kind == SHELL:
            return f"shell '{src_folder}' includes another shell ('{target_folder}')"
        return None
    if target_kind == SHELL:
        return f"core '{src_folder}' includes a shell ('{target_folder}')"
    if target_folder not in cores:
        return (f"core '{src_folder}' may include only {sorted(cores + [src_folder])}, "
                f"not '{target_folder}'")
    return None


def check(src_dir):
    violations = []
    folders = sorted(d for d in os.listdir(src_dir) if os.path.isdir(os.path.join(src_dir, d)))
    for folder in folders:
        if folder not in LAYERS:
            violations.append(f"src/{folder}/: folder not in the include rule table "
                              f"(tests/layering/include_rules.py LAYERS)")
    for root, _, files in os.walk(src_dir):
        rel_root = os.path.relpath(root, src_dir)
        top = rel_root.split(os.sep)[0]
        if rel_root == "." or top not in LAYERS:
            continue  # src/main.cc and friends; unknown folders are reported above
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1).split("/")[0]
                    if "/" not in m.group(1) or target not in folders:
                        continue
                    if target not in LAYERS:
                        continue  # reported as an unlisted folder
                    why = allowed(top, target)
                    if why:
                        rel = os.path.relpath(path, os.path.dirname(src_dir.rstrip("/")))
                        violations.append(f'{rel}:{lineno}: #include "{m.group(1)}": {why}')
    return violations


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    violations = check(sys.argv[1])
    for v in violations:
        print(v)
    if violations:
        print(f"{len(violations)} include rule violation(s)")
        return 1
    print("include rules: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
