#!/bin/sh
# kubectl_complete-migrate: kubectl (>= 1.26) runs this from PATH for `kubectl migrate <TAB>`,
# with the words typed after `kubectl migrate` (the last one being completed), and reads
# the candidates and the `:<directive>` line from stdout. kubectl-migrate answers that
# itself (`__complete`), so the flags are known in one place only.
# Prefer the kubectl-migrate next to this file (a krew install, a release archive), else PATH.
here=$(dirname "$0")
if [ -x "$here/kubectl-migrate" ]; then
  exec "$here/kubectl-migrate" __complete "$@"
fi
exec kubectl-migrate __complete "$@"
