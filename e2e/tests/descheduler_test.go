package tests

// Scenarios with the real descheduler (sigs.k8s.io/descheduler, run once per
// call, out of cluster, scoped to the scenario's namespace and pool nodes) and
// KubeVirt's real virt-api and virt-controller: evictions in background end to
// end. Every upstream fact relied on is in e2e/README.md, "The descheduler".

import (
	"fmt"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// KubeVirt's and the descheduler's shared vocabulary (pkg/virt-controller/watch/descheduler
// in KubeVirt, pkg/descheduler/evictions/evictions.go in the descheduler).
const (
	requestEvictOnly   = "descheduler.alpha.kubernetes.io/request-evict-only"
	evictionInProgress = "descheduler.alpha.kubernetes.io/eviction-in-progress"
)

// launcherPod returns the VMI's running virt-launcher pod on node.
func launcherPod(t *testing.T, f *framework.Framework, ns string, vmi *virtv1.VirtualMachineInstance, node string) k8sv1.Pod {
	t.Helper()
	pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{
		LabelSelector: virtv1.CreatedByLabel + "=" + string(vmi.UID)})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range pods.Items {
		found = append(found, fmt.Sprintf("%s@%s:%s", p.Name, p.Spec.NodeName, p.Status.Phase))
		if p.Spec.NodeName == node && p.Status.Phase == k8sv1.PodRunning {
			return p
		}
	}
	t.Fatalf("no running launcher pod of VMI %s/%s on %s: %v", ns, vmi.Name, node, found)
	return k8sv1.Pod{}
}

// liveMigrateVMI starts a LiveMigrate VMI on src.
func liveMigrateVMI(t *testing.T, f *framework.Framework, ns, src string, opts ...framework.VMIOption) *virtv1.VirtualMachineInstance {
	t.Helper()
	vmi := framework.NewVMI("vmi", src, append(opts, framework.LiveMigrateOnEviction)...)
	return f.StartVMI(t, f.Admin, ns, vmi, src)
}

// taintNoSchedule sets the node's taints to key=value:NoSchedule.
func taintNoSchedule(t *testing.T, f *framework.Framework, node, key, value string) {
	t.Helper()
	taint := fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"value":%q,"effect":"NoSchedule"}]}}`, key, value)
	if _, err := f.Admin.Kube.CoreV1().Nodes().Patch(framework.Ctx(t), node, types.MergePatchType, []byte(taint), metav1.PatchOptions{}); err != nil {
		t.Fatalf("taint %s: %v", node, err)
	}
}

// evacuationVMIMs lists the VMIMs virt-controller's evacuation controller created for
// the VMI (generateName kubevirt-evacuation-).
func evacuationVMIMs(t *testing.T, f *framework.Framework, ns string) []virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []virtv1.VirtualMachineInstanceMigration
	for _, m := range list.Items {
		if !strings.HasPrefix(m.Name, "kubevirt-evacuation-") {
			t.Errorf("VMIM %s in %s: only evacuation VMIMs were expected", m.Name, ns)
			continue
		}
		out = append(out, m)
	}
	return out
}

// waitMarkedByDescheduler waits until virt-api's eviction interceptor marked the VMI
// for evacuation of src as a descheduler eviction, and virt-controller's evacuation
// controller created exactly one VMIM for it; it returns that VMIM. Before KubeVirt v1.7
// virt-api writes only the evacuation mark (no kubevirt.io/eviction-source) and VMIMs have
// no spec.priority: those two checks are subtests that skip there, saying so.
func waitMarkedByDescheduler(t *testing.T, f *framework.Framework, ns, src string) virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	t.Run("EvictionSourceMark", func(t *testing.T) {
		framework.RequireEvictionSource(t)
		framework.Eventually(t, 30*time.Second, "VMI marked by virt-api for a descheduler evacuation of "+src, func() (bool, string) {
			cur, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(framework.Ctx(t), "vmi", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cur.Status.EvacuationNodeName == src && cur.Annotations[virtv1.EvictionSourceAnnotation] == "descheduler",
				fmt.Sprintf("evacuationNodeName %q, annotations %v", cur.Status.EvacuationNodeName, cur.Annotations)
		})
	})
	var mig virtv1.VirtualMachineInstanceMigration
	framework.Eventually(t, 30*time.Second, "one evacuation VMIM for "+src, func() (bool, string) {
		ms := evacuationVMIMs(t, f, ns)
		if len(ms) != 1 {
			return false, fmt.Sprintf("%d evacuation VMIMs", len(ms))
		}
		mig = ms[0]
		return true, ""
	})
	if got := mig.Annotations[virtv1.EvacuationMigrationAnnotation]; got != src {
		t.Errorf("VMIM %s: %s = %q, want the evacuated node %s", mig.Name, virtv1.EvacuationMigrationAnnotation, got, src)
	}
	// A descheduler eviction gets the lower of the two evacuation priorities
	// (evacuation.go GenerateNewMigration).
	t.Run("SystemMaintenancePriority", func(t *testing.T) {
		framework.SkipWithout(t, f.MigrationSpecHas(t, "priority"),
			"KubeVirt "+framework.KubeVirtVersion()+" has no spec.priority on VirtualMachineInstanceMigrations (added in v1.7)")
		if mig.Spec.Priority == nil || *mig.Spec.Priority != virtv1.PrioritySystemMaintenance {
			t.Errorf("VMIM %s: spec.priority %v, want %s for a descheduler eviction", mig.Name, mig.Spec.Priority, virtv1.PrioritySystemMaintenance)
		}
	})
	return mig
}

// waitLanded waits until the evacuation VMIM succeeded and the VMI runs on dst with
// virt-api's mark gone (virt-handler's ackMigrationCompletion clears both).
func waitLanded(t *testing.T, f *framework.Framework, ns, migName, dst string) {
	t.Helper()
	f.WaitMigrationPhase(t, ns, migName, virtv1.MigrationSucceeded, 90*time.Second)
	vmi := f.WaitVMIRunning(t, ns, "vmi", dst)
	if vmi.Status.EvacuationNodeName != "" {
		t.Errorf("VMI still marked for evacuation of %q after landing on %s", vmi.Status.EvacuationNodeName, dst)
	}
	if v, ok := vmi.Annotations[virtv1.EvictionSourceAnnotation]; ok {
		t.Errorf("VMI still annotated %s=%s after landing on %s", virtv1.EvictionSourceAnnotation, v, dst)
	}
}

// wantBackgroundEviction checks a run's log: the evictor asked for the eviction,
// virt-api's 429 made it an eviction in background (counted, not a failure).
func wantBackgroundEviction(t *testing.T, run framework.DeschedulerRun, pod string) {
	t.Helper()
	if got := run.Lines("Eviction in background assumed", pod); len(got) != 1 {
		t.Errorf("run %s: %d lines \"Eviction in background assumed\" for %s, want 1:\n%s", run.Name, len(got), pod, run.Log)
	}
	if got := run.Lines("Error evicting pod", ""); len(got) != 0 {
		t.Errorf("run %s: eviction errors: %v", run.Name, got)
	}
	wantNothingEvicted(t, run)
}

// wantNothingEvicted checks a run's closing line: no pod evicted outright, at least one
// eviction in background tracked. The tracked count is cluster-wide: the evictor's pod
// informer is not limited to the policy's namespaces, so a parallel scenario's pod with
// an eviction in progress is counted too.
func wantNothingEvicted(t *testing.T, run framework.DeschedulerRun) {
	t.Helper()
	evicted, requests, ok := run.Summary()
	if !ok || evicted != "0" || requests == "0" {
		t.Errorf("run %s: summary totalEvicted=%s evictionRequests=%s (found %t), want 0 evicted and at least 1 request in background", run.Name, evicted, requests, ok)
	}
}

// A LiveMigrate VMI on a pool node that becomes tainted NoSchedule. The descheduler
// (RemovePodsViolatingNodeTaints for that taint only) evicts its launcher pod, which
// virt-controller annotated request-evict-only; virt-api answers 429 "Eviction
// triggered evacuation" and marks the VMI (evacuationNodeName, eviction-source
// descheduler); virt-controller writes eviction-in-progress on the pod and creates a
// kubevirt-evacuation-* VMIM. While that migration is held (the only allowed target
// is cordoned), a second run finds the pod in flight from its annotations and does
// not evict it again. Uncordoned, the VMIM succeeds and the VMI lands on the target.
func TestDeschedulerNodeTaintEvictsInBackground(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-dstaint-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 80, 2)
	src, dst := nodes[0], nodes[1]
	vmi := liveMigrateVMI(t, f, ns, src, inPool(pool))
	pod := launcherPod(t, f, ns, vmi, src)
	podKey := ns + "/" + pod.Name
	if _, ok := pod.Annotations[requestEvictOnly]; !ok {
		t.Fatalf("launcher pod %s lacks %s (virt-controller's pod template sets it): %v", pod.Name, requestEvictOnly, pod.Annotations)
	}

	setUnschedulable(t, f, dst, true) // holds the evacuation in Scheduling
	taintKey := "kmt-e2e/desched"
	taintNoSchedule(t, f, src, taintKey, ns)
	policy := framework.DeschedulerPolicy{
		Plugin:       "RemovePodsViolatingNodeTaints",
		Args:         map[string]any{"includedTaints": []string{taintKey + "=" + ns}},
		Namespace:    ns,
		NodeSelector: "kmt-e2e/pool=" + pool,
		PodSelector:  map[string]string{virtv1.AppLabel: "virt-launcher"},
	}

	first := f.RunDescheduler(t, ns+"-first", policy)
	wantBackgroundEviction(t, first, podKey)
	mig := waitMarkedByDescheduler(t, f, ns, src)
	framework.Eventually(t, 30*time.Second, "virt-controller marks "+pod.Name+" "+evictionInProgress, func() (bool, string) {
		cur, err := f.Admin.Kube.CoreV1().Pods(ns).Get(framework.Ctx(t), pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, ok := cur.Annotations[evictionInProgress]
		return ok, fmt.Sprintf("annotations %v", cur.Annotations)
	})
	f.WaitTargetPod(t, ns, &mig, "unschedulable while the target is cordoned", framework.IsUnschedulable)

	// In flight: a new descheduler process rebuilds its cache from the two annotations
	// and leaves the pod alone.
	second := f.RunDescheduler(t, ns+"-second", policy)
	if got := second.Lines("Eviction in background detected. Adding pod to the cache.", podKey); len(got) != 1 {
		t.Errorf("second run: %d lines finding %s in flight, want 1:\n%s", len(got), podKey, second.Log)
	}
	if got := second.Lines("Eviction in background already requested (ignoring)", podKey); len(got) != 1 {
		t.Errorf("second run: %d lines ignoring %s as already requested, want 1:\n%s", len(got), podKey, second.Log)
	}
	if got := second.Lines("Eviction in background assumed", podKey); len(got) != 0 {
		t.Errorf("second run evicted %s again: %v", podKey, got)
	}
	wantNothingEvicted(t, second)
	if ms := evacuationVMIMs(t, f, ns); len(ms) != 1 || ms[0].Name != mig.Name {
		t.Errorf("evacuation VMIMs after the second run: %d, want only %s", len(ms), mig.Name)
	}

	setUnschedulable(t, f, dst, false)
	waitLanded(t, f, ns, mig.Name, dst)
	t.Logf("descheduler evicted %s in background; %s moved the VMI %s -> %s", podKey, mig.Name, src, dst)
}

// A LiveMigrate VMI whose required node affinity its node no longer satisfies after
// a relabel. RemovePodsViolatingNodeAffinity evicts the launcher pod only because
// another pool node fits it (the plugin checks); the eviction becomes an evacuation
// and the VMI lands on the node that still satisfies its affinity.
func TestDeschedulerNodeAffinityEvictsInBackground(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-dsaff-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 81, 2)
	src, dst := nodes[0], nodes[1]
	const zone = "kmt-e2e/desched-zone"
	label := func(node, value string) {
		p := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, zone, value)
		if _, err := f.Admin.Kube.CoreV1().Nodes().Patch(framework.Ctx(t), node, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatalf("label %s %s=%s: %v", node, zone, value, err)
		}
	}
	label(src, "in-service")
	label(dst, "in-service")
	vmi := liveMigrateVMI(t, f, ns, src, inPool(pool), framework.WithRequiredNodeAffinity(k8sv1.NodeSelectorTerm{
		MatchExpressions: []k8sv1.NodeSelectorRequirement{{Key: zone, Operator: k8sv1.NodeSelectorOpIn, Values: []string{"in-service"}}}}))
	pod := launcherPod(t, f, ns, vmi, src)
	label(src, "retiring")

	run := f.RunDescheduler(t, ns, framework.DeschedulerPolicy{
		Plugin:       "RemovePodsViolatingNodeAffinity",
		Args:         map[string]any{"nodeAffinityType": []string{"requiredDuringSchedulingIgnoredDuringExecution"}},
		Namespace:    ns,
		NodeSelector: "kmt-e2e/pool=" + pool,
		PodSelector:  map[string]string{virtv1.AppLabel: "virt-launcher"},
	})
	wantBackgroundEviction(t, run, ns+"/"+pod.Name)
	mig := waitMarkedByDescheduler(t, f, ns, src)
	waitLanded(t, f, ns, mig.Name, dst)
}
