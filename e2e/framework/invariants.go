package framework

// The invariants every fault of the fault tier is followed by (issue 14 §2):
// CheckInvariants on the placed VMIMs of one namespace, counted per invariant.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

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
