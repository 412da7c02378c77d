package tests

// The controller's disruptive scenarios (and the mutating webhook's "the target pod is gated"):
// webhooks switched off, the operator killed with SIGKILL, the leader killed.
// They do not call t.Parallel, so go test runs them one at a time and before
// every parallel scenario is released (sequential top-level tests run first);
// this file sorts after smoke_test.go so the smoke scenarios meet a quiet
// cluster. Each restores the default operator (replica "0", webhooks on) when
// it ends.

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// (4) With the webhooks switched off the target pod escapes the gate: the
// operator deletes it and reports TargetPodEscapedGate; the migration fails and
// the VMI never leaves its source (no node matches the term).
func TestOperatorDeletesEscapedTargetPod(t *testing.T) {
	f := fw(t)
	RestoreDefaultOperatorWebhooks(t)
	ns := f.Namespace(t)
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	framework.OperatorScript(t, "webhooks", "off")

	// Watch the VMI for the whole test: it must never run elsewhere.
	stop := make(chan struct{})
	var mu sync.Mutex
	var moved []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			vmi, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(framework.Ctx(t), "vmi", metav1.GetOptions{})
			if err == nil && (vmi.Status.NodeName != source || (vmi.Status.MigrationState != nil && vmi.Status.MigrationState.Completed && !vmi.Status.MigrationState.Failed)) {
				mu.Lock()
				moved = append(moved, fmt.Sprintf("node %q migrationState %s", vmi.Status.NodeName, framework.ToJSON(vmi.Status.MigrationState)))
				mu.Unlock()
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		if len(moved) > 0 {
			t.Errorf("the VMI left its source %s: %v", source, moved[0])
		}
	}()

	term := `{"matchExpressions":[{"key":"kmt-e2e/pool","operator":"In","values":["nowhere"]}]}`
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(term)))
	m = f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTermApplied, "False", framework.ReasonTargetPodEscapedGate, 90*time.Second)
	msg := framework.MigrationCondition(m, framework.ConditionTermApplied).Message
	if !strings.Contains(msg, "was created without the scheduling gate and does not carry the added term") ||
		!(strings.Contains(msg, "deleted it while unscheduled") || strings.Contains(msg, "is outside the term")) {
		t.Errorf("TargetPodEscapedGate message %q does not say the pod was deleted", msg)
	}
	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationFailed, 120*time.Second)
	framework.Eventually(t, 60*time.Second, "escaped target pod gone", func() (bool, string) {
		pods := f.TargetPods(t, ns, m)
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase != k8sv1.PodFailed && p.Status.Phase != k8sv1.PodSucceeded {
				return false, "live target pod " + p.Name + " on " + p.Spec.NodeName
			}
		}
		return true, ""
	})
	ev := waitEvents(t, f, ns, "mig", framework.ReasonTargetPodEscapedGate, true)
	if len(ev) == 0 || ev[0].Type != k8sv1.EventTypeWarning {
		t.Errorf("TargetPodEscapedGate Events %s, want a Warning", framework.EventSummary(ev))
	}
	f.WaitVMIRunning(t, ns, "vmi", source)
}

// RestoreDefaultOperatorWebhooks turns the webhooks back on when the test ends.
func RestoreDefaultOperatorWebhooks(t *testing.T) {
	t.Cleanup(func() { framework.OperatorScript(t, "webhooks", "on") })
}

// (5) and the mutating webhook's gate: with the controller held off, the webhook gates
// every target pod of a VMIM with a term (and only those). Then the operator
// is killed with SIGKILL while it releases them, and restarted: every pod is
// released exactly once with the correct affinity, and every migration lands
// on the named node.
func TestOperatorKilledWhileReleasingGates(t *testing.T) {
	const n = 20
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	source, target := f.Nodes[0], f.Nodes[2]
	ns := f.Namespace(t)
	// Leave a quiet cluster: the VMIs and their launcher pods gone before the
	// next scenario starts (virt-controller would be busy finalizing them).
	t.Cleanup(func() { drainNamespace(t, f, ns) })
	for i := 0; i < n; i++ {
		vmi := framework.NewVMI(fmt.Sprintf("vmi-%02d", i), source)
		if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Create(framework.Ctx(t), vmi, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create VMI: %v", err)
		}
	}
	for i := 0; i < n; i++ {
		f.WaitVMIRunning(t, ns, fmt.Sprintf("vmi-%02d", i), source)
	}

	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0, "--disable-controller")
	migs := make([]*virtv1.VirtualMachineInstanceMigration, n)
	for i := range migs {
		migs[i] = f.CreateMigration(t, f.Admin, ns, framework.NewMigration(fmt.Sprintf("mig-%02d", i), fmt.Sprintf("vmi-%02d", i),
			framework.WithTerm(framework.NodeNameTerm(target))))
	}
	for _, m := range migs {
		pod := f.WaitTargetPod(t, ns, m, "created", func(*k8sv1.Pod) bool { return true })
		sched := framework.PodCondition(&pod, k8sv1.PodScheduled)
		before := &k8sv1.NodeSelector{NodeSelectorTerms: []k8sv1.NodeSelectorTerm{{MatchExpressions: []k8sv1.NodeSelectorRequirement{obsoleteHostModel}}}}
		if !framework.HasGate(&pod) || pod.Spec.NodeName != "" || !reflect.DeepEqual(framework.RequiredNodeAffinity(&pod), before) {
			t.Fatalf("target pod %s of %s: gates %v node %q affinity %s, want our gate, unbound, virt-controller's affinity only",
				pod.Name, m.Name, pod.Spec.SchedulingGates, pod.Spec.NodeName, framework.ToJSON(framework.RequiredNodeAffinity(&pod)))
		}
		if sched != nil && sched.Reason != k8sv1.PodReasonSchedulingGated {
			t.Errorf("target pod %s PodScheduled %s, want SchedulingGated", pod.Name, framework.ToJSON(sched))
		}
	}
	if ev := f.OperatorEvents(t, ns, ""); len(ev) != 0 {
		t.Fatalf("operator Events while the controller is off: %s", framework.EventSummary(ev))
	}

	// Release with the controller on, and kill it as soon as it has started.
	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0)
	// releasedPods maps the VMIM name of each released target pod.
	releasedPods := func() map[string]bool {
		pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: virtv1.MigrationJobLabel})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for i := range pods.Items {
			if !framework.HasGate(&pods.Items[i]) {
				out[pods.Items[i].Annotations[virtv1.MigrationJobNameAnnotation]] = true
			}
		}
		return out
	}
	framework.Eventually(t, 60*time.Second, "the first gate released", func() (bool, string) {
		c := len(releasedPods())
		return c > 0, fmt.Sprintf("%d released", c)
	})
	framework.StopOperator(t, "0", "KILL")
	killed := time.Now() // the replica is gone: StopOperator waits for its exit
	atKill := releasedPods()
	t.Logf("killed the operator with %d of %d gates released", len(atKill), n)
	// Conditions carry whole-second times: start the next replica in a later
	// second, so a lastTransitionTime tells which replica wrote it (termAppliedOnce).
	time.Sleep(time.Until(killed.Truncate(time.Second).Add(time.Second)))

	framework.StartOperator(t, "0", 0)
	for _, m := range migs {
		f.WaitMigrationPhase(t, ns, m.Name, virtv1.MigrationSucceeded, 3*time.Minute)
	}
	for _, m := range migs {
		// A pod released by the killed replica may have lost its Event with it; every
		// other one (released by the next replica) must have exactly one.
		var releasedBy time.Time
		if atKill[m.Name] {
			releasedBy = killed
		}
		termAppliedOnce(t, f, ns, m, target, releasedBy)
	}
}

// replicaIdentity is the Lease identity of the running replica name: the last
// "Started leader election" line of its log.
func replicaIdentity(t *testing.T, name string) string {
	t.Helper()
	var id string
	for _, l := range strings.Split(framework.OperatorLog(name), "\n") {
		if i := strings.Index(l, "Started leader election"); i >= 0 {
			if j := strings.Index(l, "identity="); j >= 0 {
				id = strings.Fields(l[j+len("identity="):])[0]
			}
		}
	}
	if id == "" {
		t.Fatalf("no leader-election identity in the log of replica %s", name)
	}
	return id
}

// leaseHolder reads the operator's Lease holder.
func leaseHolder(t *testing.T, f *framework.Framework) string {
	l, err := f.Admin.Kube.CoordinationV1().Leases(framework.OperatorNamespace).Get(framework.Ctx(t), framework.OperatorLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// (6) Two replicas: the leader is killed with SIGKILL; the other takes over
// within the lease duration (15 s, plus slack for 2 busy cores) and finishes
// the work.
func TestOperatorLeaderFailover(t *testing.T) {
	const leaseDuration, slack = 15 * time.Second, 15 * time.Second
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	source, target := f.Nodes[0], f.Nodes[2]
	ns := f.Namespace(t)
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)

	framework.StartOperator(t, "1", 1, "--disable-webhook")
	id0, id1 := replicaIdentity(t, "0"), replicaIdentity(t, "1")
	framework.Eventually(t, 60*time.Second, "replica 0 ("+id0+") holds the Lease", func() (bool, string) {
		h := leaseHolder(t, f)
		return h == id0, "holder " + h
	})

	killed := time.Now()
	framework.StopOperator(t, "0", "KILL")
	// Replica 0 comes back as a webhook only, so the migration can be admitted
	// and gated; only replica 1 may release it.
	framework.StartOperator(t, "0", 0, "--disable-controller")
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(target))))

	var took time.Duration
	framework.Eventually(t, leaseDuration+slack+10*time.Second, "replica 1 ("+id1+") takes the Lease", func() (bool, string) {
		h := leaseHolder(t, f)
		took = time.Since(killed)
		return h == id1, "holder " + h
	})
	t.Logf("replica 1 took over %s after the kill", took.Round(100*time.Millisecond))
	if took > leaseDuration+slack {
		t.Errorf("takeover took %s, want within %s + %s", took, leaseDuration, slack)
	}
	f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 2*time.Minute)
	termAppliedOnce(t, f, ns, m, target, time.Time{})
	f.WaitVMIRunning(t, ns, "vmi", target)
}

// drainNamespace deletes the VMIs of ns and waits (bounded) until no pod is left.
func drainNamespace(t *testing.T, f *framework.Framework, ns string) {
	ctx := framework.Ctx(t)
	if err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Logf("delete VMIs in %s: %v", ns, err)
		return
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("pods still in %s after 90s", ns)
}
