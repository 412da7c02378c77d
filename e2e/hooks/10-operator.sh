# Sourced by e2e/run.sh after the cluster is up: installs the operator's RBAC and
# webhook configurations and starts one replica ("0") as its ServiceAccount identity.
# KMT_E2E_NO_OPERATOR=1 skips it (smoke scenarios of the bare control plane only).
if [[ ${KMT_E2E_NO_OPERATOR:-0} != 1 ]]; then
  e2e/operator.sh install && e2e/operator.sh start 0 0
fi
