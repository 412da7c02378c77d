//go:build soak

// Package soak is the soak of the operator on the real control plane (e2e/soak.sh;
// not part of e2e/run.sh, which runs ./tests/ only, nor of any build without the
// soak tag): for KMT_SOAK_DURATION (default 60m) placed migrations at
// KMT_SOAK_RATE a minute (default 10) on fake-node VMIs, label and taint churn on
// the nodes the terms select, a kill -9 of the Lease holder every
// KMT_SOAK_KILL_EVERY (default 10m) with two replicas, and the replicas' RSS,
// open fds and threads sampled every KMT_SOAK_SAMPLE (default 10s) into
// $KMT_E2E_DIR/soak.csv. The end: slopes per process lifetime
// (framework.Segments), and framework.CheckInvariants on a last batch of placed
// migrations after the churn stopped.
package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

var replicas = []framework.Replica{{Name: "0", Index: 0}, {Name: "1", Index: 1}}

const (
	poolLabel = "kmt-soak/pool" // churned between "blue" and "green"; label terms select on it
	taintKey  = "kmt-soak/churn"
	// warmup is left out of each process's slopes.
	warmup = 60 * time.Second
	// abandonAfter: a VMIM not final by then is deleted (virt-controller aborts it).
	abandonAfter = 6 * time.Minute
)

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, s)
	}
	return d
}

func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// identity is the leader-election identity replica name logged last.
func identity(name string) string {
	id := ""
	for _, l := range strings.Split(framework.OperatorLog(name), "\n") {
		if strings.Contains(l, "Started leader election") {
			if j := strings.Index(l, "identity="); j >= 0 {
				id = strings.Trim(strings.Fields(l[j+len("identity="):])[0], `"`)
			}
		}
	}
	return id
}

func leaseHolder(f *framework.Framework) string {
	ctx, cancel := callCtx()
	defer cancel()
	l, err := f.Admin.Kube.CoordinationV1().Leases(framework.OperatorNamespace).Get(ctx, framework.OperatorLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leader waits (bounded) until a running replica holds the Lease, restarting
// replicas that exited after losing it.
func leader(t *testing.T, f *framework.Framework) framework.Replica {
	var found framework.Replica
	framework.Eventually(t, 2*framework.LeaseDuration+30*time.Second, "a running replica holds the Lease", func() (bool, string) {
		framework.EnsureReplicas(t, replicas)
		h := leaseHolder(f)
		for _, r := range replicas {
			if h != "" && identity(r.Name) == h {
				found = r
				return true, ""
			}
		}
		return false, "holder " + h
	})
	return found
}

// counters of the churn phase, shared by the goroutines.
type counters struct {
	mu                                sync.Mutex
	created, refused, succeeded       int
	failed, abandoned, outsideTerm    int
	missingReport, addedWrong         int
	labelChanges, taintsOn, taintsOff int
	unschedSeen                       int
	refusedWhy                        map[string]int
	failedWhy                         map[string]int
	byKind                            map[string]int
	durations                         []time.Duration
	errors                            []string
}

func (c *counters) add(f func(c *counters)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *counters) problem(format string, args ...any) {
	c.add(func(c *counters) {
		if len(c.errors) < 50 {
			c.errors = append(c.errors, fmt.Sprintf(format, args...))
		}
	})
}

// inflight is one VMIM the migrator created and has not settled.
type inflight struct {
	name, vmi, kind string
	created         time.Time
	req             k8sv1.NodeSelectorRequirement
	field           bool
	hostTarget      string // for hostname/name terms: the only node allowed
	finalAt         time.Time
	phase           virtv1.VirtualMachineInstanceMigrationPhase
	uid             types.UID
	sawUnsched      bool // targetPodUnschedulable=True seen on the way
}

type migrator struct {
	f     *framework.Framework
	ns    string
	rng   *rand.Rand
	nodes []string
	c     *counters
	vmis  []string
	// busyUntil: a VMI is free for a new VMIM once its last one settled (plus a pause).
	busyUntil map[string]time.Time
	open      map[string]*inflight
	seq       int
}

func (m *migrator) vmiNode(ctx context.Context, name string) (string, bool) {
	vmi, err := m.f.Admin.Virt.KubevirtV1().VirtualMachineInstances(m.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || vmi.Status.Phase != virtv1.Running || vmi.Status.NodeName == "" {
		return "", false
	}
	if ms := vmi.Status.MigrationState; ms != nil && !ms.Completed && !ms.Failed && ms.TargetNode != "" {
		return "", false
	}
	return vmi.Status.NodeName, true
}

// create starts one placed migration on a free VMI with a term drawn from rng:
// a hostname or metadata.name term naming one node other than the VMI's, or a
// label term on the churned pool label (In blue / NotIn green).
func (m *migrator) create() {
	now := time.Now()
	var free []string
	for _, v := range m.vmis {
		if now.After(m.busyUntil[v]) {
			free = append(free, v)
		}
	}
	if len(free) == 0 {
		m.c.problem("%s: no free VMI for a migration", now.UTC().Format(time.TimeOnly))
		return
	}
	vmi := free[m.rng.Intn(len(free))]
	ctx, cancel := callCtx()
	defer cancel()
	src, ok := m.vmiNode(ctx, vmi)
	if !ok {
		m.busyUntil[vmi] = now.Add(5 * time.Second)
		return
	}
	var others []string
	for _, n := range m.nodes {
		if n != src {
			others = append(others, n)
		}
	}
	target := others[m.rng.Intn(len(others))]
	m.seq++
	in := &inflight{name: fmt.Sprintf("soak-%05d", m.seq), vmi: vmi, created: now}
	var term string
	switch k := m.rng.Intn(4); k {
	case 0:
		in.kind, in.hostTarget, term = "hostname", target, framework.HostnamesTerm(target)
		in.req = k8sv1.NodeSelectorRequirement{Key: k8sv1.LabelHostname, Operator: k8sv1.NodeSelectorOpIn, Values: []string{target}}
	case 1:
		in.kind, in.hostTarget, term, in.field = "name", target, framework.NodeNameTerm(target), true
		in.req = k8sv1.NodeSelectorRequirement{Key: "metadata.name", Operator: k8sv1.NodeSelectorOpIn, Values: []string{target}}
	case 2:
		in.kind = "pool-in-blue"
		in.req = k8sv1.NodeSelectorRequirement{Key: poolLabel, Operator: k8sv1.NodeSelectorOpIn, Values: []string{"blue"}}
	default:
		in.kind = "pool-notin-green"
		in.req = k8sv1.NodeSelectorRequirement{Key: poolLabel, Operator: k8sv1.NodeSelectorOpNotIn, Values: []string{"green"}}
	}
	if term == "" {
		b, _ := json.Marshal(k8sv1.NodeSelectorTerm{MatchExpressions: []k8sv1.NodeSelectorRequirement{in.req}})
		term = string(b)
	}
	created, err := m.f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(m.ns).Create(ctx,
		framework.NewMigration(in.name, vmi, framework.WithTerm(term)), metav1.CreateOptions{})
	if err != nil {
		// The webhook's replica is being restarted, or the API server is busy: try again.
		why := err.Error()
		if len(why) > 120 {
			why = why[:120]
		}
		m.c.add(func(c *counters) { c.refused++; c.refusedWhy[why]++ })
		m.seq--
		return
	}
	in.uid = created.UID
	m.open[in.name] = in
	m.busyUntil[vmi] = now.Add(24 * time.Hour)
	m.c.add(func(c *counters) { c.created++; c.byKind[in.kind]++ })
}

// poll settles the VMIMs that ended: checks each, deletes it and the pods that
// finished, frees the VMI; abandons VMIMs open longer than abandonAfter.
func (m *migrator) poll() {
	ctx, cancel := callCtx()
	defer cancel()
	list, err := m.f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(m.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	byName := map[string]*virtv1.VirtualMachineInstanceMigration{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	now := time.Now()
	for name, in := range m.open {
		vmim := byName[name]
		if vmim == nil {
			m.c.problem("VMIM %s vanished while open", name)
			delete(m.open, name)
			m.busyUntil[in.vmi] = now.Add(10 * time.Second)
			continue
		}
		if vmim.IsFinal() && in.finalAt.IsZero() {
			in.finalAt, in.phase = now, vmim.Status.Phase
		}
		if c := framework.MigrationCondition(vmim, framework.ConditionTargetUnsched); c != nil && c.Status == k8sv1.ConditionTrue {
			if !in.sawUnsched {
				in.sawUnsched = true
				m.c.add(func(c *counters) { c.unschedSeen++ })
			}
		}
		switch {
		case !in.finalAt.IsZero():
			if m.settle(ctx, in, vmim, now) {
				delete(m.open, name)
				m.busyUntil[in.vmi] = now.Add(10 * time.Second)
			}
		case now.Sub(in.created) > abandonAfter:
			m.c.add(func(c *counters) { c.abandoned++ })
			m.c.problem("VMIM %s (%s) not final after %s: phase %s, conditions %s", name, in.kind, abandonAfter,
				vmim.Status.Phase, framework.ToJSON(vmim.Status.Conditions))
			_ = m.f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(m.ns).Delete(ctx, name, metav1.DeleteOptions{})
			delete(m.open, name)
			m.busyUntil[in.vmi] = now.Add(60 * time.Second)
		}
	}
	// Launcher pods that finished (sources of completed migrations, failed targets)
	// go, so the namespace holds as many objects at minute 60 as at minute 1.
	pods, err := m.f.Admin.Kube.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for i := range pods.Items {
			p := &pods.Items[i]
			if (p.Status.Phase == k8sv1.PodSucceeded || p.Status.Phase == k8sv1.PodFailed) && p.DeletionTimestamp == nil {
				_ = m.f.Admin.Kube.CoreV1().Pods(m.ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
			}
		}
	}
}

// settle checks a final VMIM; false while its final report may still come
// (the operator writes targetPodUnschedulable=False after the bind).
func (m *migrator) settle(ctx context.Context, in *inflight, vmim *virtv1.VirtualMachineInstanceMigration, now time.Time) bool {
	if in.phase != virtv1.MigrationSucceeded {
		why := string(in.phase)
		if c := framework.MigrationCondition(vmim, framework.ConditionTargetUnsched); c != nil {
			why += " " + string(c.Status) + "/" + c.Reason
		}
		m.c.add(func(c *counters) { c.failed++; c.failedWhy[in.kind+": "+why]++ })
		_ = m.f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(m.ns).Delete(ctx, in.name, metav1.DeleteOptions{})
		return true
	}
	pods, err := m.f.Admin.Kube.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{LabelSelector: virtv1.MigrationJobLabel + "=" + string(in.uid)})
	if err != nil {
		return false
	}
	node := ""
	for i := range pods.Items {
		if n := pods.Items[i].Spec.NodeName; n != "" {
			node = n
		}
	}
	applied := framework.MigrationCondition(vmim, framework.ConditionTermApplied)
	sched := framework.MigrationCondition(vmim, framework.ConditionTargetUnsched)
	report := applied != nil && applied.Status == k8sv1.ConditionTrue && applied.Reason == framework.ReasonTermApplied &&
		sched != nil && sched.Status == k8sv1.ConditionFalse && sched.Reason == framework.ReasonScheduled &&
		node != "" && strings.HasSuffix(sched.Message, " was scheduled to node "+node)
	if !report && now.Sub(in.finalAt) < 30*time.Second {
		return false
	}
	if !report {
		m.c.add(func(c *counters) { c.missingReport++ })
		m.c.problem("VMIM %s (%s) succeeded on %q without its final report: %s", in.name, in.kind, node, framework.ToJSON(vmim.Status.Conditions))
	}
	if in.hostTarget != "" && node != in.hostTarget {
		m.c.add(func(c *counters) { c.outsideTerm++ })
		m.c.problem("VMIM %s (%s) completed on %q, its term names %q", in.name, in.kind, node, in.hostTarget)
	}
	// The term's requirement in every term of the target pod's required affinity, once.
	want := framework.ToJSON(in.req)
	for i := range pods.Items {
		req := framework.RequiredNodeAffinity(&pods.Items[i])
		if req == nil || len(req.NodeSelectorTerms) == 0 {
			m.c.add(func(c *counters) { c.addedWrong++ })
			m.c.problem("VMIM %s: target pod %s without required node affinity", in.name, pods.Items[i].Name)
			continue
		}
		for _, term := range req.NodeSelectorTerms {
			list := term.MatchExpressions
			if in.field {
				list = term.MatchFields
			}
			n := 0
			for _, r := range list {
				if framework.ToJSON(r) == want {
					n++
				}
			}
			if n != 1 {
				m.c.add(func(c *counters) { c.addedWrong++ })
				m.c.problem("VMIM %s: target pod %s carries the requirement %d times: %s", in.name, pods.Items[i].Name, n, framework.ToJSON(term))
			}
		}
	}
	m.c.add(func(c *counters) { c.succeeded++; c.durations = append(c.durations, in.finalAt.Sub(in.created)) })
	_ = m.f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(m.ns).Delete(ctx, in.name, metav1.DeleteOptions{})
	return true
}

// churner flips the pool label of one node, or moves the NoSchedule taint
// (at most one node tainted at a time), every tick.
type churner struct {
	f       *framework.Framework
	rng     *rand.Rand
	nodes   []string
	c       *counters
	tainted string
}

func (ch *churner) updateNode(name string, mutate func(*k8sv1.Node)) error {
	for i := 0; i < 5; i++ {
		ctx, cancel := callCtx()
		n, err := ch.f.Admin.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			mutate(n)
			_, err = ch.f.Admin.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		}
		cancel()
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("node %s: conflicts 5 times", name)
}

func setTaint(n *k8sv1.Node, on bool) {
	var keep []k8sv1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != taintKey {
			keep = append(keep, t)
		}
	}
	if on {
		keep = append(keep, k8sv1.Taint{Key: taintKey, Value: "soak", Effect: k8sv1.TaintEffectNoSchedule})
	}
	n.Spec.Taints = keep
}

func (ch *churner) step() {
	if ch.rng.Intn(3) == 0 {
		// The taint moves: off the node that has it, onto another (or none).
		if ch.tainted != "" {
			if err := ch.updateNode(ch.tainted, func(n *k8sv1.Node) { setTaint(n, false) }); err != nil {
				ch.c.problem("untaint %s: %v", ch.tainted, err)
				return
			}
			ch.c.add(func(c *counters) { c.taintsOff++ })
			ch.tainted = ""
			return
		}
		node := ch.nodes[ch.rng.Intn(len(ch.nodes))]
		if err := ch.updateNode(node, func(n *k8sv1.Node) { setTaint(n, true) }); err != nil {
			ch.c.problem("taint %s: %v", node, err)
			return
		}
		ch.tainted = node
		ch.c.add(func(c *counters) { c.taintsOn++ })
		return
	}
	node := ch.nodes[ch.rng.Intn(len(ch.nodes))]
	err := ch.updateNode(node, func(n *k8sv1.Node) {
		if n.Labels[poolLabel] == "blue" {
			n.Labels[poolLabel] = "green"
		} else {
			n.Labels[poolLabel] = "blue"
		}
		// Another label changes too (not selected by any term): node updates the
		// operator sees but that change no placement.
		n.Labels["kmt-soak/generation"] = strconv.FormatInt(time.Now().Unix(), 10)
	})
	if err != nil {
		ch.c.problem("relabel %s: %v", node, err)
		return
	}
	ch.c.add(func(c *counters) { c.labelChanges++ })
}

// restore leaves every node blue and untainted.
func (ch *churner) restore(t *testing.T) {
	for _, node := range ch.nodes {
		if err := ch.updateNode(node, func(n *k8sv1.Node) { setTaint(n, false); n.Labels[poolLabel] = "blue" }); err != nil {
			t.Errorf("restore node %s: %v", node, err)
		}
	}
	ch.tainted = ""
}

func TestSoak(t *testing.T) {
	duration := envDuration(t, "KMT_SOAK_DURATION", 60*time.Minute)
	rate := framework.EnvInt(t, "KMT_SOAK_RATE", 10)
	killEvery := envDuration(t, "KMT_SOAK_KILL_EVERY", 10*time.Minute)
	sampleEvery := envDuration(t, "KMT_SOAK_SAMPLE", 10*time.Second)
	churnEvery := envDuration(t, "KMT_SOAK_CHURN_EVERY", 20*time.Second)
	nVMIs := framework.EnvInt(t, "KMT_SOAK_VMIS", 12)
	seed := framework.FaultSeed(t)
	rng := framework.NewRand(seed)
	f := framework.New(t)
	dir := os.Getenv("KMT_E2E_DIR")
	csvPath := filepath.Join(dir, "soak.csv")
	t.Logf("soak: %s, %d placed migrations/min, leader kill every %s, churn every %s, %d VMIs, samples every %s into %s",
		duration, rate, killEvery, churnEvery, nVMIs, sampleEvery, csvPath)

	// Two replicas: "0" (the hook started it; the API server calls its webhook) and "1".
	framework.StartOperator(t, "1", 1)
	sampler, err := framework.StartSampler(csvPath, sampleEvery, []string{"0", "1"})
	if err != nil {
		t.Fatalf("sampler: %v", err)
	}

	// Two extra fake nodes, so label terms usually have a node other than the
	// VMI's; every node starts blue.
	nodes := append([]string(nil), f.Nodes...)
	for i, name := range []string{"soak-d", "soak-e"} {
		f.ExtraNode(t, name, fmt.Sprintf("192.168.72.%d", i+1), nil)
		nodes = append(nodes, name)
	}
	c := &counters{refusedWhy: map[string]int{}, failedWhy: map[string]int{}, byKind: map[string]int{}}
	ch := &churner{f: f, rng: rand.New(rand.NewSource(rng.Int63())), nodes: nodes, c: c}
	ch.restore(t)
	t.Cleanup(func() { ch.restore(t) })

	ns := f.Namespace(t)
	t.Cleanup(func() { drain(t, f, ns) })
	var vmis []string
	for i := 0; i < nVMIs; i++ {
		name := fmt.Sprintf("vmi-%02d", i)
		if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Create(framework.Ctx(t), framework.NewVMI(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create VMI %s: %v", name, err)
		}
		vmis = append(vmis, name)
	}
	for _, v := range vmis {
		f.WaitVMIRunning(t, ns, v, "")
	}
	mg := &migrator{f: f, ns: ns, rng: rand.New(rand.NewSource(rng.Int63())), nodes: nodes, c: c, vmis: vmis,
		busyUntil: map[string]time.Time{}, open: map[string]*inflight{}}

	// The migrator and the churner run in goroutines (API calls only, no t.Fatal);
	// the kills and the replicas' supervision stay on the test goroutine.
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopAll := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(stopAll)
	wg.Add(2)
	go func() {
		defer wg.Done()
		create := time.NewTicker(time.Minute / time.Duration(rate))
		poll := time.NewTicker(2 * time.Second)
		defer create.Stop()
		defer poll.Stop()
		for {
			select {
			case <-stop:
				return
			case <-create.C:
				mg.create()
			case <-poll.C:
				mg.poll()
			}
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(churnEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				ch.step()
			}
		}
	}()

	var kills []time.Time
	var killed []string
	var restartedLost []string
	nextKill := start.Add(killEvery)
	lastReport := start
	for time.Since(start) < duration {
		time.Sleep(time.Second)
		restartedLost = append(restartedLost, framework.EnsureReplicas(t, replicas)...)
		if time.Now().After(nextKill) && time.Until(start.Add(duration)) > 30*time.Second {
			l := leader(t, f)
			framework.StopOperator(t, l.Name, "KILL")
			at := time.Now()
			framework.AlignAfterKill(at)
			framework.StartOperator(t, l.Name, l.Index)
			kills, killed = append(kills, at), append(killed, l.Name)
			t.Logf("soak %s: killed the leader, replica %s (kill %d), restarted", time.Since(start).Round(time.Second), l.Name, len(kills))
			nextKill = nextKill.Add(killEvery)
		}
		if time.Since(lastReport) >= 5*time.Minute {
			lastReport = time.Now()
			var last []string
			for _, r := range replicas {
				if s, ok := sampler.Last(r.Name); ok {
					last = append(last, fmt.Sprintf("%s: pid %d rss %.1f MiB fds %d threads %d", r.Name, s.PID, float64(s.RSSKiB)/1024, s.FDs, s.Threads))
				}
			}
			c.mu.Lock()
			t.Logf("soak %s: created %d, succeeded %d, failed %d, abandoned %d, refused %d; %s", time.Since(start).Round(time.Second),
				c.created, c.succeeded, c.failed, c.abandoned, c.refused, strings.Join(last, "; "))
			c.mu.Unlock()
		}
	}
	churnEnded := time.Now()
	// Stop creating and churning; let the open VMIMs end (bounded by abandonAfter).
	stopAll()
	ch.restore(t)
	drainDeadline := time.Now().Add(abandonAfter + 30*time.Second)
	for len(mg.open) > 0 && time.Now().Before(drainDeadline) {
		time.Sleep(2 * time.Second)
		mg.poll()
		framework.EnsureReplicas(t, replicas)
	}
	openLeft := len(mg.open)

	// The last batch, after the churn: one placed migration per VMI (a hostname or
	// metadata.name term naming a node other than the VMI's), checked with the
	// fault tier's invariants; its namespace is fresh, so its Events are its own.
	fns := f.Namespace(t)
	t.Cleanup(func() { drain(t, f, fns) })
	var fvmis []string
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("final-%02d", i)
		if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(fns).Create(framework.Ctx(t), framework.NewVMI(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create VMI %s: %v", name, err)
		}
		fvmis = append(fvmis, name)
	}
	var placed []framework.Placed
	batchStart := time.Now()
	for i, v := range fvmis {
		src := f.WaitVMIRunning(t, fns, v, "").Status.NodeName
		var others []string
		for _, n := range nodes {
			if n != src {
				others = append(others, n)
			}
		}
		target := others[rng.Intn(len(others))]
		p := framework.Placed{Name: fmt.Sprintf("final-mig-%02d", i), Allowed: []string{target}}
		term := framework.HostnamesTerm(target)
		p.Requirement = k8sv1.NodeSelectorRequirement{Key: k8sv1.LabelHostname, Operator: k8sv1.NodeSelectorOpIn, Values: []string{target}}
		if i%2 == 1 {
			term = framework.NodeNameTerm(target)
			p.Requirement = k8sv1.NodeSelectorRequirement{Key: "metadata.name", Operator: k8sv1.NodeSelectorOpIn, Values: []string{target}}
			p.Field = true
		}
		f.CreateMigration(t, f.Admin, fns, framework.NewMigration(p.Name, v, framework.WithTerm(term)))
		placed = append(placed, p)
	}
	rep := f.CheckInvariants(t, fns, placed, framework.InvariantOptions{FaultEnded: batchStart, Kills: kills, Replicas: replicas})

	samples, sampleErrs := sampler.Stop()
	acquired := map[string][]time.Time{}
	for _, r := range replicas {
		acquired[r.Name] = framework.LeaseAcquisitions(framework.OperatorLog(r.Name))
	}
	framework.MarkLeadership(samples, acquired)
	segs := framework.Segments(samples, warmup)
	table := framework.SegmentTable(segs)

	c.mu.Lock()
	defer c.mu.Unlock()
	sort.Slice(c.durations, func(i, j int) bool { return c.durations[i] < c.durations[j] })
	pct := func(p float64) time.Duration {
		if len(c.durations) == 0 {
			return 0
		}
		return c.durations[int(p*float64(len(c.durations)-1))].Round(100 * time.Millisecond)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak: seed %d, churn ran %s (asked %s), %d placed migrations/min, %d VMIs on %d nodes\n",
		seed, churnEnded.Sub(start).Round(time.Second), duration, rate, nVMIs, len(nodes))
	fmt.Fprintf(&b, "soak: migrations created %d (%v), succeeded %d, failed %d, abandoned %d, still open at the end %d; create refused %d times\n",
		c.created, c.byKind, c.succeeded, c.failed, c.abandoned, openLeft, c.refused)
	fmt.Fprintf(&b, "soak: create-to-final p50 %s p90 %s p99 %s max %s; %d target pods reported Unschedulable on the way\n",
		pct(0.5), pct(0.9), pct(0.99), pct(1), c.unschedSeen)
	fmt.Fprintf(&b, "soak: checks: outside term %d, requirement not exactly once %d, missing final report %d\n", c.outsideTerm, c.addedWrong, c.missingReport)
	fmt.Fprintf(&b, "soak: churn: %d label changes, %d taints on, %d off\n", c.labelChanges, c.taintsOn, c.taintsOff)
	fmt.Fprintf(&b, "soak: leader kills %d (replicas %v at %v); replicas restarted after losing the Lease: %v\n",
		len(kills), killed, times(kills), restartedLost)
	fmt.Fprintf(&b, "soak: final batch invariants: %s\n", rep)
	fmt.Fprintf(&b, "soak: %d samples (%d failed reads), slopes per process lifetime (standby, then leader) after a %s warm-up of each:\n%s", len(samples), sampleErrs, warmup, table)
	for why, n := range c.refusedWhy {
		fmt.Fprintf(&b, "soak: refused x%d: %s\n", n, why)
	}
	for why, n := range c.failedWhy {
		fmt.Fprintf(&b, "soak: failed x%d: %s\n", n, why)
	}
	for _, e := range c.errors {
		fmt.Fprintf(&b, "soak: problem: %s\n", e)
	}
	t.Log("\n" + b.String())
	if err := os.WriteFile(filepath.Join(dir, "soak-summary.txt"), []byte(b.String()), 0o644); err != nil {
		t.Errorf("write summary: %v", err)
	}
	if c.outsideTerm+c.addedWrong+c.missingReport > 0 {
		t.Errorf("placed migrations broke the operator's contract during the churn: outside term %d, requirement not once %d, missing report %d",
			c.outsideTerm, c.addedWrong, c.missingReport)
	}
	if c.succeeded == 0 {
		t.Errorf("no placed migration succeeded during the churn")
	}
}

func times(ts []time.Time) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.UTC().Format(time.TimeOnly))
	}
	return out
}

// drain deletes the namespace's VMIs and waits (bounded) for its pods to go.
func drain(t *testing.T, f *framework.Framework, ns string) {
	ctx, cancel := callCtx()
	defer cancel()
	if err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Logf("delete VMIs in %s: %v", ns, err)
	}
}
