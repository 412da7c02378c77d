#!/usr/bin/python3
"""Fails when a package includes one above it, or when the includes form a cycle.

The packages are the top-level directories, on floors (lowest first). A file may include files
of its own package and of any package on a lower floor; packages on the same floor include each
other only along an edge listed in SAME_FLOOR_EDGES (none today), and FORBIDDEN_EDGES takes
back what the floors would allow (controller/ -> http/: serving HTTP is the binary's):

  0  base/ (the clock, the logger, metrics, JSON Patch, version), third_party/ (stand-ins)
  1  api/          pure domain logic
  2  kube/, http/  the Kubernetes client; the HTTP/TLS server core
  3  webhook/, controller/
  4  cli/          the kubectl-migrate plugin
  5  cmd/          the operator binary's wiring
  6  fuzz/, bench/, e2e/   tests and tools over the whole tree

Read from every tracked .cc and .h (git ls-files; every file under the root when it is not a git
tree): each `#include "pkg/..."`. One check per package edge found (allowed or not), one per
package that has C++ files (it must have a floor), one for cycles among the packages and one for
cycles among the files (a header that includes itself through others).

Usage: include_graph.py [repo root]   (exit 0 = layered; prints "includes: N passed, M failed")
       include_graph.py --self-test   (the check fails on an upward include, a same-floor
                                       include, a forbidden edge, an unknown package and a cycle)
"""
import os
import re
import subprocess
import sys

FLOORS = {
    "base": 0, "third_party": 0,
    "api": 1,
    "kube": 2, "http": 2,
    "webhook": 3, "controller": 3,
    "cli": 4,
    "cmd": 5,
    "fuzz": 6, "bench": 6, "e2e": 6,
}
# (from, to) pairs of packages on one floor allowed to include each other's headers.
SAME_FLOOR_EDGES = set()
# (from, to) pairs the floors would allow but the layout does not, with the reason.
FORBIDDEN_EDGES = {
    ("controller", "http"): "controller/ is the VMIM controller; serving HTTP is the binary's (cmd/)",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "*.cc", "*.h"], capture_output=True,
                             text=True, check=True).stdout.split()
        if out:
            return [p for p in out if os.path.isfile(os.path.join(root, p))]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "bazel-"))]
        for f in files:
            if f.endswith((".cc", ".h")):
                found.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(found)


def read_graph(root):
    """{file: [included repo paths]} for every C++ source under root."""
    graph = {}
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        graph[path] = [inc for inc in INCLUDE.findall(text) if "/" in inc]
    return graph


def cycles(edges):
    """The strongly connected components of more than one node, or with a self edge (Tarjan,
    iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1 or node in edges.get(node, ()):
                    out.append(sorted(comp))
    return out


def check(root):
    """(passed, failures, lines to print)."""
    graph = read_graph(root)
    failures, passed = [], 0
    packages = sorted({p.split("/", 1)[0] for p in graph})
    for pkg in packages:
        if pkg in FLOORS:
            passed += 1
        else:
            failures.append(f"package {pkg}/ has no floor (add it to FLOORS in hack/include_graph.py)")
    # Package edges, each with the first file that makes it.
    edges = {}
    for path in sorted(graph):
        src = path.split("/", 1)[0]
        for inc in graph[path]:
            dst = inc.split("/", 1)[0]
            if dst != src:
                edges.setdefault((src, dst), f"{path} includes \"{inc}\"")
    lines = []
    for (src, dst), where in sorted(edges.items()):
        fs, fd = FLOORS.get(src), FLOORS.get(dst)
        if fd is None:
            failures.append(f"{src} -> {dst}: {dst}/ has no floor ({where})")
        elif fs is None:
            pass  # counted once above, as the package without a floor
        elif fd > fs:
            failures.append(f"{src} -> {dst}: includes a package above it, floor {fd} over {fs} ({where})")
        elif (src, dst) in FORBIDDEN_EDGES:
            failures.append(f"{src} -> {dst}: forbidden, {FORBIDDEN_EDGES[(src, dst)]} ({where})")
        elif fd == fs and (src, dst) not in SAME_FLOOR_EDGES:
            failures.append(f"{src} -> {dst}: includes a package on its own floor {fs} ({where})")
        else:
            passed += 1
            lines.append(f"ok {src} -> {dst}")
    pkg_edges = {}
    for src, dst in edges:
        pkg_edges.setdefault(src, set()).add(dst)
    pkg_cycles = cycles(pkg_edges)
    for c in pkg_cycles:
        failures.append("packages include each other in a cycle: " + " -> ".join(c))
    passed += 0 if pkg_cycles else 1
    file_edges = {p: {i for i in incs if i in graph} for p, incs in graph.items()}
    file_cycles = cycles(file_edges)
    for c in file_cycles:
        failures.append("files include each other in a cycle: " + " -> ".join(c))
    passed += 0 if file_cycles else 1
    return passed, failures, lines


def main(root):
    passed, failures, lines = check(root)
    for line in lines:
        print(line)
    for f in failures:
        print("FAIL " + f)
    print(f"includes: {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


def self_test():
    """The check must pass on a layered tree and fail on each kind of violation."""
    import tempfile
    layered = {
        "base/clock.h": "#pragma once\n",
        "api/term.h": '#include "base/clock.h"\n',
        "kube/client.h": '#include "api/term.h"\n#include <string>\n',
        "http/server.h": '#include "base/clock.h"\n',
        "webhook/server.h": '#include "http/server.h"\n#include "kube/client.h"\n',
        "controller/reconcile.h": '#include "kube/client.h"\n',
        "cmd/operator/main.cc": '#include "controller/reconcile.h"\n#include "webhook/server.h"\n',
    }
    cases = [
        ("an upward include", {"kube/client.h": '#include "webhook/server.h"\n'},
         "kube -> webhook: includes a package above it"),
        ("a same-floor include", {"controller/reconcile.h": '#include "webhook/server.h"\n'},
         "controller -> webhook: includes a package on its own floor"),
        ("a forbidden edge", {"controller/reconcile.h": '#include "http/server.h"\n'},
         "controller -> http: forbidden"),
        ("an unknown package", {"tools/x.cc": '#include "base/clock.h"\n'},
         "package tools/ has no floor"),
        ("a file cycle", {"api/a.h": '#include "api/b.h"\n', "api/b.h": '#include "api/a.h"\n'},
         "files include each other in a cycle: api/a.h -> api/b.h"),
        ("a package cycle", {"base/clock.h": '#  include "api/term.h"\n'},
         "packages include each other in a cycle: api -> base"),
    ]

    def run(files):
        with tempfile.TemporaryDirectory() as tmp:
            for path, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
            return check(tmp)

    passed, failures, _ = run(layered)
    if failures or passed == 0:
        print(f"includes self-test: the layered tree should pass, got {failures}")
        return 1
    for name, change, want in cases:
        _, failures, _ = run({**layered, **change})
        if not any(want in f for f in failures):
            print(f"includes self-test: {name} should fail with {want!r}, got {failures}")
            return 1
    print("includes self-test: a layered tree passes; an upward include, a same-floor include, a "
          "forbidden edge, an unknown package and cycles of files and of packages fail")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
