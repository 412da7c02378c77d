#!/usr/bin/env python3
"""Adds up Catch2 test cases over every test.log under bazel-testlogs.

Prints "N passed, M failed" (test cases). A test target whose log has no
Catch2 summary (crash, timeout) counts as one failure.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"
passed = failed = 0
for dirpath, _, files in os.walk(root, followlinks=True):
    if "test.log" not in files:
        continue
    text = open(os.path.join(dirpath, "test.log"), errors="replace").read()
    m = re.search(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)", text)
    if m:
        passed += int(m.group(1))
        continue
    m = re.search(r"test cases?:\s+(\d+)\s+\|\s+(\d+) passed\s+\|\s+(\d+) failed", text)
    if m:
        passed += int(m.group(2))
        failed += int(m.group(3))
        continue
    m = re.search(r"test cases?:\s+(\d+)\s+\|\s+(\d+) failed", text)
    if m:
        failed += int(m.group(2))
        continue
    if re.search(r"^PASS$|\[  PASSED  \]", text, re.M):
        passed += 1
        continue
    failed += 1
print(f"{passed} passed, {failed} failed")
