package tests

// MigrationTargetPolicy: evacuations (kubectl drain through virt-api's eviction
// interceptor and virt-controller's evacuation controller) steered by an admin's
// policy, the forgery of its annotation refused, policies validated.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

var policyGVR = schema.GroupVersionResource{Group: framework.PolicyGroup, Version: framework.PolicyVersion, Resource: framework.PolicyResource}

// createPolicy creates a MigrationTargetPolicy as c from its spec (JSON) and deletes it when
// the test ends.
func createPolicy(t *testing.T, f *framework.Framework, c *framework.Client, name, specJSON string) error {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		t.Fatalf("policy spec: %v", err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": framework.PolicyGroup + "/" + framework.PolicyVersion,
		"kind":       framework.PolicyKind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	_, err := c.Dynamic.Resource(policyGVR).Create(framework.Ctx(t), obj, metav1.CreateOptions{})
	if err == nil {
		t.Cleanup(func() {
			if err := f.Admin.Dynamic.Resource(policyGVR).Delete(framework.Ctx(t), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("delete policy %s: %v", name, err)
			}
		})
	}
	return err
}

// poolWithRacks creates extra fake nodes labelled kmt-e2e/pool=pool and rack=<rack> and
// tainted as poolNodes' are, one per entry of racks, named pool-<rack>-<i>.
func poolWithRacks(t *testing.T, f *framework.Framework, pool string, octet int, racks ...string) []string {
	t.Helper()
	var names []string
	for i, rack := range racks {
		name := fmt.Sprintf("%s-%s-%d", pool, rack, i)
		rack := rack
		f.ExtraNode(t, name, fmt.Sprintf("192.168.%d.%d", octet, i+1), func(node *k8sv1.Node) {
			node.Labels["kmt-e2e/pool"] = pool
			node.Labels["rack"] = rack
			node.Spec.Taints = append(node.Spec.Taints, poolTaint(pool))
		})
		names = append(names, name)
	}
	return names
}

// A drain of a rack-a node with a policy "rack a → rack b": every VM goes to rack b, none to
// rack c, though the scheduler alone could pick either; each evacuation VMIM carries the
// policy's term and name and reports the term applied.
func TestPolicyDrainSteersEvacuations(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-pol-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 77, "a", "b", "b", "c", "c")
	src := nodes[0]
	policy := pool + "-rack-a-to-b"
	const term = `{"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]}`
	if err := createPolicy(t, f, f.Admin, policy, fmt.Sprintf(`{
		"match": {"origin": "Evacuation", "sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q, "rack": "a"}}},
		"addedNodeSelectorTerm": %s}`, pool, term)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	vms := []string{"vm-1", "vm-2", "vm-3"}
	for _, vm := range vms {
		f.StartVMI(t, f.Admin, ns, framework.NewVMI(vm, src, inPool(pool), framework.LiveMigrateOnEviction), src)
	}

	if r := drain(t, src, "120s"); r.Code != 0 {
		t.Fatalf("kubectl drain %s: %s", src, r)
	}
	rackB := map[string]bool{nodes[1]: true, nodes[2]: true}
	for _, vm := range vms {
		vmi := f.WaitVMIRunning(t, ns, vm, "")
		if !rackB[vmi.Status.NodeName] {
			t.Errorf("VMI %s on %s after the drain, want a rack-b node %v", vm, vmi.Status.NodeName, nodes[1:3])
		}
	}
	evac := evacuationVMIMs(t, f, ns)
	if len(evac) != len(vms) {
		t.Fatalf("evacuation VMIMs: %d, want %d", len(evac), len(vms))
	}
	for _, m := range evac {
		if got := m.Annotations[framework.AddedTermAnnotation]; got != term {
			t.Errorf("VMIM %s term annotation %q, want the policy's %q", m.Name, got, term)
		}
		if got := m.Annotations[framework.PolicyAnnotation]; got != policy {
			t.Errorf("VMIM %s policy annotation %q, want %q", m.Name, got, policy)
		}
		f.WaitMigrationCondition(t, ns, m.Name, framework.ConditionTermApplied, "True", framework.ReasonTermApplied, 30*time.Second)
		if m.Status.Phase != virtv1.MigrationSucceeded {
			t.Errorf("VMIM %s phase %s", m.Name, m.Status.Phase)
		}
	}
	// The policy's status counts them and is Ready.
	framework.Eventually(t, 60*time.Second, "policy status", func() (bool, string) {
		p, err := f.Admin.Dynamic.Resource(policyGVR).Get(framework.Ctx(t), policy, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "matchedMigrations")
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		ready := ""
		for _, c := range conds {
			if cm, ok := c.(map[string]any); ok && cm["type"] == "Ready" {
				ready, _ = cm["status"].(string)
			}
		}
		last, _, _ := unstructured.NestedString(p.Object, "status", "lastAppliedMigration")
		return n == int64(len(vms)) && ready == "True" && strings.HasPrefix(last, ns+"/kubevirt-evacuation-"),
			fmt.Sprintf("status %v", p.Object["status"])
	})
}

// A policy whose term allows no node: the evacuation VMIM waits with the reason node by
// node, and the drain waits as KubeVirt's does (here until its timeout); the VM stays.
func TestPolicyAllowingNoNodeReportsWhy(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-polnone-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 78, "a", "b")
	src := nodes[0]
	if err := createPolicy(t, f, f.Admin, pool+"-nowhere", fmt.Sprintf(`{
		"match": {"sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q}}},
		"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["z"]}]}}`, pool)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vm", src, inPool(pool), framework.LiveMigrateOnEviction), src)

	r := drain(t, src, "25s")
	if r.Code == 0 {
		t.Fatalf("kubectl drain %s succeeded, want it to wait for the evacuation until its timeout: %s", src, r)
	}
	evac := evacuationVMIMs(t, f, ns)
	if len(evac) == 0 {
		t.Fatalf("no evacuation VMIM after the drain: %s", r)
	}
	m := f.WaitMigrationCondition(t, ns, evac[0].Name, framework.ConditionTargetUnsched, "True", framework.ReasonUnschedulable, 60*time.Second)
	c := framework.MigrationCondition(m, framework.ConditionTargetUnsched)
	// The scheduler's own message, then the operator's explanation: no node carries rack=z.
	for _, want := range []string{"didn't match Pod's node affinity/selector", "no node matches the added term"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("targetPodUnschedulable message %q does not say %q", c.Message, want)
		}
	}
	f.WaitVMIRunning(t, ns, "vm", src)
}

// Nobody but the operator's webhook (for virt-controller's evacuations) may set the policy
// annotation: not a VM owner, not an admin, not with the policy's exact term.
func TestPolicyAnnotationCannotBeForged(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.OwnerNamespace(t)
	pool := "kmt-polforge-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 79, "a", "b")
	policy := pool + "-p"
	const term = `{"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]}`
	if err := createPolicy(t, f, f.Admin, policy, fmt.Sprintf(`{
		"match": {"sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q}}}, "addedNodeSelectorTerm": %s}`, pool, term)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", nodes[0], inPool(pool)), nodes[0])
	forged := framework.NewMigration("forged", "vmi",
		framework.WithTerm(term),
		framework.WithAnnotation(framework.PolicyAnnotation, policy),
		framework.WithAnnotation(virtv1.EvacuationMigrationAnnotation, nodes[0]))
	field := "metadata.annotations[" + framework.PolicyAnnotation + "]"
	for _, c := range []*framework.Client{f.VMOwner, f.Admin} {
		_, err := c.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t), forged, metav1.CreateOptions{})
		want := fmt.Sprintf(`admission webhook "vmim.migration-target.kubevirt.io" denied the request: %s is set only by the operator's webhook: only KubeVirt's virt-controller ("system:serviceaccount:kubevirt:kubevirt-controller") creates VMIMs the operator attaches a policy to; user %q may not`, field, c.User)
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("%s forging the policy annotation: err = %v\nwant Forbidden %q", c.User, err, want)
		}
	}
}

// Only admins write policies (RBAC on the CRD); a broken one is refused with every rule it
// breaks, by the schema's CEL rules or by the webhook's checks of the term.
func TestPolicyValidation(t *testing.T) {
	t.Parallel()
	f := fw(t)
	name := "kmt-polval-" + framework.RandomSuffix()
	if err := createPolicy(t, f, f.VMOwner, name, `{"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}}`); !apierrors.IsForbidden(err) {
		t.Errorf("vm-owner creating a policy: err = %v, want Forbidden", err)
	}
	err := createPolicy(t, f, f.Admin, name, `{"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In"}]}}`)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "values must be given when operator is In or NotIn") {
		t.Errorf("policy with In and no values: err = %v, want the schema's CEL rule", err)
	}
	err = createPolicy(t, f, f.Admin, name, `{"match": {"vmiSelector": {"matchLabels": {"bad key!": "v"}}},
		"addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}}`)
	for _, want := range []string{
		`admission webhook "policy.migration-target.kubevirt.io" denied the request`,
		`spec.match.vmiSelector.matchLabels: Invalid value: "bad key!"`,
		`spec.addedNodeSelectorTerm.matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid policy: err = %v, want it to contain %q", err, want)
		}
	}
	if err := createPolicy(t, f, f.Admin, name, `{"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}}`); err != nil {
		t.Errorf("valid policy: %v", err)
	}
}

// The descheduler's background eviction (RemovePodsViolatingNodeTaints on a tainted rack-a
// node) is steered by the policy for origin Descheduler; a policy for origin Evacuation
// with a higher priority and another term is not chosen, since virt-api marked the VMI
// kubevirt.io/eviction-source: descheduler.
func TestPolicyDeschedulerOrigin(t *testing.T) {
	t.Parallel()
	framework.RequireEvictionSource(t)
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-poldesc-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 82, "a", "b", "c")
	src := nodes[0]
	desched := pool + "-desched-to-b"
	if err := createPolicy(t, f, f.Admin, desched, fmt.Sprintf(`{"priority": 1,
		"match": {"origin": "Descheduler", "sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q}}},
		"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}}`, pool)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	if err := createPolicy(t, f, f.Admin, pool+"-drains-to-c", fmt.Sprintf(`{"priority": 9,
		"match": {"origin": "Evacuation", "sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q}}},
		"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["c"]}]}}`, pool)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", src, inPool(pool), framework.LiveMigrateOnEviction), src)

	taintKey := "kmt-e2e/poldesc"
	taintNoSchedule(t, f, src, taintKey, ns)
	run := f.RunDescheduler(t, ns, framework.DeschedulerPolicy{
		Plugin:       "RemovePodsViolatingNodeTaints",
		Args:         map[string]any{"includedTaints": []string{taintKey + "=" + ns}},
		Namespace:    ns,
		NodeSelector: "kmt-e2e/pool=" + pool,
		PodSelector:  map[string]string{virtv1.AppLabel: "virt-launcher"},
	})
	if got := run.Lines("Eviction in background assumed", ""); len(got) != 1 {
		t.Fatalf("descheduler run: %d background evictions, want 1:\n%s", len(got), run.Log)
	}
	var mig virtv1.VirtualMachineInstanceMigration
	framework.Eventually(t, 60*time.Second, "the evacuation VMIM", func() (bool, string) {
		ms := evacuationVMIMs(t, f, ns)
		if len(ms) != 1 {
			return false, fmt.Sprintf("%d evacuation VMIMs", len(ms))
		}
		mig = ms[0]
		return true, ""
	})
	if got := mig.Annotations[framework.PolicyAnnotation]; got != desched {
		t.Errorf("evacuation VMIM %s policy %q, want %q (origin Descheduler)", mig.Name, got, desched)
	}
	f.WaitMigrationPhase(t, ns, mig.Name, virtv1.MigrationSucceeded, 90*time.Second)
	f.WaitVMIRunning(t, ns, "vmi", nodes[1])
}
