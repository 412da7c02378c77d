package tests

// The kubectl-migrate plugin's scenarios: the plugin (KMT_CLI_BIN, else
// bazel-bin/cli/kubectl-migrate) against the real API server, as the admin and
// as the VM owner.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// The admin migrates to a named node with --wait: exit 0, each phase printed,
// the operator's condition shown, the VM on the node. The VM owner's same
// command is denied with the webhook's message on stderr, exit 1, nothing
// created. --dry-run=server creates nothing.
func TestCLIMigrateToNode(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.OwnerNamespace(t)
	source, target := f.Nodes[0], f.Nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)

	r := framework.Plugin(t, framework.VMOwnerUser, time.Minute, "vmi", "-n", ns, "--node", target, "--wait")
	if r.Code != 1 || !strings.Contains(r.Stderr, "Error from server (Forbidden): "+permissionDenial(framework.VMOwnerUser, ns)) {
		t.Errorf("vm-owner: %s\nwant exit 1 and %q", r, permissionDenial(framework.VMOwnerUser, ns))
	}
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "vmi", "-n", ns, "--node", target, "--dry-run=server")
	if r.Code != 0 || !strings.Contains(r.Stdout, "(server dry run)") {
		t.Errorf("admin --dry-run=server: %s", r)
	}
	list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("denied and dry-run commands created %d VMIMs", len(list.Items))
	}

	r = framework.Plugin(t, framework.AdminUser, 3*time.Minute, "vmi", "-n", ns, "--node", target, "--wait", "--timeout", "150s")
	if r.Code != 0 {
		t.Fatalf("admin migrate --wait: %s", r)
	}
	for _, want := range []string{" created\n", "phase: Scheduling", "phase: Succeeded"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("migrate --wait output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if i, j := strings.Index(r.Stdout, "phase: Scheduling"), strings.Index(r.Stdout, "phase: Succeeded"); i > j {
		t.Errorf("phases out of order:\n%s", r.Stdout)
	}
	f.WaitVMIRunning(t, ns, "vmi", target)
	list, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("VMIMs after the migration: %v (%d)", err, len(list.Items))
	}
	m := list.Items[0]
	if m.Annotations[framework.AddedTermAnnotation] == "" || m.Status.Phase != virtv1.MigrationSucceeded {
		t.Errorf("plugin's VMIM annotations %v phase %s", m.Annotations, m.Status.Phase)
	}
	// The operator writes Applied right after releasing the gate, before the
	// target pod can even be scheduled: --wait has seen it by Succeeded.
	condLine := "condition " + framework.ConditionTermApplied + "=True (" + framework.ReasonTermApplied + ")"
	if !strings.Contains(r.Stdout, condLine) {
		t.Errorf("migrate --wait output lacks %q:\n%s", condLine, r.Stdout)
	}
	if !strings.Contains(r.Stdout, m.Name) {
		t.Errorf("output does not name the VMIM %s:\n%s", m.Name, r.Stdout)
	}

	// After the fact, `status` shows the whole report.
	f.WaitFinalReport(t, ns, m.Name, target, 60*time.Second)
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "status", m.Name, "-n", ns)
	for _, want := range []string{
		"Phase:        Succeeded",
		"  " + framework.ConditionTermApplied + "=True (" + framework.ReasonTermApplied + "): ",
		"  " + framework.ConditionTargetUnsched + "=False (" + framework.ReasonScheduled + "): ",
		" was scheduled to node " + target + "\n",
	} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("status %s lacks %q: %s", m.Name, want, r)
		}
	}
}

// explain names every reason on prepared nodes: cordoned, an untolerated
// taint, the VMI's own affinity, the node the VM runs on, insufficient memory;
// and "fits" for a node that would take it.
func TestCLIExplain(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	source, free := f.Nodes[0], f.Nodes[2]
	own := k8sv1.NodeSelectorTerm{MatchExpressions: []k8sv1.NodeSelectorRequirement{{Key: "kmt-e2e/zone", Operator: k8sv1.NodeSelectorOpNotIn, Values: []string{"excluded"}}}}
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source, framework.WithRequiredNodeAffinity(own)), source)

	sfx := framework.RandomSuffix()
	cordoned, tainted, excluded, small := "y-"+sfx+"-cordoned", "y-"+sfx+"-tainted", "y-"+sfx+"-excluded", "y-"+sfx+"-small"
	f.ExtraNode(t, cordoned, "192.168.71.1", func(n *k8sv1.Node) { n.Spec.Unschedulable = true })
	f.ExtraNode(t, tainted, "192.168.71.2", func(n *k8sv1.Node) {
		n.Spec.Taints = []k8sv1.Taint{{Key: "kmt-e2e/dedicated", Value: "db", Effect: k8sv1.TaintEffectNoExecute}}
	})
	f.ExtraNode(t, excluded, "192.168.71.3", func(n *k8sv1.Node) { n.Labels["kmt-e2e/zone"] = "excluded" })
	f.ExtraNode(t, small, "192.168.71.4", func(n *k8sv1.Node) {
		n.Status.Allocatable[k8sv1.ResourceMemory] = resource.MustParse("64Mi")
		n.Status.Capacity[k8sv1.ResourceMemory] = resource.MustParse("64Mi")
	})

	sel := fmt.Sprintf("kubernetes.io/hostname in (%s,%s,%s,%s,%s,%s)", cordoned, tainted, excluded, small, source, free)
	r := framework.Plugin(t, framework.AdminUser, time.Minute, "explain", "vmi", "-n", ns, "--selector", sel)
	if r.Code != 0 {
		t.Fatalf("explain: %s", r)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		if fs := strings.Fields(l); len(fs) > 1 {
			lines[fs[0]] = strings.TrimSpace(strings.TrimPrefix(l, fs[0]))
		}
	}
	for node, want := range map[string]string{
		cordoned: "cordoned",
		tainted:  "taint kmt-e2e/dedicated=db:NoExecute not tolerated",
		excluded: "VM's own affinity `",
		small:    "insufficient memory",
		source:   "the VM already runs there",
		free:     "fits",
	} {
		if got, ok := lines[node]; !ok || !strings.Contains(got, want) {
			t.Errorf("explain line of %s = %q, want it to contain %q", node, got, want)
		}
	}
	if !strings.Contains(lines[excluded], "excludes it") {
		t.Errorf("explain line of %s = %q, want the VM's own affinity to exclude it", excluded, lines[excluded])
	}
	if !strings.Contains(r.Stdout, "1 of 6 nodes allowed by the request would take virtualmachineinstance vmi.") {
		t.Errorf("explain summary line missing:\n%s", r.Stdout)
	}
	if t.Failed() {
		t.Logf("explain output:\n%s", r.Stdout)
	}
}

// Usage errors exit 2 in kubectl's style and touch nothing.
func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"vmi", "--node", "a", "--dry-run=sometimes"},
		{"vmi", "--node", "a", "--no-such-flag"},
		{"vmi", "--node", "a", "--timeout", "soon"},
		{"explain"},
	} {
		r := framework.Plugin(t, framework.AdminUser, 30*time.Second, args...)
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, "error: ") || r.Stdout != "" {
			t.Errorf("kubectl-migrate %s: %s\nwant exit 2, stderr \"error: ...\", no stdout", strings.Join(args, " "), r)
		}
	}
}
