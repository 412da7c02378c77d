#!/usr/bin/env python3
"""bench/check_tables.py TABLES NAME=EXIT=TITLE... — did every benchmark run and print its rows?

bench/run.sh calls it after the benchmarks with the file their tables were appended to and,
per benchmark, its name, its exit code ("-" when it was not run) and the title of its table.
A benchmark passes when it exited 0 and the file has its table ("### TITLE") with at least
one row, every row's value cell holding a figure (not empty, no nan/inf). Budgets are not
looked at: a "miss" is a figure, not a failure. Prints one line per benchmark and then
"bench: N passed, M failed"; exits 1 when any failed.

bench/check_tables.py --self-test checks the checker.
"""
import re
import sys


def tables(text):
    """{title: [row cells]} for every '### title' section followed by a Markdown table."""
    out = {}
    title = None
    for line in text.splitlines():
        if line.startswith("### "):
            title = line[4:].strip()
            out.setdefault(title, [])
            continue
        if title is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if not cells or cells[0] == "figure" or set("".join(cells)) <= set("-: "):
            continue  # header and separator lines
        out[title].append(cells)
    return out


def verdict(found, exit_code, title):
    """None when the benchmark passed, else why not."""
    if exit_code == "-":
        return "not run"
    if exit_code != "0":
        return f"exit {exit_code}"
    rows = found.get(title)
    if rows is None:
        return f'no table "### {title}"'
    if not rows:
        return f'table "### {title}" has no rows'
    for cells in rows:
        value = cells[1] if len(cells) > 1 else ""
        if not value or re.search(r"\b(nan|inf)\b", value, re.I):
            return f'row "{cells[0]}" has no figure ({value!r})'
    return None


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8", errors="replace") as f:
            found = tables(f.read())
    except OSError as e:
        found = {}
        print(f"bench: cannot read {argv[1]}: {e}")
    passed = failed = 0
    for spec in argv[2:]:
        name, exit_code, title = spec.split("=", 2)
        why = verdict(found, exit_code, title)
        if why is None:
            passed += 1
            print(f"bench: {name} ran, {len(found[title])} rows")
        else:
            failed += 1
            print(f"bench: {name} FAILED: {why}")
    print(f"bench: {passed} passed, {failed} failed")
    return 1 if failed else 0


def self_test():
    text = (
        "### A\n\n| figure | value | floor | ratio | budget | pass |\n|---|---|---|---|---|---|\n"
        "| p99 \\| x | 1.2 ms | 1.0 ms | 1.20× | ≤ 2× floor | **miss** |\n\nnote\n\n"
        "### B\n\n| figure | value | floor | ratio | budget | pass |\n|---|---|---|---|---|---|\n\n"
        "### C\n\n| figure | value | floor | ratio | budget | pass |\n|---|---|---|---|---|---|\n"
        "| rss |  | 1 MiB |  |  |  |\n"
        "### D\n\n| figure | value | floor | ratio | budget | pass |\n|---|---|---|---|---|---|\n"
        "| p99 | nan s |  |  |  |  |\n"
    )
    found = tables(text)
    cases = [
        (("0", "A"), None),  # a budget miss still passes
        (("1", "A"), "exit 1"),
        (("-", "A"), "not run"),
        (("0", "B"), 'table "### B" has no rows'),
        (("0", "C"), "row \"rss\" has no figure ('')"),
        (("0", "D"), "row \"p99\" has no figure ('nan s')"),
        (("0", "E"), 'no table "### E"'),
    ]
    bad = 0
    for (code, title), want in cases:
        got = verdict(found, code, title)
        if got != want:
            bad += 1
            print(f"check_tables self-test: {code} {title}: got {got!r}, want {want!r}")
    if found["A"][0][0] != "p99 \\| x":
        bad += 1
        print(f"check_tables self-test: escaped '|' split a cell: {found['A'][0]!r}")
    print(f"check_tables self-test: {len(cases) + 1 - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
