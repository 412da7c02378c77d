// Package tests holds the e2e scenarios, one file per area (smoke_test.go for
// the control plane itself; later areas add webhook_test.go, controller_test.go,
// cli_test.go...). They run against the cluster e2e/cluster.sh starts; e2e/run.sh
// runs them all. Scenarios share the cluster, so each works in its own namespace
// (framework.Namespace) and never assumes it is alone on the fake nodes.
package tests

import (
	"os"
	"testing"

	"kmt.local/e2e/framework"
)

// fw is a shorthand every scenario starts with.
func fw(t *testing.T) *framework.Framework {
	t.Helper()
	return framework.New(t)
}

// TestMain lets this binary serve as the abuse scenario's attacker process
// (framework.StartFloodProcess) before it runs any scenario.
func TestMain(m *testing.M) {
	framework.RunFloodProcessIfAsked()
	os.Exit(m.Run())
}
