#!/usr/bin/python3
"""The documentation checks of the monitoring tier (hack/monitoring_check.sh counts their lines).

  - README.md keeps the two set-up commands (./hack/demo.sh, ./hack/test.sh);
  - every relative link in README.md and docs/**/*.md resolves: the file or directory exists
    inside the repository, and a #fragment names a heading of the target Markdown file (GitHub's
    anchors: lower case, punctuation dropped, spaces to '-', a repeated heading gets -1, -2, …);
  - every flag the operator's --help prints has a row in docs/flags.md, and every flag a row of
    docs/flags.md names is one --help prints (so the page cannot keep a removed flag).

Usage: docs_check.py OPERATOR_BINARY   prints one "ok …" or "FAIL …" line per finding
       docs_check.py --self-test       checks the anchor and link parsing on fixed examples
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")


def strip_code(text):
    """Text without fenced code blocks and inline code spans (links there are not links)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return "\n".join(out)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and '_' (Unicode too)
    return text.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    for line in strip_code_blocks_only(text).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def strip_code_blocks_only(text):
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence or m:
            if fence and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            elif not fence and m:
                fence = m.group(1)
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def links(text):
    body = strip_code(text)
    return [m.group(1) for m in LINK.finditer(body)] + [m.group(1) for m in IMAGE.finditer(body)]


def check_links(root, files):
    """One finding per file (how many relative links resolve), one more per broken link."""
    for path in files:
        rel = os.path.relpath(path, root)
        good = bad = 0
        for ok, what in check_file_links(root, path):
            good, bad = good + ok, bad + (not ok)
            if not ok:
                yield ok, what
        yield bad == 0, f"{rel}: {good} of {good + bad} relative links resolve"


def check_file_links(root, path):
    rel = os.path.relpath(path, root)
    text = open(path, encoding="utf-8").read()
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        where = f"{rel}: link {target}"
        if os.path.commonpath([dest, root]) != root:
            yield False, f"{where} leaves the repository"
            continue
        if not os.path.exists(dest):
            yield False, f"{where}: {os.path.relpath(dest, root)} does not exist"
            continue
        if fragment:
            if not dest.endswith(".md") or os.path.isdir(dest):
                yield False, f"{where}: a #fragment on a file that is not Markdown"
                continue
            if fragment not in anchors(open(dest, encoding="utf-8").read()):
                yield False, f"{where}: no heading #{fragment} in {os.path.relpath(dest, root)}"
                continue
        yield True, where


def help_flags(operator):
    out = subprocess.run([operator, "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError(f"{operator} --help exited {out.returncode}: {out.stderr.strip()}")
    return set(re.findall(r"^\s*(?:-\w,)?(--[a-z0-9][a-z0-9-]*)", out.stdout, re.M))


def page_flags(text):
    """Flags named in the first column of the page's tables."""
    flags = set()
    for line in strip_code_blocks_only(text).split("\n"):
        m = re.match(r"^\|\s*([^|]*)\|", line)
        if m:
            flags.update(re.findall(r"`(--[a-z0-9][a-z0-9-]*)`", m.group(1)))
    return flags


def check_flags(root, operator):
    page = os.path.join(root, "docs", "flags.md")
    try:
        have = help_flags(operator)
    except Exception as e:  # the binary is missing or broken: one failure, not a crash
        yield False, f"operator --help: {e}"
        return
    if not have:
        yield False, "operator --help printed no flags"
        return
    documented = page_flags(open(page, encoding="utf-8").read()) if os.path.exists(page) else set()
    for flag in sorted(have):
        yield flag in documented, f"docs/flags.md documents {flag} (operator --help)"
    for flag in sorted(documented - have):
        yield False, f"docs/flags.md documents {flag}, which operator --help does not print"


def check_readme_commands(root):
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    for cmd in ("./hack/demo.sh", "./hack/test.sh"):
        yield bool(re.search(rf"^{re.escape(cmd)}\b", text, re.M)), f"README.md has the command {cmd}"


def self_test():
    assert slug("Policies: steering evacuations") == "policies-steering-evacuations"
    assert slug("`--fail-fast-unschedulable`") == "--fail-fast-unschedulable"
    assert slug("Before a drain: policy explain") == "before-a-drain-policy-explain"
    assert slug("API clients and their rate limits") == "api-clients-and-their-rate-limits"
    assert anchors("# A\n## A\n```\n# B\n```\n") == {"a", "a-1"}
    assert links("[x](a.md) `[y](b.md)` ![i](c.png) [z](http://h/) [[n]](d.md#e)\n```\n[q](q.md)\n```") == [
        "a.md", "http://h/", "d.md#e", "c.png"]
    assert page_flags("| `--a`, `-h` | x `--b` |\n`--c`\n| `--d` |") == {"--a", "--d"}
    print("docs_check self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    files = [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    findings = list(check_readme_commands(ROOT)) + list(check_links(ROOT, files)) + list(
        check_flags(ROOT, sys.argv[1]))
    for good, what in findings:
        print(("ok " if good else "FAIL ") + what)
    return 0 if all(good for good, _ in findings) else 1


if __name__ == "__main__":
    sys.exit(main())
