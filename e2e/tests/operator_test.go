package tests

// The controller's scenarios that leave the operator as it is (they run in parallel):
// the operator replica "0" that e2e/hooks/10-operator.sh started runs as its
// ServiceAccount with manifests/default's RBAC. The disruptive ones (webhooks
// off, kill -9, leader failover) are in survival_test.go.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// virt-controller adds this requirement to every required term of a launcher
// pod of a host-model VMI (a term of its own when the VMI has none).
var obsoleteHostModel = k8sv1.NodeSelectorRequirement{Key: "node-labeller.kubevirt.io/obsolete-host-model", Operator: k8sv1.NodeSelectorOpDoesNotExist}

func nodeNameReq(node string) k8sv1.NodeSelectorRequirement {
	return k8sv1.NodeSelectorRequirement{Key: "metadata.name", Operator: k8sv1.NodeSelectorOpIn, Values: []string{node}}
}

// termAppliedOnce checks the released target pod of a VMIM whose VMI had no
// required node affinity: the term is ANDed into virt-controller's only term, once, the
// gate is gone, the pod's spec changed exactly once (generation 2), the VMIM
// carries the whole final report (Applied, Scheduled on target), and exactly one
// TermApplied Event was recorded.
//
// killed is when the replica that may have released the pod was killed with
// SIGKILL (zero when none was). The operator records an Event only after the
// status write it describes, and no later replica records it again (the
// condition remembers the transition), so a replica killed between its status
// write and its Event takes that one Event with it: then, and only then, zero
// Events is right — the Applied condition must have been written before the
// kill. It must never be recorded twice.
func termAppliedOnce(t *testing.T, f *framework.Framework, ns string, m *virtv1.VirtualMachineInstanceMigration, target string, killed time.Time) {
	t.Helper()
	pods := f.TargetPods(t, ns, m)
	if len(pods) != 1 {
		t.Errorf("VMIM %s: %d target pods, want 1", m.Name, len(pods))
		return
	}
	pod := pods[0]
	want := &k8sv1.NodeSelector{NodeSelectorTerms: []k8sv1.NodeSelectorTerm{{
		MatchExpressions: []k8sv1.NodeSelectorRequirement{obsoleteHostModel},
		MatchFields:      []k8sv1.NodeSelectorRequirement{nodeNameReq(target)}}}}
	if got := framework.RequiredNodeAffinity(&pod); !reflect.DeepEqual(got, want) {
		t.Errorf("VMIM %s: target pod required affinity = %s, want %s", m.Name, framework.ToJSON(got), framework.ToJSON(want))
	}
	if len(pod.Spec.SchedulingGates) != 0 {
		t.Errorf("VMIM %s: target pod still has gates %v", m.Name, pod.Spec.SchedulingGates)
	}
	if pod.Spec.NodeName != target {
		t.Errorf("VMIM %s: target pod on %q, want %q", m.Name, pod.Spec.NodeName, target)
	}
	if pod.Generation != 0 && pod.Generation != 2 {
		t.Errorf("VMIM %s: target pod generation %d, want 2 (created gated, released once)", m.Name, pod.Generation)
	}
	final := f.WaitFinalReport(t, ns, m.Name, target, 60*time.Second)
	applied := framework.MigrationCondition(final, framework.ConditionTermApplied)
	// Whole seconds: the caller started the next replica in a later second than the kill.
	byKilled := !killed.IsZero() && !applied.LastTransitionTime.Time.After(killed.Truncate(time.Second))
	// The Event follows the status write: wait for it (bounded), then count.
	ev := waitEvents(t, f, ns, m.Name, framework.ReasonTermApplied, !byKilled)
	switch {
	case len(ev) == 0 && byKilled:
		t.Logf("VMIM %s: %s written at %s by the replica killed at %s, which died before its Event", m.Name,
			framework.ConditionTermApplied, applied.LastTransitionTime.UTC().Format(time.RFC3339), killed.UTC().Format(time.RFC3339Nano))
	case len(ev) != 1 || ev[0].Type != k8sv1.EventTypeNormal:
		t.Errorf("VMIM %s: TermApplied Events %s, want exactly one Normal (%s written at %s)", m.Name, framework.EventSummary(ev),
			framework.ConditionTermApplied, applied.LastTransitionTime.UTC().Format(time.RFC3339))
	}
}

// (1) The term is ANDed into each of the two required terms the VMI's pod
// carries (appended, never ORed as a third term); the scheduler binds the pod
// to the named node; the VMIM succeeds with the conditions and Events of the
// contract.
func TestOperatorANDsTermIntoEveryRequiredTerm(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	source, target := f.Nodes[0], f.Nodes[2]
	t1 := framework.HostnameTerm(source, f.Nodes[1], target)
	t2 := k8sv1.NodeSelectorTerm{MatchExpressions: []k8sv1.NodeSelectorRequirement{{Key: k8sv1.LabelOSStable, Operator: k8sv1.NodeSelectorOpIn, Values: []string{"linux"}}}}
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source,
		framework.WithRequiredNodeAffinity(t1), framework.WithRequiredNodeAffinity(t2)), source)

	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(target))))
	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 90*time.Second)

	pods := f.TargetPods(t, ns, m)
	if len(pods) != 1 {
		t.Fatalf("%d target pods, want 1", len(pods))
	}
	pod := pods[0]
	// virt-controller renders each of the VMI's terms with one more requirement
	// for a host-model CPU (obsoleteHostModel); the operator appends the term's
	// matchFields to both.
	golden := &k8sv1.NodeSelector{NodeSelectorTerms: []k8sv1.NodeSelectorTerm{
		{MatchExpressions: append(t1.MatchExpressions, obsoleteHostModel), MatchFields: []k8sv1.NodeSelectorRequirement{nodeNameReq(target)}},
		{MatchExpressions: append(t2.MatchExpressions, obsoleteHostModel), MatchFields: []k8sv1.NodeSelectorRequirement{nodeNameReq(target)}},
	}}
	if got := framework.RequiredNodeAffinity(&pod); !reflect.DeepEqual(got, golden) {
		t.Errorf("target pod required node affinity =\n%s\nwant the golden AND\n%s", framework.ToJSON(got), framework.ToJSON(golden))
	}
	// The preferred term (NewVMI's preference for the source) is untouched.
	if pref := pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(pref) != 1 ||
		!reflect.DeepEqual(pref[0].Preference, framework.HostnameTerm(source)) || pref[0].Weight != 100 {
		t.Errorf("preferred terms changed: %s", framework.ToJSON(pref))
	}
	if len(pod.Spec.SchedulingGates) != 0 || pod.Spec.NodeName != target {
		t.Errorf("target pod gates %v node %q, want none and %q", pod.Spec.SchedulingGates, pod.Spec.NodeName, target)
	}
	f.WaitVMIRunning(t, ns, "vmi", target)

	// The whole report, whichever of the operator and KubeVirt wrote first.
	m = f.WaitFinalReport(t, ns, "mig", target, 60*time.Second)
	applied := framework.MigrationCondition(m, framework.ConditionTermApplied)
	if wantMsg := fmt.Sprintf("Target pod %s/%s requires the added term", ns, pod.Name); !strings.HasPrefix(applied.Message, wantMsg) {
		t.Errorf("condition %s = %s, want message %q...", framework.ConditionTermApplied, framework.ToJSON(applied), wantMsg)
	}
	sched := framework.MigrationCondition(m, framework.ConditionTargetUnsched)
	if want := fmt.Sprintf("Target pod %s/%s was scheduled to node %s", ns, pod.Name, target); sched.Message != want {
		t.Errorf("condition %s = %s, want message %q", framework.ConditionTargetUnsched, framework.ToJSON(sched), want)
	}
	ev := waitEvents(t, f, ns, "mig", framework.ReasonTermApplied, true)
	wantEv := fmt.Sprintf("Released scheduling gate of target pod %s/%s with the added term", ns, pod.Name)
	if len(ev) != 1 || ev[0].Type != k8sv1.EventTypeNormal || !strings.HasPrefix(ev[0].Message, wantEv) || ev[0].InvolvedObject.UID != m.UID {
		t.Errorf("TermApplied Events %s, want one Normal %q... about the VMIM", framework.EventSummary(ev), wantEv)
	}
	if ev := waitEvents(t, f, ns, "mig", framework.EventTargetPodScheduled, true); len(ev) != 1 || ev[0].Type != k8sv1.EventTypeNormal || ev[0].Message != sched.Message {
		t.Errorf("%s Events %s, want exactly one Normal %q", framework.EventTargetPodScheduled, framework.EventSummary(ev), sched.Message)
	}
}

// (2) The term allows a cordoned node, a node with an untolerated taint, a node
// the VMI's own affinity excludes and the node the VMI runs on:
// targetPodUnschedulable=True names each reason; uncordoning lets the pod
// schedule and the condition flips to False/Scheduled.
// wantUnschedulableMessage checks that the VMIM's targetPodUnschedulable condition message
// contains every one of wants, and returns the message.
func wantUnschedulableMessage(t *testing.T, m *virtv1.VirtualMachineInstanceMigration, wants ...string) string {
	t.Helper()
	msg := framework.MigrationCondition(m, framework.ConditionTargetUnsched).Message
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("condition message %q lacks %q", msg, want)
		}
	}
	return msg
}

// A term that allows only the node the VM runs on can never be scheduled: the operator says
// so as permanent at once (the default operator has no --fail-fast-unschedulable, so the
// target pod stays and KubeVirt's own timeout ends the migration).
func TestOperatorSaysNeverSchedulable(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(source))))
	m := f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTargetUnsched, "True", framework.ReasonNeverSchedulable, 90*time.Second)
	wantUnschedulableMessage(t, m,
		"can never be scheduled while this migration lasts",
		source+": the VM already runs there",
		"KubeVirt fails the migration when its unschedulable timeout passes")
	if pods := f.TargetPods(t, ns, m); len(pods) != 1 || pods[0].DeletionTimestamp != nil {
		t.Errorf("want the one target pod kept without --fail-fast-unschedulable, got %d", len(pods))
	}
}

// The same permanent case with --fail-fast-unschedulable: the operator deletes the target
// pod, KubeVirt fails the migration at once ("target pod was removed") instead of after its
// 5-minute unschedulable timeout, the VM keeps running where it was, and the Failed VMIM
// still says why (the condition and one Warning Event). Not parallel: it restarts replica 0
// with the flag, and puts the default operator back afterwards.
func TestOperatorFailFastUnschedulable(t *testing.T) {
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0, "--fail-fast-unschedulable")
	ns := f.Namespace(t)
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	start := time.Now()
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(source))))
	f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationFailed, 2*time.Minute)
	t.Logf("VMIM Failed %s after its create (KubeVirt's own unschedulable timeout: 5m)", time.Since(start).Round(time.Millisecond))
	// The Failed VMIM still carries the report (the condition may land just after the phase).
	m := f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTargetUnsched, "True", framework.ReasonNeverSchedulable, 30*time.Second)
	wantUnschedulableMessage(t, m,
		"can never be scheduled while this migration lasts",
		source+": the VM already runs there",
		"deleted it so that KubeVirt fails the migration now (--fail-fast-unschedulable)")
	if ev := waitEvents(t, f, ns, "mig", framework.ReasonNeverSchedulable, true); len(ev) != 1 || ev[0].Type != k8sv1.EventTypeWarning {
		t.Errorf("%s Events %s, want exactly one Warning", framework.ReasonNeverSchedulable, framework.EventSummary(ev))
	}
	f.WaitVMIRunning(t, ns, "vmi", source) // fails unless Running on the source
}

func TestOperatorExplainsUnschedulableTarget(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	source := f.Nodes[0]
	own := k8sv1.NodeSelectorTerm{MatchExpressions: []k8sv1.NodeSelectorRequirement{{Key: "kmt-e2e/zone", Operator: k8sv1.NodeSelectorOpNotIn, Values: []string{"excluded"}}}}
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source, framework.WithRequiredNodeAffinity(own)), source)

	sfx := framework.RandomSuffix()
	cordoned, tainted, excluded := "x-"+sfx+"-cordoned", "x-"+sfx+"-tainted", "x-"+sfx+"-excluded"
	f.ExtraNode(t, cordoned, "192.168.70.1", func(n *k8sv1.Node) { n.Spec.Unschedulable = true })
	f.ExtraNode(t, tainted, "192.168.70.2", func(n *k8sv1.Node) {
		n.Spec.Taints = []k8sv1.Taint{{Key: "kmt-e2e/dedicated", Value: "db", Effect: k8sv1.TaintEffectNoSchedule}}
	})
	f.ExtraNode(t, excluded, "192.168.70.3", func(n *k8sv1.Node) { n.Labels["kmt-e2e/zone"] = "excluded" })

	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi",
		framework.WithTerm(framework.HostnamesTerm(cordoned, tainted, excluded, source))))
	m := f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTargetUnsched, "True", framework.ReasonUnschedulable, 90*time.Second)
	msg := wantUnschedulableMessage(t, m,
		"is unschedulable: 0/",
		cordoned+": cordoned",
		tainted+": taint kmt-e2e/dedicated=db:NoSchedule not tolerated",
		excluded+": VM's own affinity `",
		source+": the VM already runs there")
	if i := strings.Index(msg, excluded+": "); i >= 0 && !strings.Contains(msg[i:], "excludes it") {
		t.Errorf("node %s not reported as excluded by the VM's own affinity: %s", excluded, msg)
	}
	if ev := waitEvents(t, f, ns, "mig", framework.EventTargetPodUnschedulable, true); len(ev) == 0 || ev[0].Type != k8sv1.EventTypeWarning {
		t.Errorf("TargetPodUnschedulable Events %s, want a Warning", framework.EventSummary(ev))
	}

	// Uncordon: the scheduler binds the pod there, the condition flips.
	if _, err := f.Admin.Kube.CoreV1().Nodes().Patch(framework.Ctx(t), cordoned, types.MergePatchType,
		[]byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("uncordon %s: %v", cordoned, err)
	}
	m = f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTargetUnsched, "False", framework.ReasonScheduled, 90*time.Second)
	if c := framework.MigrationCondition(m, framework.ConditionTargetUnsched); !strings.HasSuffix(c.Message, "was scheduled to node "+cordoned) {
		t.Errorf("Scheduled message %q does not name %s", c.Message, cordoned)
	}
	f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 90*time.Second)
	f.WaitVMIRunning(t, ns, "vmi", cordoned)
}

// (3) and the webhooks' rule: a VMIM without a term and its target pod pass untouched: no
// gate ever (the pod's spec never changed: generation 1), the pod's node
// affinity is the VMI's, exactly as the source pod virt-controller rendered
// without any migration, no operator condition, no operator Event.
func TestOperatorLeavesPlainMigrationUntouched(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.OwnerNamespace(t)
	source := f.Nodes[1]
	f.StartVMI(t, f.VMOwner, ns, framework.NewVMI("vmi", source,
		framework.WithRequiredNodeAffinity(framework.HostnameTerm(f.Nodes...))), source)
	srcPods, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher"})
	if err != nil || len(srcPods.Items) != 1 {
		t.Fatalf("source launcher pods: %v (%d)", err, len(srcPods.Items))
	}
	srcPod := srcPods.Items[0]

	m := f.CreateMigration(t, f.VMOwner, ns, framework.NewMigration("mig", "vmi"))
	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 90*time.Second)
	pods := f.TargetPods(t, ns, m)
	if len(pods) != 1 {
		t.Fatalf("%d target pods, want 1", len(pods))
	}
	pod := pods[0]
	if len(pod.Spec.SchedulingGates) != 0 {
		t.Errorf("target pod has gates %v", pod.Spec.SchedulingGates)
	}
	if pod.Generation > 1 {
		t.Errorf("target pod generation %d: its spec changed after creation", pod.Generation)
	}
	if !reflect.DeepEqual(pod.Spec.Affinity.NodeAffinity, srcPod.Spec.Affinity.NodeAffinity) {
		t.Errorf("target pod node affinity %s differs from the source pod's %s", framework.ToJSON(pod.Spec.Affinity.NodeAffinity), framework.ToJSON(srcPod.Spec.Affinity.NodeAffinity))
	}
	for _, c := range m.Status.Conditions {
		if string(c.Type) == framework.ConditionTermApplied || string(c.Type) == framework.ConditionTargetUnsched {
			t.Errorf("plain VMIM has the operator's condition %s", framework.ToJSON(c))
		}
	}
	if ev := f.OperatorEvents(t, ns, ""); len(ev) != 0 {
		t.Errorf("operator Events in the namespace: %s", framework.EventSummary(ev))
	}
	for _, mf := range pod.ManagedFields {
		if mf.Operation == metav1.ManagedFieldsOperationUpdate && mf.Subresource == "" && mf.Manager != "virt-controller" {
			t.Errorf("target pod spec/metadata updated by %q: %s", mf.Manager, framework.ToJSON(mf))
		}
	}
}

// waitEvents returns the operator's Events with reason about name; when want
// is set it first waits (bounded) for at least one, since Events are recorded
// after the status write, possibly after the migration completed.
func waitEvents(t *testing.T, f *framework.Framework, ns, name, reason string, want bool) []k8sv1.Event {
	t.Helper()
	var ev []k8sv1.Event
	deadline := time.Now().Add(20 * time.Second)
	for {
		ev = framework.EventsWithReason(f.OperatorEvents(t, ns, name), reason)
		if !want || len(ev) > 0 || time.Now().After(deadline) {
			return ev
		}
		time.Sleep(100 * time.Millisecond)
	}
}
