package tests

// The fault tier (issue 14 §2): faults injected on the real control plane while
// placed migrations are in flight, each followed by framework.CheckInvariants.
// Two operator replicas run (e2e/operator.sh "0" with the webhook the API server
// calls, "1" on its own ports). Every random choice comes from one seed printed
// at the start (framework.FaultSeed); KMT_FAULT_SEED=... replays it.
//
// Size: KMT_FAULT_MIGRATIONS placed migrations per round (default 24) and
// KMT_FAULT_ROUNDS leader kills (default 4), so the whole tier stays within
// about 8 minutes on two shared cores; the 200 x 10 is
// KMT_FAULT_MIGRATIONS=200 KMT_FAULT_ROUNDS=10 (a soak, not CI).

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

var faultReplicas = []framework.Replica{{Name: "0", Index: 0}, {Name: "1", Index: 1}}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// faultFleet is the VMIs a fault scenario migrates, and where each runs now.
type faultFleet struct {
	f    *framework.Framework
	ns   string
	node map[string]string // VMI name -> node
	vmis []string
}

// newFaultFleet starts the second replica and n VMIs (spread by the scheduler).
func newFaultFleet(t *testing.T, n int) *faultFleet {
	return newFaultFleetWith(t, n, func() { framework.StartOperator(t, "1", 1) })
}

// newFaultFleetWith is newFaultFleet with the replicas started by start (replica
// "0" runs when it is called).
func newFaultFleetWith(t *testing.T, n int, start func()) *faultFleet {
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	start()
	ns := f.Namespace(t)
	t.Cleanup(func() { drainNamespace(t, f, ns) })
	fl := &faultFleet{f: f, ns: ns, node: map[string]string{}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("vmi-%03d", i)
		if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Create(framework.Ctx(t), framework.NewVMI(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create VMI %s: %v", name, err)
		}
		fl.vmis = append(fl.vmis, name)
	}
	fl.refresh(t)
	return fl
}

// refresh waits until every VMI runs and records its node.
func (fl *faultFleet) refresh(t *testing.T) {
	for _, name := range fl.vmis {
		fl.node[name] = fl.f.WaitVMIRunning(t, fl.ns, name, "").Status.NodeName
	}
}

// place creates one VMIM per VMI, each with a term naming one node other than
// the VMI's own (matchFields metadata.name or matchExpressions hostname, by rng).
func (fl *faultFleet) place(t *testing.T, rng *rand.Rand, prefix string) []framework.Placed {
	var placed []framework.Placed
	for i, vmi := range fl.vmis {
		var others []string
		for _, n := range fl.f.Nodes {
			if n != fl.node[vmi] {
				others = append(others, n)
			}
		}
		target := others[rng.Intn(len(others))]
		p := framework.Placed{Name: fmt.Sprintf("%s-mig-%03d", prefix, i), Allowed: []string{target}}
		term := framework.HostnamesTerm(target)
		p.Requirement = k8sv1.NodeSelectorRequirement{Key: k8sv1.LabelHostname, Operator: k8sv1.NodeSelectorOpIn, Values: []string{target}}
		if rng.Intn(2) == 0 {
			term = framework.NodeNameTerm(target)
			p.Requirement = nodeNameReq(target)
			p.Field = true
		}
		fl.f.CreateMigration(t, fl.f.Admin, fl.ns, framework.NewMigration(p.Name, vmi, framework.WithTerm(term)))
		placed = append(placed, p)
	}
	return placed
}

// waitReleased waits (bounded) until at least k of the placed VMIMs' target pods
// were released from the gate, and returns how many were.
func (fl *faultFleet) waitReleased(t *testing.T, placed []framework.Placed, k int) int {
	names := map[string]bool{}
	for _, p := range placed {
		names[p.Name] = true
	}
	released := 0
	framework.Eventually(t, 2*time.Minute, fmt.Sprintf("%d gates released", k), func() (bool, string) {
		pods, err := fl.f.Admin.Kube.CoreV1().Pods(fl.ns).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: virtv1.MigrationJobLabel})
		if err != nil {
			return false, err.Error()
		}
		released = 0
		for i := range pods.Items {
			if names[pods.Items[i].Annotations[virtv1.MigrationJobNameAnnotation]] && !framework.HasGate(&pods.Items[i]) {
				released++
			}
		}
		return released >= k, fmt.Sprintf("%d released", released)
	})
	return released
}

// leader waits (bounded) until a running replica holds the Lease and returns it.
func leader(t *testing.T, f *framework.Framework) framework.Replica {
	var found framework.Replica
	framework.Eventually(t, 2*framework.LeaseDuration+15*time.Second, "a running replica holds the Lease", func() (bool, string) {
		h := leaseHolder(t, f)
		for _, r := range faultReplicas {
			if h != "" && replicaIdentity(t, r.Name) == h {
				found = r
				return true, ""
			}
		}
		return false, "holder " + h
	})
	return found
}

// superviseReplicas restarts replicas that exited after losing the Lease (as
// kubelet would) until a running replica leads and both run.
func superviseReplicas(t *testing.T, f *framework.Framework) []string {
	var restarted []string
	framework.Eventually(t, 2*framework.LeaseDuration+15*time.Second, "both replicas running, one leading", func() (bool, string) {
		restarted = append(restarted, framework.EnsureReplicas(t, faultReplicas)...)
		h := leaseHolder(t, f)
		for _, r := range faultReplicas {
			if h != "" && replicaIdentity(t, r.Name) == h {
				return true, ""
			}
		}
		return false, "holder " + h
	})
	return restarted
}

// (1) kill -9 of the leader at a random point (after k of n gates were
// released, k drawn from the seed) while placed migrations are in flight;
// the killed replica comes back at once, as kubelet would restart it.
func TestFaultLeaderKill(t *testing.T) {
	n, rounds := envInt(t, "KMT_FAULT_MIGRATIONS", 24), envInt(t, "KMT_FAULT_ROUNDS", 4)
	seed := framework.FaultSeed(t)
	rng := framework.NewRand(seed)
	fl := newFaultFleet(t, n)
	start := time.Now()
	for round := 0; round < rounds; round++ {
		k := rng.Intn(n)
		placed := fl.place(t, rng, fmt.Sprintf("r%d", round))
		released := fl.waitReleased(t, placed, k)
		l := leader(t, fl.f)
		framework.StopOperator(t, l.Name, "KILL")
		killed := time.Now()
		framework.AlignAfterKill(killed)
		framework.StartOperator(t, l.Name, l.Index)
		rep := fl.f.CheckInvariants(t, fl.ns, placed, framework.InvariantOptions{FaultEnded: time.Now(), Kills: []time.Time{killed}, Replicas: faultReplicas})
		t.Logf("round %d (seed %d): killed leader replica %s after %d of %d gates released (k=%d): %s", round, seed, l.Name, released, n, k, rep)
		if t.Failed() {
			t.Fatalf("round %d broke an invariant; replay with KMT_FAULT_SEED=%d", round, seed)
		}
		fl.refresh(t)
	}
	t.Logf("%d rounds of %d migrations in %s", rounds, n, time.Since(start).Round(time.Second))
}

// (2) kube-apiserver restarted while placed migrations are in flight and every
// watch is open: the operator re-watches (or relists) and finishes the work.
// A replica whose Lease renewal failed while the server was down exits by
// design; it is restarted as kubelet would.
func TestFaultAPIServerRestart(t *testing.T) {
	n := envInt(t, "KMT_FAULT_MIGRATIONS", 24)
	seed := framework.FaultSeed(t)
	rng := framework.NewRand(seed)
	fl := newFaultFleet(t, n)
	k := rng.Intn(n)
	placed := fl.place(t, rng, "api")
	released := fl.waitReleased(t, placed, k)
	stopped, ready := fl.f.RestartAPIServer(t)
	restarted := superviseReplicas(t, fl.f)
	rep := fl.f.CheckInvariants(t, fl.ns, placed, framework.InvariantOptions{FaultEnded: ready, Replicas: faultReplicas})
	t.Logf("seed %d: kube-apiserver restarted after %d of %d gates released (k=%d), down %s; replicas restarted after losing the Lease: %v; %s",
		seed, released, n, k, ready.Sub(stopped).Round(100*time.Millisecond), restarted, rep)
}

// (3) etcd compacted to its current revision while placed migrations are in
// flight. The API server's watch cache would keep serving recent revisions, so
// the server is then restarted: its cache starts above the compacted revision,
// so a watch resumed from an older resourceVersion meets 410 Gone (at least one
// must show in the replicas' logs), as does a continued list. The operator
// relists and finishes the work.
func TestFaultEtcdCompaction(t *testing.T) {
	n := envInt(t, "KMT_FAULT_MIGRATIONS", 24)
	seed := framework.FaultSeed(t)
	rng := framework.NewRand(seed)
	fl := newFaultFleet(t, n)
	k := rng.Intn(n)
	placed := fl.place(t, rng, "etcd")
	released := fl.waitReleased(t, placed, k)
	logAt := map[string]int{}
	for _, r := range faultReplicas {
		logAt[r.Name] = len(framework.OperatorLog(r.Name))
	}
	rev := framework.CompactEtcd(t)
	stopped, ready := fl.f.RestartAPIServer(t)
	restarted := superviseReplicas(t, fl.f)
	rep := fl.f.CheckInvariants(t, fl.ns, placed, framework.InvariantOptions{FaultEnded: ready, Replicas: faultReplicas})
	// The fault must have happened: the operator met 410 Gone and relisted.
	gone := 0
	for _, r := range faultReplicas {
		log := framework.OperatorLog(r.Name)
		if len(log) >= logAt[r.Name] {
			log = log[logAt[r.Name]:]
		}
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "Failed to watch") && (strings.Contains(l, "410") || strings.Contains(l, "Gone") || strings.Contains(l, "too old")) {
				gone++
			}
		}
	}
	if gone == 0 {
		t.Errorf("no replica logged a 410 Gone watch after the compaction to revision %d and the restart", rev)
	}
	t.Logf("seed %d: etcd compacted to revision %d after %d of %d gates released (k=%d), kube-apiserver down %s; %d watches met 410; replicas restarted: %v; %s",
		seed, rev, released, n, k, ready.Sub(stopped).Round(100*time.Millisecond), gone, restarted, rep)
}

// (4) The watch streams frozen for 60 s without being closed: both replicas
// reach the API server through framework.WatchProxy, which stops forwarding every
// watch stream open at the freeze (no byte, no close) while everything else —
// the Lease, writes, new watches — flows. Placed migrations are created as the
// freeze starts, so the leader learns of them only through a watch it reopens.
// It must notice the silent streams through its own timeouts before the freeze
// ends (every frozen stream abandoned by its client within the 60 s), and the
// invariants hold with the fault's end at 60 s.
func TestFaultWatchFreeze(t *testing.T) {
	const freeze = 60 * time.Second
	n := envInt(t, "KMT_FAULT_MIGRATIONS", 24)
	seed := framework.FaultSeed(t)
	rng := framework.NewRand(seed)
	proxy := framework.StartWatchProxy(t)
	fl := newFaultFleetWith(t, n, func() {
		kc := proxy.ProxiedKubeconfig(t)
		framework.StopOperator(t, "0", "TERM")
		framework.StartOperatorWithKubeconfig(t, "0", 0, kc)
		framework.StartOperatorWithKubeconfig(t, "1", 1, kc)
	})
	leader(t, fl.f)
	// The leader's informers (VMIMs, pods, nodes) watch through the proxy.
	framework.Eventually(t, time.Minute, "the operator's watches open through the proxy", func() (bool, string) {
		w, _, _, _ := proxy.Stats()
		return w >= 3, fmt.Sprintf("%d watch requests", w)
	})
	frozenAt := time.Now()
	frozen := proxy.FreezeOpenWatches()
	if frozen == 0 {
		t.Fatal("no watch stream open to freeze")
	}
	placed := fl.place(t, rng, "frz")
	// The fault lasts freeze; what the operator does meanwhile is observed, not awaited.
	var abandonedAt []time.Duration
	last := 0
	for time.Since(frozenAt) < freeze {
		_, _, abandoned, _ := proxy.Stats()
		for ; last < abandoned; last++ {
			abandonedAt = append(abandonedAt, time.Since(frozenAt).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	watches, _, abandoned, stillOpen := proxy.Stats()
	proxy.Thaw()
	ended := time.Now()
	if abandoned < frozen || stillOpen > 0 {
		t.Errorf("the operator did not notice frozen watch streams within %s: %d frozen, %d abandoned (after %v), %d still open at the end",
			freeze, frozen, abandoned, abandonedAt, stillOpen)
	}
	rep := fl.f.CheckInvariants(t, fl.ns, placed, framework.InvariantOptions{FaultEnded: ended, Replicas: faultReplicas})
	t.Logf("seed %d: froze %d watch streams for %s; abandoned by the operator after %v; %d still open at the end; %d watch requests; %s",
		seed, frozen, freeze, abandonedAt, stillOpen, watches, rep)
}
