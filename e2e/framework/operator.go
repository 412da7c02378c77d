package framework

// Helpers for the operator's scenarios (webhook, controller, plugin, manifests):
// driving the out-of-cluster operator replicas through e2e/operator.sh, running
// kubectl and the kubectl-migrate plugin as a given user, reading the operator's
// conditions and Events, and extra fake nodes shaped like the agent's.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

// Names of the operator's API, spelled as api/names.h spells them
// (e2e/tests/names_test.go parses that header and compares).
const (
	AddedTermAnnotation         = "migration-target.kubevirt.io/added-node-selector-term"
	SchedulingGate              = "migration-target.kubevirt.io/added-node-selector-term"
	ConditionTermApplied        = "addedNodeSelectorTermApplied"
	ConditionTargetUnsched      = "targetPodUnschedulable"
	ReasonTermApplied           = "TermApplied"
	ReasonTargetPodEscapedGate  = "TargetPodEscapedGate"
	ReasonInvalidAddedTerm      = "InvalidAddedTerm"
	ReasonInboundLimitReached   = "InboundLimitReached"
	ReasonUnschedulable         = "Unschedulable"
	ReasonNeverSchedulable      = "PermanentlyUnschedulable"
	ReasonScheduled             = "Scheduled"
	EventTargetPodUnschedulable = "TargetPodUnschedulable"
	EventTargetPodScheduled     = "TargetPodScheduled"
	RBACGroup                   = "migration-target.kubevirt.io"
	RBACResource                = "addednodeselectorterms"
	RBACVerb                    = "use"
	PolicyGroup                 = "migration-target.kubevirt.io"
	PolicyVersion               = "v1alpha1"
	PolicyResource              = "migrationtargetpolicies"
	PolicyKind                  = "MigrationTargetPolicy"
	PolicyAnnotation            = "migration-target.kubevirt.io/policy"
	MaxInboundAnnotation        = "migration-target.kubevirt.io/max-inbound-per-node"
	// controller/events.h's kEventSource (checked by names_test.go too).
	EventSource            = "migration-target-operator"
	OperatorNamespace      = "kubevirt-migration-target"
	OperatorLease          = "migration-target-operator"
	OperatorServiceAccount = "system:serviceaccount:kubevirt-migration-target:migration-target-operator"
	RequesterClusterRole   = "migration-target-requester"
	// The validating webhook's name (manifests/default/webhooks.yaml), as the API
	// server quotes it in a denial.
	VMIMWebhookName = "vmim.migration-target.kubevirt.io"
	// FieldPath is how the webhook names the annotation in causes and messages.
	FieldPath = "metadata.annotations[" + AddedTermAnnotation + "]"
)

// NodeNameTerm is the JSON of a term `matchFields metadata.name In [node]`.
func NodeNameTerm(node string) string {
	return fmt.Sprintf(`{"matchFields":[{"key":"metadata.name","operator":"In","values":[%q]}]}`, node)
}

// HostnamesTerm is the JSON of a term `kubernetes.io/hostname In [nodes...]`.
func HostnamesTerm(nodes ...string) string {
	b, _ := json.Marshal(map[string]any{"matchExpressions": []any{map[string]any{
		"key": k8sv1.LabelHostname, "operator": "In", "values": nodes}}})
	return string(b)
}

// WithTerm sets the added-term annotation on a VMIM.
func WithTerm(termJSON string) MigrationOption { return WithAnnotation(AddedTermAnnotation, termJSON) }

// RepoRoot is the repository's root (the directory holding e2e/operator.sh),
// found from the working directory (go test runs in e2e/tests).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "e2e", "operator.sh")); err == nil {
			return d
		}
	}
	t.Fatalf("no e2e/operator.sh above %s", dir)
	return ""
}

// Result is the outcome of a command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run runs a command in the repository root with extra environment entries and
// a deadline; it never fails the test by itself (the caller asserts).
func Run(t testing.TB, timeout time.Duration, env []string, name string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s %s did not finish within %s; stdout: %s; stderr: %s", name, strings.Join(args, " "), timeout, out.String(), errb.String())
	}
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.Code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

var (
	operatorBinOnce sync.Once
	operatorBinErr  string
)

// OperatorScript runs e2e/operator.sh with args and fails the test on a
// non-zero exit. The operator binary is resolved once (`operator.sh binary`)
// and pinned in KMT_OPERATOR_BIN, so restarts never rebuild mid-run.
func OperatorScript(t testing.TB, args ...string) string {
	t.Helper()
	operatorBinOnce.Do(func() {
		if os.Getenv("KMT_OPERATOR_BIN") != "" {
			return
		}
		r := Run(t, 10*time.Minute, nil, "e2e/operator.sh", "binary")
		if r.Code != 0 {
			operatorBinErr = r.String()
			return
		}
		os.Setenv("KMT_OPERATOR_BIN", strings.TrimSpace(r.Stdout))
	})
	if operatorBinErr != "" {
		t.Fatalf("e2e/operator.sh binary: %s", operatorBinErr)
	}
	r := Run(t, 3*time.Minute, nil, "e2e/operator.sh", args...)
	if r.Code != 0 {
		t.Fatalf("e2e/operator.sh %s: %s", strings.Join(args, " "), r)
	}
	return r.Stdout
}

// StartOperator starts replica name at index (ports offset index*10) with
// extra flags and waits for its /readyz.
func StartOperator(t testing.TB, name string, index int, flags ...string) {
	t.Helper()
	OperatorScript(t, append([]string{"start", name, fmt.Sprint(index)}, flags...)...)
}

// StartOperatorWithKubeconfig is StartOperator with another kubeconfig for the
// replica (KMT_OPERATOR_KUBECONFIG), e.g. one whose server is a fault proxy.
func StartOperatorWithKubeconfig(t testing.TB, name string, index int, kubeconfig string, flags ...string) {
	t.Helper()
	OperatorScript(t, "binary") // resolves and pins the binary once
	args := append([]string{"start", name, fmt.Sprint(index)}, flags...)
	r := Run(t, 3*time.Minute, []string{"KMT_OPERATOR_KUBECONFIG=" + kubeconfig}, "e2e/operator.sh", args...)
	if r.Code != 0 {
		t.Fatalf("e2e/operator.sh %s: %s", strings.Join(args, " "), r)
	}
}

// StopOperator stops replica name with signal (TERM, KILL).
func StopOperator(t testing.TB, name, signal string) {
	t.Helper()
	OperatorScript(t, "stop", name, signal)
}

// RestoreDefaultOperator registers a cleanup that leaves the cluster as the
// e2e hook set it up: replica "1" stopped, replica "0" running with default
// flags, webhooks on. Scenarios that change the operator call it first.
func RestoreDefaultOperator(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		StopOperator(t, "1", "TERM")
		StopOperator(t, "0", "TERM")
		StartOperator(t, "0", 0)
		OperatorScript(t, "webhooks", "on")
	})
}

// OperatorLog is the log of replica name.
func OperatorLog(name string) string {
	b, _ := os.ReadFile(filepath.Join(os.Getenv("KMT_E2E_DIR"), "logs", "operator-"+name+".log"))
	return string(b)
}

// Kubectl is the pinned kubectl (cluster.sh env exports KMT_KUBECTL).
func Kubectl() string {
	if k := os.Getenv("KMT_KUBECTL"); k != "" {
		return k
	}
	return "kubectl"
}

// Virtctl is KubeVirt's virtctl migration commands (cluster.sh env exports KMT_VIRTCTL).
func Virtctl(t testing.TB) string {
	t.Helper()
	v := os.Getenv("KMT_VIRTCTL")
	if v == "" {
		t.Fatal("KMT_VIRTCTL is not set: run the scenarios through e2e/run.sh or source <(e2e/cluster.sh env)")
	}
	return v
}

// KubeconfigOf returns the kubeconfig path of a user: AdminUser or VMOwnerUser.
func KubeconfigOf(user string) string {
	if user == VMOwnerUser {
		return os.Getenv("KMT_E2E_VM_OWNER_KUBECONFIG")
	}
	return os.Getenv("KMT_E2E_ADMIN_KUBECONFIG")
}

// KubectlAs runs kubectl as user with stdin.
func KubectlAs(t testing.TB, user, stdin string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(Kubectl(), append([]string{"--kubeconfig", KubeconfigOf(user)}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.Code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl: %v", err)
	}
	return r
}

var (
	cliOnce sync.Once
	cliPath string
	cliErr  string
)

// CLIBin is the kubectl-migrate plugin: $KMT_CLI_BIN, else
// $(bazel info bazel-bin)/cli/kubectl-migrate.
func CLIBin(t testing.TB) string {
	t.Helper()
	cliOnce.Do(func() {
		if p := os.Getenv("KMT_CLI_BIN"); p != "" {
			cliPath = p
			return
		}
		r := Run(t, 5*time.Minute, nil, "bazel", "info", "bazel-bin")
		if r.Code != 0 {
			cliErr = "bazel info bazel-bin: " + r.String()
			return
		}
		cliPath = filepath.Join(strings.TrimSpace(r.Stdout), "cli", "kubectl-migrate")
	})
	if cliErr != "" {
		t.Fatal(cliErr)
	}
	if _, err := os.Stat(cliPath); err != nil {
		t.Fatalf("kubectl-migrate plugin: %v (build //cli:kubectl-migrate or set KMT_CLI_BIN)", err)
	}
	return cliPath
}

// Plugin runs `kubectl-migrate --kubeconfig <user's> args...`.
func Plugin(t testing.TB, user string, timeout time.Duration, args ...string) Result {
	t.Helper()
	return Run(t, timeout, nil, CLIBin(t), append([]string{"--kubeconfig", KubeconfigOf(user)}, args...)...)
}

// MigrationCondition returns the VMIM's condition of type ct, or nil.
func MigrationCondition(m *virtv1.VirtualMachineInstanceMigration, ct string) *virtv1.VirtualMachineInstanceMigrationCondition {
	for i := range m.Status.Conditions {
		if string(m.Status.Conditions[i].Type) == ct {
			return &m.Status.Conditions[i]
		}
	}
	return nil
}

// GetMigration reads a VMIM as the admin.
func (f *Framework) GetMigration(t testing.TB, ns, name string) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	m, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(Ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get VMIM %s/%s: %v", ns, name, err)
	}
	return m
}

// WaitMigrationCondition waits until the VMIM has condition ct with status and
// reason, and returns the VMIM.
func (f *Framework) WaitMigrationCondition(t testing.TB, ns, name, ct, status, reason string, timeout time.Duration) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var m *virtv1.VirtualMachineInstanceMigration
	Eventually(t, timeout, fmt.Sprintf("VMIM %s/%s condition %s=%s/%s", ns, name, ct, status, reason), func() (bool, string) {
		var err error
		m, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := MigrationCondition(m, ct)
		if c == nil {
			return false, "conditions: " + toJSON(m.Status.Conditions) + " phase " + string(m.Status.Phase)
		}
		return string(c.Status) == status && c.Reason == reason, "condition: " + toJSON(c)
	})
	return m
}

// OperatorEvents returns the Events the operator recorded about the object
// named name in ns (all of them when name is empty).
func (f *Framework) OperatorEvents(t testing.TB, ns, name string) []k8sv1.Event {
	t.Helper()
	list, err := f.Admin.Kube.CoreV1().Events(ns).List(Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events in %s: %v", ns, err)
	}
	var out []k8sv1.Event
	for _, e := range list.Items {
		if (e.Source.Component == EventSource || e.ReportingController == EventSource) && (name == "" || e.InvolvedObject.Name == name) {
			out = append(out, e)
		}
	}
	return out
}

// EventsWithReason filters events by reason.
func EventsWithReason(events []k8sv1.Event, reason string) []k8sv1.Event {
	var out []k8sv1.Event
	for _, e := range events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// EventSummary renders events for failure messages.
func EventSummary(events []k8sv1.Event) string {
	var s []string
	for _, e := range events {
		s = append(s, fmt.Sprintf("%s/%s %s: %s", e.Type, e.Reason, e.InvolvedObject.Name, e.Message))
	}
	return "[" + strings.Join(s, " | ") + "]"
}

// ExtraNode creates a fake node shaped like the agent's nodes (a copy of
// f.Nodes[0] under another name, hostname label and InternalIP; Ready), after
// mutate changed it; the agent plays it like the others. It is deleted when the
// test ends.
func (f *Framework) ExtraNode(t testing.TB, name, ip string, mutate func(*k8sv1.Node)) *k8sv1.Node {
	t.Helper()
	base, err := f.Admin.Kube.CoreV1().Nodes().Get(Ctx(t), f.Nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", f.Nodes[0], err)
	}
	node := &k8sv1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status:     *base.Status.DeepCopy(),
	}
	for k, v := range base.Labels {
		node.Labels[k] = v
	}
	node.Labels[k8sv1.LabelHostname] = name
	node.Labels["kmt-e2e/extra-node"] = "true"
	node.Status.Addresses = []k8sv1.NodeAddress{{Type: k8sv1.NodeInternalIP, Address: ip}, {Type: k8sv1.NodeHostName, Address: name}}
	now := metav1.Now()
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = now
		node.Status.Conditions[i].LastTransitionTime = now
	}
	if mutate != nil {
		mutate(node)
	}
	created, err := f.Admin.Kube.CoreV1().Nodes().Create(Ctx(t), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	// Status is ignored on create by some versions: write it explicitly.
	created.Status = node.Status
	if created, err = f.Admin.Kube.CoreV1().Nodes().UpdateStatus(Ctx(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of node %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := f.Admin.Kube.CoreV1().Nodes().Delete(Ctx(t), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete node %s: %v", name, err)
		}
	})
	return created
}

// RequiredNodeAffinity returns the pod's required node selector, or nil.
func RequiredNodeAffinity(pod *k8sv1.Pod) *k8sv1.NodeSelector {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// HasGate reports whether the pod carries the operator's scheduling gate.
func HasGate(pod *k8sv1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == SchedulingGate {
			return true
		}
	}
	return false
}

// ToJSON renders v for failure messages.
func ToJSON(v any) string { return toJSON(v) }

// RandomSuffix is a short random hex string for unique cluster-scoped names.
func RandomSuffix() string { return randomSuffix() }

// OwnerNamespace is Namespace, then waits until the API server's RBAC
// authorizer has caught up with the VM owner's new RoleBinding (its informer
// lags the write by a moment), so a scenario's first request as the VM owner
// meets the webhook rather than an RBAC 403.
func (f *Framework) OwnerNamespace(t testing.TB) string {
	t.Helper()
	ns := f.Namespace(t)
	for _, res := range []string{"virtualmachineinstances", "virtualmachineinstancemigrations"} {
		Eventually(t, 30*time.Second, "vm-owner may create "+res+" in "+ns, func() (bool, string) {
			r, err := f.VMOwner.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(Ctx(t), &authzv1.SelfSubjectAccessReview{
				Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
					Namespace: ns, Verb: "create", Group: "kubevirt.io", Resource: res}},
			}, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			return r.Status.Allowed, "not allowed yet: " + r.Status.Reason
		})
	}
	return ns
}

// WaitFinalReport waits (bounded) until the VMIM ns/name carries the whole report
// an admin reads after the fact for a migration whose target pod was released
// with the term and bound to node: addedNodeSelectorTermApplied=True/TermApplied,
// and targetPodUnschedulable=False/Scheduled naming node. It returns the VMIM.
func (f *Framework) WaitFinalReport(t testing.TB, ns, name, node string, timeout time.Duration) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var m *virtv1.VirtualMachineInstanceMigration
	Eventually(t, timeout, fmt.Sprintf("VMIM %s/%s report: %s=True/%s and %s=False/%s on node %s", ns, name,
		ConditionTermApplied, ReasonTermApplied, ConditionTargetUnsched, ReasonScheduled, node), func() (bool, string) {
		var err error
		m, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		applied, sched := MigrationCondition(m, ConditionTermApplied), MigrationCondition(m, ConditionTargetUnsched)
		ok := applied != nil && applied.Status == k8sv1.ConditionTrue && applied.Reason == ReasonTermApplied &&
			sched != nil && sched.Status == k8sv1.ConditionFalse && sched.Reason == ReasonScheduled &&
			strings.HasSuffix(sched.Message, " was scheduled to node "+node)
		return ok, "phase " + string(m.Status.Phase) + " conditions " + toJSON(m.Status.Conditions)
	})
	return m
}
