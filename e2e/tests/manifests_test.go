package tests

// The install's scenarios: the default install applies cleanly (server-side dry
// run, through every admission plugin of the e2e API server), and the
// operator's ServiceAccount can do what the binary needs and nothing more of
// what an attacker would want (e2e/operator.sh installed exactly
// manifests/default's RBAC objects).

import (
	"path/filepath"
	"strings"
	"testing"

	"kmt.local/e2e/framework"
)

func TestManifestsDefaultApplyServerDryRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(framework.RepoRoot(t), "manifests", "default")
	r := framework.KubectlAs(t, framework.AdminUser, "", "apply", "-k", dir, "--dry-run=server")
	if r.Code != 0 {
		t.Fatalf("kubectl apply -k manifests/default --dry-run=server: %s", r)
	}
	for _, want := range []string{
		"namespace/kubevirt-migration-target",
		"serviceaccount/migration-target-operator",
		"clusterrole.rbac.authorization.k8s.io/migration-target-operator",
		"clusterrole.rbac.authorization.k8s.io/migration-target-requester",
		"deployment.apps/migration-target-operator",
		"poddisruptionbudget.policy/",
		"service/",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/migration-target",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/migration-target",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Count(r.Stdout, "(server dry run)") != strings.Count(strings.TrimSpace(r.Stdout), "\n")+1 {
		t.Errorf("not every line is a server dry run:\n%s", r.Stdout)
	}
}

func TestManifestsOperatorServiceAccountLeastPrivilege(t *testing.T) {
	t.Parallel()
	ns := framework.OperatorNamespace
	cases := []struct {
		want bool
		args []string
	}{
		{true, []string{"patch", "pods", "-A"}},
		{true, []string{"delete", "pods", "-A"}},
		{true, []string{"watch", "pods", "-A"}},
		{true, []string{"list", "nodes"}},
		{true, []string{"watch", "virtualmachineinstancemigrations.kubevirt.io", "-A"}},
		{true, []string{"patch", "virtualmachineinstancemigrations.kubevirt.io", "--subresource=status", "-A"}},
		{true, []string{"get", "virtualmachineinstances.kubevirt.io", "-A"}},
		{true, []string{"create", "subjectaccessreviews.authorization.k8s.io"}},
		{true, []string{"create", "events", "-A"}},
		{true, []string{"update", "leases.coordination.k8s.io", "-n", ns}},

		{false, []string{"update", "virtualmachineinstances.kubevirt.io", "-A"}},
		{false, []string{"patch", "virtualmachineinstances.kubevirt.io", "-A"}},
		{false, []string{"update", "virtualmachines.kubevirt.io", "-A"}},
		{false, []string{"patch", "virtualmachineinstancemigrations.kubevirt.io", "-A"}},
		{false, []string{"update", "pods", "-A"}},
		{false, []string{"create", "pods", "-A"}},
		{false, []string{"patch", "nodes"}},
		{false, []string{"get", "secrets", "-n", "kube-system"}},
		{false, []string{"list", "secrets", "-A"}},
		{false, []string{"get", "secrets/some-other-secret", "-n", ns}},
		{false, []string{"update", "leases.coordination.k8s.io", "-n", "kube-system"}},
		{false, []string{"create", "clusterrolebindings.rbac.authorization.k8s.io"}},
	}
	for _, tc := range cases {
		args := append([]string{"auth", "can-i", "--as=" + framework.OperatorServiceAccount}, tc.args...)
		r := framework.KubectlAs(t, framework.AdminUser, "", args...)
		got := strings.TrimSpace(r.Stdout)
		want, code := "no", 1
		if tc.want {
			want, code = "yes", 0
		}
		if got != want || r.Code != code {
			t.Errorf("kubectl %s: %s\nwant %q (exit %d)", strings.Join(args, " "), r, want, code)
		}
	}
}
