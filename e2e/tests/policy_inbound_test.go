package tests

// spec.maxInboundPerNode: drains of two rack-a nodes at once start four evacuations (the
// cluster's KubeVirt CR lifts KubeVirt's own parallel-migration limits, 5 per cluster and 2
// outbound per node by default, pkg/virt-config/virt-config.go, enforced when virt-controller
// creates target pods, pkg/virt-controller/watch/migration/migration.go), and a policy sends
// them to the two rack-b nodes with at most one inbound per node. Every pod and VMIM change
// is recorded from watches and replayed in resourceVersion order (one etcd revision counter
// for both), so "at any instant" means every revision of the API server, not a polling
// interval.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// inboundEvent is one watched change: a target pod (its node, its VMIM's uid, whether it is
// finished) or a VMIM (its phase, whether the limit held it back).
type inboundEvent struct {
	rv      int64
	deleted bool
	pod     *k8sv1.Pod
	vmim    *virtv1.VirtualMachineInstanceMigration
}

type inboundRecorder struct {
	mu     sync.Mutex
	events []inboundEvent
	errs   []string
}

func (r *inboundRecorder) record(t *testing.T, w watch.Interface, what string, done <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-done:
			w.Stop()
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				r.mu.Lock()
				r.errs = append(r.errs, what+" watch ended before the test did")
				r.mu.Unlock()
				return
			}
			e := inboundEvent{deleted: ev.Type == watch.Deleted}
			var rv string
			switch o := ev.Object.(type) {
			case *k8sv1.Pod:
				e.pod, rv = o, o.ResourceVersion
			case *virtv1.VirtualMachineInstanceMigration:
				e.vmim, rv = o, o.ResourceVersion
			default:
				r.mu.Lock()
				r.errs = append(r.errs, fmt.Sprintf("%s watch: %s %T", what, ev.Type, ev.Object))
				r.mu.Unlock()
				continue
			}
			n, err := strconv.ParseInt(rv, 10, 64)
			if err != nil {
				r.mu.Lock()
				r.errs = append(r.errs, fmt.Sprintf("%s watch: resourceVersion %q: %v", what, rv, err))
				r.mu.Unlock()
				continue
			}
			e.rv = n
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	}
}

// replay returns, per node, the most target pods of non-final VMIMs bound to it at once,
// the revision where each maximum was first reached, and the VMIMs the limit held back.
func (r *inboundRecorder) replay() (map[string]int, map[string]string, map[string]bool) {
	r.mu.Lock()
	events := append([]inboundEvent(nil), r.events...)
	r.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	pods := map[string]*k8sv1.Pod{}
	final := map[string]bool{} // VMIM uid -> Succeeded or Failed
	held := map[string]bool{}
	most := map[string]int{}
	when := map[string]string{}
	for _, e := range events {
		if e.vmim != nil {
			final[string(e.vmim.UID)] = e.vmim.Status.Phase == virtv1.MigrationSucceeded || e.vmim.Status.Phase == virtv1.MigrationFailed
			if c := framework.MigrationCondition(e.vmim, framework.ConditionTermApplied); c != nil && string(c.Reason) == framework.ReasonInboundLimitReached {
				held[e.vmim.Name] = true
			}
			continue
		}
		if e.deleted {
			delete(pods, string(e.pod.UID))
		} else {
			pods[string(e.pod.UID)] = e.pod
		}
		count := map[string][]string{}
		for _, p := range pods {
			if p.Spec.NodeName == "" || p.Status.Phase == k8sv1.PodSucceeded || p.Status.Phase == k8sv1.PodFailed {
				continue
			}
			if final[p.Labels[virtv1.MigrationJobLabel]] {
				continue
			}
			count[p.Spec.NodeName] = append(count[p.Spec.NodeName], p.Name)
		}
		for node, names := range count {
			if len(names) > most[node] {
				most[node] = len(names)
				sort.Strings(names)
				when[node] = fmt.Sprintf("revision %d: %s", e.rv, strings.Join(names, ", "))
			}
		}
	}
	return most, when, held
}

func TestPolicyMaxInboundPerNode(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-polcap-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 86, "a", "a", "b", "b")
	sources, rackB := nodes[:2], map[string]bool{nodes[2]: true, nodes[3]: true}
	policy := pool + "-one-per-node"
	if err := createPolicy(t, f, f.Admin, policy, fmt.Sprintf(`{
		"maxInboundPerNode": 1,
		"match": {"sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q, "rack": "a"}}},
		"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}}`, pool)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	var vms []string
	for i, src := range sources {
		for j := 0; j < 2; j++ {
			vm := fmt.Sprintf("vm-%d-%d", i, j)
			f.StartVMI(t, f.Admin, ns, framework.NewVMI(vm, src, inPool(pool), framework.LiveMigrateOnEviction), src)
			vms = append(vms, vm)
		}
	}

	ctx, cancel := context.WithCancel(framework.Ctx(t))
	defer cancel()
	podWatch, err := f.Admin.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: virtv1.MigrationJobLabel})
	if err != nil {
		t.Fatalf("watch target pods: %v", err)
	}
	vmimWatch, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch VMIMs: %v", err)
	}
	rec := &inboundRecorder{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go rec.record(t, podWatch, "target pod", done, &wg)
	go rec.record(t, vmimWatch, "VMIM", done, &wg)

	// Both drains at once: four evacuations in flight for two allowed nodes.
	results := make([]framework.Result, len(sources))
	var drains sync.WaitGroup
	for i, src := range sources {
		drains.Add(1)
		go func() {
			defer drains.Done()
			results[i] = drain(t, src, "140s")
		}()
	}
	drains.Wait()
	for i, r := range results {
		if r.Code != 0 {
			t.Errorf("kubectl drain %s: %s", sources[i], r)
		}
	}
	for _, vm := range vms {
		vmi := f.WaitVMIRunning(t, ns, vm, "")
		if !rackB[vmi.Status.NodeName] {
			t.Errorf("VMI %s on %s after the drains, want a rack-b node %v", vm, vmi.Status.NodeName, nodes[2:])
		}
	}
	evac := evacuationVMIMs(t, f, ns)
	succeeded := 0
	for _, m := range evac {
		if got := m.Annotations[framework.MaxInboundAnnotation]; got != "1" {
			t.Errorf("VMIM %s: %s = %q, want the policy's \"1\"", m.Name, framework.MaxInboundAnnotation, got)
		}
		if m.Status.Phase == virtv1.MigrationSucceeded {
			succeeded++
		}
	}
	if succeeded < len(vms) {
		t.Errorf("%d of %d evacuation VMIMs succeeded, want every VM moved by one", succeeded, len(evac))
	}
	close(done)
	wg.Wait()
	most, when, held := rec.replay()
	for _, e := range rec.errs {
		t.Error(e)
	}
	for node, n := range most {
		t.Logf("node %s: at most %d inbound (%s)", node, n, when[node])
		if n > 1 {
			t.Errorf("node %s had %d inbound migrations of policy %s at once (%s), want at most 1", node, n, policy, when[node])
		}
	}
	for node := range rackB {
		if most[node] != 1 {
			t.Errorf("node %s took %d migrations at its busiest, want 1 (both rack-b nodes used)", node, most[node])
		}
	}
	// Four evacuations, two nodes, one each: some must have waited behind the gate.
	if len(held) == 0 {
		t.Errorf("no evacuation VMIM reported %s=False/%s: the limit held nothing back", framework.ConditionTermApplied, framework.ReasonInboundLimitReached)
	}
	t.Logf("%d of %d evacuations waited for a free node: %v", len(held), len(evac), held)
}
