package framework

// The fault tier's tools (issue 14 §2): a replayable seed, the control plane's own
// processes restarted in place (kube-apiserver), etcd compacted through its v3
// HTTP/JSON gateway, the operator's replicas supervised as kubelet would, and the
// invariants every fault is followed by (CheckInvariants).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

// LeaseDuration is the operator's Lease duration (controller/leader_election.h).
const LeaseDuration = 15 * time.Second

// FaultSeed returns the seed of a fault scenario: KMT_FAULT_SEED when set (to
// replay a failure), else a fresh one. It is logged so a failing run can be replayed.
func FaultSeed(t testing.TB) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("KMT_FAULT_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KMT_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("fault seed %d (replay with KMT_FAULT_SEED=%d KMT_E2E_RUN='%s' e2e/run.sh)", seed, seed, t.Name())
	return seed
}

// NewRand is a generator seeded for one scenario.
func NewRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

func runDir() string { return os.Getenv("KMT_E2E_DIR") }

func pidOf(t testing.TB, component string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir(), "pids", component+".pid"))
	if err != nil {
		t.Fatalf("pid file of %s: %v", component, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file of %s: %v", component, err)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// RestartAPIServer stops kube-apiserver (TERM to its process group, as
// `cluster.sh down` does; KILL after 20 s), starts it again with the same
// command line through `cluster.sh start` (so `down` still stops it), and waits
// until its /readyz answers ok. It returns when the server stopped and when it
// was ready again.
func (f *Framework) RestartAPIServer(t testing.TB) (stopped, ready time.Time) {
	t.Helper()
	pid := pidOf(t, "kube-apiserver")
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("command line of kube-apiserver (pid %d): %v", pid, err)
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	Eventually(t, 10*time.Second, "kube-apiserver pid "+strconv.Itoa(pid)+" gone", func() (bool, string) {
		// A zombie until its parent (cluster.sh start's setsid) reaps it counts as gone.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(st), ") Z "), "still running"
	})
	stopped = time.Now()
	r := Run(t, time.Minute, nil, "e2e/cluster.sh", append([]string{"start", "kube-apiserver", "--"}, argv...)...)
	if r.Code != 0 {
		t.Fatalf("cluster.sh start kube-apiserver: %s", r)
	}
	Eventually(t, 2*time.Minute, "kube-apiserver /readyz after its restart", func() (bool, string) {
		body, err := f.Admin.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(Ctx(t))
		return err == nil && strings.TrimSpace(string(body)) == "ok", fmt.Sprintf("%s %v", body, err)
	})
	return stopped, time.Now()
}

// CompactEtcd compacts etcd's whole history up to its current revision through
// the v3 HTTP/JSON gateway on etcd's client port (KMT_E2E_PORT_BASE + 379): a
// watch or continued list from an older revision meets 410 Gone. It returns the
// revision compacted to.
func CompactEtcd(t testing.TB) int64 {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/v3/kv/", portBase(t)+379)
	post := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		client := &http.Client{Timeout: 30 * time.Second}
		resp, err := client.Post(url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatalf("etcd %s: %v", path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: HTTP %d, %v, %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	// key "\x00" (base64 "AA==") with range_end "\x00": every key; count only.
	rng := post("range", map[string]any{"key": "AA==", "range_end": "AA==", "count_only": true})
	header, _ := rng["header"].(map[string]any)
	rev, err := strconv.ParseInt(fmt.Sprint(header["revision"]), 10, 64)
	if err != nil || rev <= 0 {
		t.Fatalf("etcd range: no revision in %v", rng)
	}
	post("compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true})
	return rev
}

// Replica is one operator replica the fault scenarios run (e2e/operator.sh).
type Replica struct {
	Name  string
	Index int
}

// EnsureReplicas restarts, as kubelet restarts a container, every replica whose
// process exited because it lost its Lease (the operator exits then, by design:
// "Stopping after losing the lease"). A replica that exited for any other reason
// fails the test. It returns the names restarted.
func EnsureReplicas(t testing.TB, replicas []Replica) []string {
	t.Helper()
	var restarted []string
	for _, r := range replicas {
		pidf := filepath.Join(runDir(), "pids", "operator-"+r.Name+".pid")
		b, err := os.ReadFile(pidf)
		if err != nil {
			t.Fatalf("replica %s: no pid file: %v", r.Name, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && alive(pid) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.TrimSpace(string(comm)) == "operator" {
				continue
			}
		}
		log := OperatorLog(r.Name)
		tail := log
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		if !strings.Contains(tail, "Stopping after losing the lease") {
			t.Fatalf("replica %s exited without losing its lease; log tail:\n%s", r.Name, tail)
		}
		_ = os.Remove(pidf)
		StartOperator(t, r.Name, r.Index)
		restarted = append(restarted, r.Name)
	}
	return restarted
}

// Placed is a VMIM with a term, as a fault scenario created it.
type Placed struct {
	Name string
	// Allowed are the nodes the term admits.
	Allowed []string
	// Requirement is the requirement the term adds to the target pod (matchFields
	// when Field, else matchExpressions).
	Requirement k8sv1.NodeSelectorRequirement
	Field       bool
}

// InvariantReport counts what CheckInvariants found, per invariant.
type InvariantReport struct {
	VMIMs              int
	OutsideTerm        int // VMIMs completed on a node outside their term
	StillGated         int // target pods gated 2 x the lease duration after the fault ended
	AddedTwice         int // requirements present twice in a target pod's term
	MissingReport      int // VMIMs without their final conditions
	DuplicateEvents    int // Events recorded more than once
	LostEventsAtKill   int // TermApplied Events lost with a replica killed after its status write (allowed)
	LostEventsLogged   int // TermApplied Events whose failed create a replica logged (best effort, allowed)
	GatedClearedAfter  time.Duration
	FinalPhasesReached time.Duration
}

func (r InvariantReport) String() string {
	return fmt.Sprintf("vmims=%d outsideTerm=%d stillGated=%d addedTwice=%d missingReport=%d duplicateEvents=%d "+
		"lostEventsAtKill=%d lostEventsLogged=%d gatesClearedAfter=%s finalAfter=%s", r.VMIMs, r.OutsideTerm, r.StillGated, r.AddedTwice,
		r.MissingReport, r.DuplicateEvents, r.LostEventsAtKill, r.LostEventsLogged, r.GatedClearedAfter.Round(100*time.Millisecond),
		r.FinalPhasesReached.Round(100*time.Millisecond))
}

// InvariantOptions say when the fault ended and which replica kills may have
// taken an Event with them.
type InvariantOptions struct {
	FaultEnded time.Time
	// Kills are the moments replicas were killed with SIGKILL. The next replica to
	// lead must have started in a later wall-clock second (whole-second condition
	// times tell the writers apart), see AlignAfterKill.
	Kills []time.Time
	// FinalTimeout bounds the wait for every VMIM to end (after the gates cleared).
	FinalTimeout time.Duration
	// Replicas whose logs may account for a lost Event: Events are best effort
	// (controller/events.h), so one whose create failed while the API server was down
	// is lost — allowed only when a replica logged that failure for that VMIM
	// ("Failed to record event"/"Dropped event" naming it, or "Dropped events at
	// shutdown" with a count covering it).
	Replicas []Replica
}

// loggedEventLosses counts, per VMIM ns/name, the Event losses the replicas'
// logs name, and the unattributed ones dropped at shutdown.
func loggedEventLosses(replicas []Replica, reason string) (named map[string]int, atShutdown int) {
	named = map[string]int{}
	for _, r := range replicas {
		for _, l := range strings.Split(OperatorLog(r.Name), "\n") {
			switch {
			case strings.Contains(l, `msg="Dropped events at shutdown"`):
				if i := strings.Index(l, "count="); i >= 0 {
					n, _ := strconv.Atoi(strings.Trim(strings.Fields(l[i+len("count="):])[0], `"`))
					atShutdown += n
				}
			case (strings.Contains(l, `msg="Failed to record event"`) || strings.Contains(l, `msg="Dropped event:`)) &&
				strings.Contains(l, "reason="+reason):
				if i := strings.Index(l, "vmim="); i >= 0 {
					named[strings.Trim(strings.Fields(l[i+len("vmim="):])[0], `"`)]++
				}
			}
		}
	}
	return named, atShutdown
}

// AlignAfterKill waits until the wall-clock second after killed has begun:
// condition times are whole seconds, so a condition written in the kill's second
// or before is the killed replica's. It aligns clocks; it waits for no effect.
func AlignAfterKill(killed time.Time) {
	time.Sleep(time.Until(killed.Truncate(time.Second).Add(time.Second)))
}

// CheckInvariants checks issue 14's invariants on the VMIMs placed in ns after a
// fault, and fails the test (t.Errorf, so every violation is listed) on any:
//   - no target pod of these VMIMs carries the gate 2 x LeaseDuration after the fault ended
//     (or after its creation, for a pod created later);
//   - every VMIM succeeds, on a node its term admits (VMIM migrationState, target pod);
//   - no target pod has a requirement twice in a term, and the term's requirement is in each term once;
//   - every VMIM carries its final report (framework.WaitFinalReport) naming that node;
//   - no operator Event recorded twice (same object, reason, message; count 1), and exactly
//     one TermApplied Event per VMIM unless the killed replica wrote the condition or a
//     replica logged the loss of that Event (o.Replicas).
func (f *Framework) CheckInvariants(t testing.TB, ns string, placed []Placed, o InvariantOptions) InvariantReport {
	t.Helper()
	rep := InvariantReport{VMIMs: len(placed)}
	byName := map[string]Placed{}
	for _, p := range placed {
		byName[p.Name] = p
	}
	if o.FinalTimeout == 0 {
		o.FinalTimeout = 3 * time.Minute
	}

	// 1. Gates released within 2 x the lease duration after the fault ended.
	gateDeadline := o.FaultEnded.Add(2 * LeaseDuration)
	var gated []string
	for {
		gated = gated[:0]
		pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(Ctx(t), metav1.ListOptions{LabelSelector: virtv1.MigrationJobLabel})
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if _, ours := byName[p.Annotations[virtv1.MigrationJobNameAnnotation]]; ours && HasGate(p) && p.DeletionTimestamp == nil {
					gated = append(gated, p.Name)
				}
			}
		}
		if err == nil && len(gated) == 0 {
			rep.GatedClearedAfter = time.Since(o.FaultEnded)
			break
		}
		if time.Now().After(gateDeadline) {
			rep.StillGated = len(gated)
			t.Errorf("%d target pods still gated %s after the fault ended (%v): %v", len(gated), 2*LeaseDuration, err, gated)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// 2. Every VMIM ends, Succeeded, on an allowed node.
	finalDeadline := time.Now().Add(o.FinalTimeout)
	migs := map[string]*virtv1.VirtualMachineInstanceMigration{}
	for len(migs) < len(placed) {
		list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(Ctx(t), metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				m := &list.Items[i]
				if _, ours := byName[m.Name]; ours && m.IsFinal() {
					migs[m.Name] = m
				}
			}
		}
		if len(migs) == len(placed) {
			break
		}
		if time.Now().After(finalDeadline) {
			var open []string
			for _, p := range placed {
				if migs[p.Name] == nil {
					open = append(open, p.Name)
				}
			}
			t.Fatalf("%d of %d VMIMs not final %s after the gates cleared (%v): %v", len(open), len(placed), o.FinalTimeout, err, open)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep.FinalPhasesReached = time.Since(o.FaultEnded)
	nodeOf := map[string]string{}
	for _, p := range placed {
		m := migs[p.Name]
		// Where it completed: the target pod's node (virt-controller copies the VMI's
		// migrationState into the VMIM's status after the phase, so that may still be
		// empty), the VMIM's migrationState when set, and the VMI's node.
		target := ""
		pods := f.TargetPods(t, ns, m)
		for _, pod := range pods {
			if pod.Spec.NodeName != "" && !contains(p.Allowed, pod.Spec.NodeName) {
				rep.OutsideTerm++
				t.Errorf("VMIM %s: target pod %s on %s, outside the term %v", p.Name, pod.Name, pod.Spec.NodeName, p.Allowed)
			}
			if pod.Spec.NodeName != "" {
				target = pod.Spec.NodeName
			}
		}
		if ms := m.Status.MigrationState; ms != nil && ms.TargetNode != "" && ms.TargetNode != target {
			rep.OutsideTerm++
			t.Errorf("VMIM %s: migrationState.targetNode %q, target pod on %q (term %v)", p.Name, ms.TargetNode, target, p.Allowed)
		}
		switch {
		case m.Status.Phase != virtv1.MigrationSucceeded:
			t.Errorf("VMIM %s ended %s, want Succeeded; status %s", p.Name, m.Status.Phase, toJSON(m.Status))
		case !contains(p.Allowed, target):
			rep.OutsideTerm++
			t.Errorf("VMIM %s completed with its target pod on %q, outside the term %v", p.Name, target, p.Allowed)
		default:
			vmi, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(Ctx(t), m.Spec.VMIName, metav1.GetOptions{})
			if err != nil || !contains(p.Allowed, vmi.Status.NodeName) {
				rep.OutsideTerm++
				t.Errorf("VMIM %s succeeded, but VMI %s runs on %q, outside the term %v (%v)", p.Name, m.Spec.VMIName, vmiNode(vmi), p.Allowed, err)
			}
		}
		nodeOf[p.Name] = target

		// 3. No requirement twice; the term's requirement in every term exactly once.
		if len(pods) != 1 {
			t.Errorf("VMIM %s: %d target pods, want 1", p.Name, len(pods))
		}
		want := toJSON(p.Requirement)
		for _, pod := range pods {
			req := RequiredNodeAffinity(&pod)
			if req == nil || len(req.NodeSelectorTerms) == 0 {
				t.Errorf("VMIM %s: target pod %s has no required node affinity", p.Name, pod.Name)
				continue
			}
			for i, term := range req.NodeSelectorTerms {
				for _, list := range [][]k8sv1.NodeSelectorRequirement{term.MatchExpressions, term.MatchFields} {
					seen := map[string]bool{}
					for _, r := range list {
						if s := toJSON(r); seen[s] {
							rep.AddedTwice++
							t.Errorf("VMIM %s: target pod %s term %d has requirement %s twice", p.Name, pod.Name, i, s)
						} else {
							seen[s] = true
						}
					}
				}
				list := term.MatchExpressions
				if p.Field {
					list = term.MatchFields
				}
				n := 0
				for _, r := range list {
					if toJSON(r) == want {
						n++
					}
				}
				if n != 1 {
					t.Errorf("VMIM %s: target pod %s term %d carries the added requirement %d times, want 1: %s", p.Name, pod.Name, i, n, toJSON(term))
				}
			}
		}
	}

	// 4. The final report on every VMIM.
	final := map[string]*virtv1.VirtualMachineInstanceMigration{}
	for _, p := range placed {
		if nodeOf[p.Name] == "" {
			rep.MissingReport++
			continue
		}
		ok := false
		var m *virtv1.VirtualMachineInstanceMigration
		Eventually(t, 60*time.Second, "final report of "+p.Name, func() (bool, string) {
			var err error
			m, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(Ctx(t), p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ok = hasFinalReport(m, nodeOf[p.Name])
			return ok, "conditions " + toJSON(m.Status.Conditions)
		})
		final[p.Name] = m
		// A target pod created after the fault ended (virt-controller retries a create the
		// webhook refused while its replica was down) is held from its creation on: the
		// gate must be gone within 2 x the lease duration of the later of the two. The
		// Applied condition's time is the release (whole seconds: one second of slack).
		if applied := MigrationCondition(m, ConditionTermApplied); ok && applied != nil {
			for _, pod := range f.TargetPods(t, ns, m) {
				from := o.FaultEnded
				if pod.CreationTimestamp.Time.After(from) {
					from = pod.CreationTimestamp.Time
				}
				if held := applied.LastTransitionTime.Time.Sub(from); held > 2*LeaseDuration+time.Second {
					rep.StillGated++
					t.Errorf("VMIM %s: target pod %s (created %s) released at %s, %s after the fault ended or it was created, over %s",
						p.Name, pod.Name, pod.CreationTimestamp.UTC().Format(time.RFC3339), applied.LastTransitionTime.UTC().Format(time.RFC3339),
						held, 2*LeaseDuration)
				}
			}
		}
	}

	// 5. Events: none twice; TermApplied exactly once unless lost with a killed replica.
	// The Event follows its status write: give the last ones a moment (bounded).
	var events []k8sv1.Event
	eventDeadline := time.Now().Add(20 * time.Second)
	for {
		events = f.OperatorEvents(t, ns, "")
		missing := 0
		for _, p := range placed {
			if len(eventsOf(events, p.Name, ReasonTermApplied)) == 0 && !writtenByKilled(final[p.Name], o.Kills) {
				missing++
			}
		}
		if missing == 0 || time.Now().After(eventDeadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	type key struct{ uid, reason, message string }
	seen := map[key]int32{}
	for _, e := range events {
		c := e.Count
		if c < 1 {
			c = 1
		}
		seen[key{string(e.InvolvedObject.UID), e.Reason, e.Message}] += c
	}
	var dup []string
	for k, c := range seen {
		if c > 1 {
			rep.DuplicateEvents++
			dup = append(dup, fmt.Sprintf("%s %q x%d", k.reason, k.message, c))
		}
	}
	sort.Strings(dup)
	if len(dup) > 0 {
		t.Errorf("%d Events recorded more than once: %v", len(dup), dup)
	}
	named, atShutdown := loggedEventLosses(o.Replicas, ReasonTermApplied)
	for _, p := range placed {
		ev := eventsOf(events, p.Name, ReasonTermApplied)
		switch {
		case len(ev) == 0 && writtenByKilled(final[p.Name], o.Kills):
			rep.LostEventsAtKill++
		case len(ev) == 0 && named[ns+"/"+p.Name] > 0:
			rep.LostEventsLogged++
		case len(ev) == 0 && atShutdown > 0:
			atShutdown--
			rep.LostEventsLogged++
		case len(ev) != 1 || ev[0].Type != k8sv1.EventTypeNormal:
			t.Errorf("VMIM %s: TermApplied Events %s, want exactly one Normal", p.Name, EventSummary(ev))
		}
	}
	return rep
}

func vmiNode(vmi *virtv1.VirtualMachineInstance) string {
	if vmi == nil {
		return ""
	}
	return vmi.Status.NodeName
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func hasFinalReport(m *virtv1.VirtualMachineInstanceMigration, node string) bool {
	applied, sched := MigrationCondition(m, ConditionTermApplied), MigrationCondition(m, ConditionTargetUnsched)
	return applied != nil && applied.Status == k8sv1.ConditionTrue && applied.Reason == ReasonTermApplied &&
		sched != nil && sched.Status == k8sv1.ConditionFalse && sched.Reason == ReasonScheduled &&
		strings.HasSuffix(sched.Message, " was scheduled to node "+node)
}

func eventsOf(events []k8sv1.Event, name, reason string) []k8sv1.Event {
	var out []k8sv1.Event
	for _, e := range events {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// writtenByKilled: the VMIM's Applied condition carries a time no later than the
// second of one of the kills, so the killed replica wrote it (and may have died
// before its Event).
func writtenByKilled(m *virtv1.VirtualMachineInstanceMigration, kills []time.Time) bool {
	if m == nil {
		return false
	}
	c := MigrationCondition(m, ConditionTermApplied)
	if c == nil {
		return false
	}
	for _, k := range kills {
		if !c.LastTransitionTime.Time.After(k.Truncate(time.Second)) {
			return true
		}
	}
	return false
}
