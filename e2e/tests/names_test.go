package tests

// The names the scenarios use, checked against the operator's own headers so
// the two suites cannot drift: api/names.h (and controller/events.h's event
// source) are parsed, every declaration in api/names.h must be claimed below
// (compared with a framework constant, or with KubeVirt's Go API for the names
// the operator borrows from KubeVirt, or listed as not a name with the reason),
// and every claimed value must be spelled the same on both sides. Needs no
// cluster.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// cppName matches `inline constexpr std::string_view kName = "value";` (or
// `const char* kName`), the value possibly on the next line.
var cppName = regexp.MustCompile(`inline\s+constexpr\s+(?:std::string_view|const\s+char\s*\*)\s+(k\w+)\s*=\s*("(?:[^"\\\n]|\\.)*")\s*;`)

// parseCppNames returns the string constants declared in the header at path
// (repository-relative).
func parseCppNames(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), path))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	out := map[string]string{}
	for _, m := range cppName.FindAllStringSubmatch(string(b), -1) {
		v, err := strconv.Unquote(m[2])
		if err != nil {
			t.Fatalf("%s: %s = %s: %v", path, m[1], m[2], err)
		}
		if _, dup := out[m[1]]; dup {
			t.Fatalf("%s declares %s twice", path, m[1])
		}
		out[m[1]] = v
	}
	return out
}

func TestNamesMatchTheOperatorHeaders(t *testing.T) {
	mirrored := map[string]string{
		"kAddedTermAnnotation":             framework.AddedTermAnnotation,
		"kSchedulingGate":                  framework.SchedulingGate,
		"kConditionTermApplied":            framework.ConditionTermApplied,
		"kConditionTargetPodUnschedulable": framework.ConditionTargetUnsched,
		"kReasonTermApplied":               framework.ReasonTermApplied,
		"kReasonTargetPodEscapedGate":      framework.ReasonTargetPodEscapedGate,
		"kReasonInvalidAddedTerm":          framework.ReasonInvalidAddedTerm,
		"kReasonInboundLimitReached":       framework.ReasonInboundLimitReached,
		"kReasonUnschedulable":             framework.ReasonUnschedulable,
		"kReasonPermanentlyUnschedulable":  framework.ReasonNeverSchedulable,
		"kReasonScheduled":                 framework.ReasonScheduled,
		"kEventTargetPodUnschedulable":     framework.EventTargetPodUnschedulable,
		"kEventTargetPodScheduled":         framework.EventTargetPodScheduled,
		"kRbacGroup":                       framework.RBACGroup,
		"kRbacResource":                    framework.RBACResource,
		"kRbacVerb":                        framework.RBACVerb,
		"kPolicyGroup":                     framework.PolicyGroup,
		"kPolicyVersion":                   framework.PolicyVersion,
		"kPolicyResource":                  framework.PolicyResource,
		"kPolicyKind":                      framework.PolicyKind,
		"kPolicyAnnotation":                framework.PolicyAnnotation,
		"kMaxInboundAnnotation":            framework.MaxInboundAnnotation,
		// Condition statuses and Event types, against Kubernetes' own Go API.
		"kStatusTrue":       string(k8sv1.ConditionTrue),
		"kPhaseSucceeded":   string(virtv1.MigrationSucceeded),
		"kPhaseFailed":      string(virtv1.MigrationFailed),
		"kStatusFalse":      string(k8sv1.ConditionFalse),
		"kEventTypeNormal":  k8sv1.EventTypeNormal,
		"kEventTypeWarning": k8sv1.EventTypeWarning,
		// The scheduler's reason for a pod no node fits, against Kubernetes' own Go API.
		"kPodReasonUnschedulable": k8sv1.PodReasonUnschedulable,
		// KubeVirt's names, against KubeVirt's own Go API.
		"kLabelApp":                      virtv1.AppLabel,
		"kLabelMigrationJobUID":          virtv1.MigrationJobLabel,
		"kAnnotationMigrationJobName":    virtv1.MigrationJobNameAnnotation,
		"kLabelCreatedBy":                virtv1.CreatedByLabel,
		"kAnnotationEvacuationMigration": virtv1.EvacuationMigrationAnnotation,
		"kAnnotationEvictionSource":      virtv1.EvictionSourceAnnotation,
		"kLabelMigrationVmiName":         virtv1.MigrationSelectorLabel,
		// virt-controller's launcher pods carry kubevirt.io=virt-launcher; KubeVirt's
		// Go API has no constant for the value (its pods are built from a literal).
		"kLabelAppValue": "virt-launcher",
		// virt-api's pod eviction admitter (markVMI) writes the literal "descheduler".
		"kEvictionSourceDescheduler": "descheduler",
	}
	notNames := map[string]string{
		"kBoundPodsFieldSelector": "a field selector the operator sends, not a name of the API",
		"kMetadataLabelsDropped":  "a member the operator's client adds to cached objects' metadata; never sent to or by the API server",
	}

	got := parseCppNames(t, "api/names.h")
	if len(got) < len(mirrored) {
		t.Errorf("parsed %d names from api/names.h, want at least %d: is every declaration still `inline constexpr std::string_view kName = \"value\";`?", len(got), len(mirrored))
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		want, ok := mirrored[n]
		if _, skip := notNames[n]; skip {
			continue
		}
		if !ok {
			t.Errorf("api/names.h declares %s = %q, which no e2e constant mirrors: add it to e2e/framework and to this test", n, got[n])
			continue
		}
		if got[n] != want {
			t.Errorf("api/names.h %s = %q, e2e side %q", n, got[n], want)
		}
	}
	for n := range mirrored {
		if _, ok := got[n]; !ok {
			t.Errorf("api/names.h no longer declares %s (e2e side %q)", n, mirrored[n])
		}
	}
	for n := range notNames {
		if _, ok := got[n]; !ok {
			t.Errorf("api/names.h no longer declares %s: drop it from this test", n)
		}
	}

	events := parseCppNames(t, "controller/events.h")
	if events["kEventSource"] != framework.EventSource {
		t.Errorf("controller/events.h kEventSource = %q, e2e side %q", events["kEventSource"], framework.EventSource)
	}
}
