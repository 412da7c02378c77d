#!/usr/bin/python3
"""Fails when the operator binary uses an API verb its ClusterRole/Role does not grant.

The used verbs are derived from the code: every reference to a resource constant
of kube/resources.h (kube::kPods, ...) in the operator's non-test sources
(cmd/, controller/, webhook/, kube/ minus the fake) is classified by the call it is an
argument of (or, for an informer's options, `x.watch.resource = kube::kX`: list and
watch). A reference no rule classifies fails the check, so a new kind of
call site cannot slip through unnoticed. The granted verbs are read from
manifests/default/rbac.yaml. Grants the code does not use are reported too
(least privilege), except those listed in ALLOWED_EXTRA with a reason.

Usage: rbac_check.py [repo root]   (exit 0 = consistent; prints "rbac: N passed, M failed")
"""
import os
import re
import sys

import yaml  # PyYAML; present with Debian's python3-yaml or pip

ROOT = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--self-test" else os.path.join(os.path.dirname(__file__), "..")
SOURCE_DIRS = ["cmd", "controller", "webhook", "kube"]
SKIP_FILES = {"kube/fake_client.cc", "kube/fake_client.h", "kube/resources.h"}

# Verbs a wrapper function implies, by the wrapper's name.
WRAPPERS = {"ListAll": ["list"], "GetIfExists": ["get"], "InjectCa": ["get", "patch"]}
DIRECT = {"Get": "get", "List": "list", "Create": "create", "Update": "update",
          "Patch": "patch", "Delete": "delete", "Watch": "watch"}
# Grants that no code path in this repository shows but that are needed.
ALLOWED_EXTRA = {}


def resources():
    text = open(os.path.join(ROOT, "kube/resources.h")).read()
    out = {}
    for m in re.finditer(r'inline const Resource (k\w+)\{\s*"([^"]*)",\s*"[^"]*",\s*"([^"]*)"', text):
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


def call_args(text, open_paren):
    """The text of a call's argument list starting at `open_paren`."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1:i]
    return text[open_paren + 1:]


def used_verbs(consts):
    used = {}
    unclassified = []
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if not (f.endswith(".cc") or f.endswith(".h")) or f.endswith("_test.cc"):
                    continue
                if "bench" in f or "benchmark" in f:
                    continue  # measurement programs, not part of the operator binary
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
                if rel in SKIP_FILES or "/testing/" in rel or "/fuzz/" in rel:
                    continue
                text = open(os.path.join(dirpath, f)).read()
                for m in re.finditer(r"kube::(k[A-Z]\w+)\b", text):
                    name = m.group(1)
                    if name not in consts:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    # The innermost call this constant is the first argument of.
                    before = text[:m.start()]
                    # (A template's arguments may come between the name and the call:
                    # Options<api::NodeInfo>(kube::kNodes, ...).)
                    cm = re.search(r"(\w+)\s*(?:<[^<>()]*>)?\s*\(\s*(?:\w+_?\s*,\s*)?$", before)
                    group, res = consts[name]
                    verbs, sub = [], ""
                    if cm:
                        fn = cm.group(1)
                        args = call_args(text, before.rfind("("))
                        if fn in DIRECT:
                            verbs = [DIRECT[fn]]
                            if fn in ("Get", "Update", "Patch") and re.search(r'"status"', args):
                                sub = "/status"
                        elif fn in WRAPPERS:
                            verbs = WRAPPERS[fn]
                        elif fn == "Options" and "informer" in f:
                            verbs = ["list", "watch"]
                    elif re.search(r"\.watch\.resource\s*=\s*$", before):
                        # An informer's (kube::InformerOptions) resource: it lists and watches.
                        verbs = ["list", "watch"]
                    if not verbs:
                        unclassified.append(f"{rel}:{line}: kube::{name}")
                        continue
                    for v in verbs:
                        used.setdefault((group, res + sub, v), []).append(f"{rel}:{line}")
    return used, unclassified


def granted_rows():
    """(role kind, group, resource, names, verb) of every rule in rbac.yaml."""
    out = set()
    path = os.path.join(ROOT, "manifests/default/rbac.yaml")
    for doc in yaml.safe_load_all(open(path)):
        if not doc or doc.get("kind") not in ("ClusterRole", "Role"):
            continue
        for rule in doc.get("rules", []):
            names = ",".join(sorted(rule.get("resourceNames", [])))
            for g in rule.get("apiGroups", []):
                for r in rule.get("resources", []):
                    for v in rule.get("verbs", []):
                        out.add((doc["kind"], g or "core", r, names, v))
    return out


def granted():
    """(group, resource, verb) of every rule, the group "" for core: what the code is checked against."""
    return {("" if g == "core" else g, r, v) for (_, g, r, _, v) in granted_rows()}


DOC_TABLE = "docs/security.md"


def documented_rows():
    """The same tuples from the table between the rbac-table markers of docs/security.md;
    None when the markers are missing."""
    text = open(os.path.join(ROOT, DOC_TABLE)).read()
    m = re.search(r"<!-- rbac-table:begin.*?-->(.*?)<!-- rbac-table:end -->", text, re.S)
    if not m:
        return None
    out = set()
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("Role", "") or set(cells[0]) <= set("-"):
            continue
        kind = "Role" if cells[0].startswith("Role") else cells[0]
        names = ",".join(sorted(n.strip() for n in cells[3].split(",") if n.strip()))
        for v in cells[4].split(","):
            out.add((kind, cells[1], cells[2], names, v.strip()))
    return out


def main():
    consts = resources()
    used, unclassified = used_verbs(consts)
    grants = granted()
    failures = []
    # The documented table says exactly what rbac.yaml grants.
    rows, documented = granted_rows(), documented_rows()
    if documented is None:
        failures.append(f"{DOC_TABLE} has no rbac-table markers")
        documented = set()
    for r in sorted(rows - documented):
        failures.append(f"granted but not in {DOC_TABLE}'s table: {r[0]} {r[4]} {r[2]}.{r[1]}"
                        + (f" ({r[3]})" if r[3] else ""))
    for r in sorted(documented - rows):
        failures.append(f"in {DOC_TABLE}'s table but not granted: {r[0]} {r[4]} {r[2]}.{r[1]}"
                        + (f" ({r[3]})" if r[3] else ""))
    for u in unclassified:
        failures.append(f"unclassified use of a resource (teach hack/rbac_check.py): {u}")
    for key, where in sorted(used.items()):
        if key not in grants:
            failures.append(f"used but not granted: {key[2]} {key[1]}.{key[0] or 'core'} at {where[0]}")
    # Least privilege: the operator's own grants that nothing uses.
    for g in sorted(grants):
        if g not in used and g not in ALLOWED_EXTRA:
            failures.append(f"granted but unused: {g[2]} {g[1]}.{g[0] or 'core'}")
    for key, where in sorted(used.items()):
        print(f"  uses {key[2]:6} {key[1]}.{key[0] or 'core'}  ({where[0]})")
    for f in failures:
        print("FAIL " + f)
    checks = len(used) + len(grants) + len(rows | documented)
    print(f"rbac: {checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def self_test():
    """The check must fail when a used verb is not granted and when a grant is unused."""
    import shutil
    import subprocess
    import tempfile
    tmp = tempfile.mkdtemp()
    try:
        for d in SOURCE_DIRS + ["manifests", "docs"]:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d))
        rbac = os.path.join(tmp, "manifests/default/rbac.yaml")
        original = open(rbac).read()
        cases = [
            ('verbs: ["list", "watch", "patch", "delete"]', 'verbs: ["list", "watch", "patch"]',
             "used but not granted: delete pods.core"),
            ('verbs: ["create"]\n  - apiGroups: ["authorization.k8s.io"]',
             'verbs: ["create", "deletecollection"]\n  - apiGroups: ["authorization.k8s.io"]',
             "granted but unused: deletecollection events.core"),
            # An informer's resource (x.watch.resource = kube::kX) is listed and watched.
            ('VMI cache of where each VMI runs.\n    verbs: ["get", "list", "watch"]',
             'VMI cache of where each VMI runs.\n    verbs: ["get", "list"]',
             "used but not granted: watch virtualmachineinstances.kubevirt.io"),
        ]
        for old, new, want in cases:
            if old not in original:
                print(f"rbac self-test: fixture text not found: {old!r}")
                return 1
            open(rbac, "w").write(original.replace(old, new, 1))
            out = subprocess.run([sys.executable, __file__, tmp], capture_output=True, text=True)
            if out.returncode == 0 or want not in out.stdout:
                print(f"rbac self-test: expected a failure naming {want!r}, got:\n{out.stdout}")
                return 1
        open(rbac, "w").write(original)
        doc = os.path.join(tmp, DOC_TABLE)
        original_doc = open(doc).read()
        doc_cases = [
            ("| core | nodes | | list, watch |", "| core | nodes | | list |",
             "granted but not in docs/security.md's table: ClusterRole watch nodes.core"),
            ("| core | events | | create |", "| core | events | | create, delete |",
             "in docs/security.md's table but not granted: ClusterRole delete events.core"),
        ]
        for old, new, want in doc_cases:
            if old not in original_doc:
                print(f"rbac self-test: fixture text not found: {old!r}")
                return 1
            open(doc, "w").write(original_doc.replace(old, new, 1))
            out = subprocess.run([sys.executable, __file__, tmp], capture_output=True, text=True)
            if out.returncode == 0 or want not in out.stdout:
                print(f"rbac self-test: expected a failure naming {want!r}, got:\n{out.stdout}")
                return 1
        print("rbac self-test: the check catches a missing and an unused grant, and a table "
              "that differs from rbac.yaml either way")
        return 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    sys.exit(main())
