#!/usr/bin/env bash
# The admission fuzz target (shell + term parser); kept for habit: fuzz/run.sh builds and
# runs every target, this one included.
#
#   webhook/fuzz/run.sh [SECONDS]      (default 300)
exec "$(dirname "$0")/../../fuzz/run.sh" admission "${1:-300}"
