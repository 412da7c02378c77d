# shellcheck shell=bash
# Sourced by e2e/run.sh (KMT_E2E_HOOK) in the in-cluster tier (e2e/incluster.sh): the operator
# installed from its image and manifests/default instead of e2e/hooks/10-operator.sh's process.
e2e/incluster/install.sh "$KMT_INCLUSTER_ARCHIVE"
