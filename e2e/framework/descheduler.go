package framework

// The real descheduler (sigs.k8s.io/descheduler, built by e2e/build-binaries.sh),
// run out of cluster against the e2e cluster, once per call and never by
// default: it would evict other scenarios' pods. A scenario scopes every run to
// its own namespace, pods and pool nodes (DeschedulerPolicy), and the
// descheduler acts as its own user with the rights written here.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeschedulerUser is the descheduler's identity (client-certificate CN).
const DeschedulerUser = "kmt-descheduler"

// deschedulerRole is what one run of the descheduler needs here, learnt from the
// descheduler's own deployment RBAC (kubernetes/base/rbac.yaml) and trimmed to
// this use: no leader election (no Leases: it runs once), no metrics collector
// (no metrics.k8s.io), no Prometheus (no Secrets), and no `delete` on pods: it
// removes pods only through the eviction API, so every removal meets PDBs and
// virt-api's eviction interceptor. The informers it always starts are pods, nodes
// and persistentvolumeclaims (pkg/descheduler/descheduler.go newDescheduler);
// events.k8s.io Events record each eviction. Namespaces and priorityclasses,
// which upstream grants too, are read only for a DefaultEvictor
// namespaceLabelSelector or priorityThreshold (defaultevictor.go), which
// DeschedulerPolicy never sets.
var deschedulerRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
}

var (
	deschedulerOnce       sync.Once
	deschedulerKubeconfig string
	deschedulerErr        error
)

// deschedulerIdentity mints the descheduler's kubeconfig (`e2e/cluster.sh
// kubeconfig kmt-descheduler`) and binds its ClusterRole, once per test binary,
// and waits until the API server's authorizer grants it an eviction.
func (f *Framework) deschedulerIdentity(t testing.TB) string {
	t.Helper()
	deschedulerOnce.Do(func() {
		r := Run(t, time.Minute, nil, "e2e/cluster.sh", "kubeconfig", DeschedulerUser)
		if r.Code != 0 {
			deschedulerErr = fmt.Errorf("e2e/cluster.sh kubeconfig %s: %s", DeschedulerUser, r)
			return
		}
		deschedulerKubeconfig = strings.TrimSpace(r.Stdout)
		ctx := Ctx(t)
		rbac := f.Admin.Kube.RbacV1()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kmt-e2e-descheduler"}, Rules: deschedulerRole}
		if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			cur, gerr := rbac.ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
			if gerr != nil {
				deschedulerErr = gerr
				return
			}
			cur.Rules = deschedulerRole
			_, err = rbac.ClusterRoles().Update(ctx, cur, metav1.UpdateOptions{})
			deschedulerErr = err
		} else {
			deschedulerErr = err
		}
		if deschedulerErr != nil {
			return
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kmt-e2e-descheduler"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: DeschedulerUser}},
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			deschedulerErr = err
			return
		}
	})
	if deschedulerErr != nil {
		t.Fatalf("descheduler identity: %v", deschedulerErr)
	}
	Eventually(t, 30*time.Second, DeschedulerUser+" may create pods/eviction", func() (bool, string) {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               DeschedulerUser,
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "eviction"},
		}}
		got, err := f.Admin.Kube.AuthorizationV1().SubjectAccessReviews().Create(Ctx(t), sar, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Allowed, fmt.Sprintf("allowed=%t %s", got.Status.Allowed, got.Status.Reason)
	})
	return deschedulerKubeconfig
}

// DeschedulerPolicy is one profile with one deschedule plugin (a DeschedulerPolicy
// of descheduler/v1alpha2), scoped so a run touches nothing of other scenarios.
type DeschedulerPolicy struct {
	// Plugin is a deschedule plugin, e.g. RemovePodsViolatingNodeTaints or
	// RemovePodsViolatingNodeAffinity; Args are its arguments.
	Plugin string
	Args   map[string]any
	// Namespace is the only namespace whose pods the plugin considers
	// (the plugin's namespaces.include).
	Namespace string
	// NodeSelector limits the nodes the descheduler processes (the policy's
	// top-level nodeSelector), e.g. "kmt-e2e/pool=NAME".
	NodeSelector string
	// PodSelector limits the pods the DefaultEvictor lets through (its labelSelector).
	PodSelector map[string]string
}

// JSON renders the policy file (JSON is YAML, which the descheduler reads).
// The DefaultEvictor disables its PodsWithLocalStorage protection: every
// virt-launcher pod has emptyDir volumes, and those pods are the point.
func (p DeschedulerPolicy) JSON() ([]byte, error) {
	if p.Plugin == "" || p.Namespace == "" || p.NodeSelector == "" || len(p.PodSelector) == 0 {
		return nil, fmt.Errorf("a descheduler policy here names its plugin, namespace, node selector and pod selector: %+v", p)
	}
	args := map[string]any{}
	for k, v := range p.Args {
		args[k] = v
	}
	args["namespaces"] = map[string]any{"include": []string{p.Namespace}}
	policy := map[string]any{
		"apiVersion":   "descheduler/v1alpha2",
		"kind":         "DeschedulerPolicy",
		"nodeSelector": p.NodeSelector,
		"profiles": []any{map[string]any{
			"name": "kmt-e2e",
			"pluginConfig": []any{
				map[string]any{"name": "DefaultEvictor", "args": map[string]any{
					"labelSelector":  map[string]any{"matchLabels": p.PodSelector},
					"podProtections": map[string]any{"defaultDisabled": []string{"PodsWithLocalStorage"}},
				}},
				map[string]any{"name": p.Plugin, "args": args},
			},
			"plugins": map[string]any{
				"filter":            map[string]any{"enabled": []string{"DefaultEvictor"}},
				"preevictionfilter": map[string]any{"enabled": []string{"DefaultEvictor"}},
				"deschedule":        map[string]any{"enabled": []string{p.Plugin}},
			},
		}},
	}
	return json.MarshalIndent(policy, "", "  ")
}

// DeschedulerRun is the outcome of one run.
type DeschedulerRun struct {
	Name    string
	Log     string // klog output (stderr), also in $KMT_E2E_DIR/logs/descheduler-NAME.log
	Elapsed time.Duration
}

// RunDescheduler runs the descheduler once (no --descheduling-interval: it
// runs its profiles one time and exits) with the policy and
// EvictionsInBackground on, at log level 3 (where the evictor logs its
// evictions in background), serving no metrics port (--secure-port 0, so runs
// in parallel scenarios cannot collide on 10258). It fails the test if the run
// does not exit 0 within 2 minutes. name names the log file.
func (f *Framework) RunDescheduler(t testing.TB, name string, p DeschedulerPolicy) DeschedulerRun {
	t.Helper()
	bin := os.Getenv("KMT_DESCHEDULER")
	if bin == "" {
		t.Fatal("KMT_DESCHEDULER is not set: run the scenarios through e2e/run.sh or source <(e2e/cluster.sh env)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("descheduler binary: %v (e2e/build-binaries.sh builds it)", err)
	}
	kubeconfig := f.deschedulerIdentity(t)
	policy, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(os.Getenv("KMT_E2E_DIR"), "descheduler")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(dir, name+".policy.json")
	if err := os.WriteFile(policyFile, policy, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// A loop that fails is retried at once when no interval is set
	// (pkg/descheduler/descheduler.go RunDeschedulerStrategies), so the deadline is
	// what ends a run that cannot work.
	r := Run(t, 2*time.Minute, nil, bin,
		"--kubeconfig", kubeconfig,
		"--policy-config-file", policyFile,
		"--feature-gates", "EvictionsInBackground=true",
		"--secure-port", "0",
		"--v", "3")
	run := DeschedulerRun{Name: name, Log: r.Stderr + r.Stdout, Elapsed: time.Since(start)}
	logFile := filepath.Join(os.Getenv("KMT_E2E_DIR"), "logs", "descheduler-"+name+".log")
	_ = os.WriteFile(logFile, []byte(run.Log), 0o644)
	if r.Code != 0 {
		t.Fatalf("descheduler run %s exited %d (log %s):\n%s", name, r.Code, logFile, run.Log)
	}
	t.Logf("descheduler run %s: %s, log %s", name, run.Elapsed.Round(time.Millisecond), logFile)
	return run
}

// Lines returns the log lines with the klog message msg (quoted, as the
// structured logger writes it) that name pod (namespace/name).
func (r DeschedulerRun) Lines(msg, pod string) []string {
	var out []string
	for _, l := range strings.Split(r.Log, "\n") {
		if strings.Contains(l, `"`+msg+`"`) && (pod == "" || strings.Contains(l, `pod="`+pod+`"`)) {
			out = append(out, l)
		}
	}
	return out
}

var evictionSummary = regexp.MustCompile(`"Number of evictions/requests" totalEvicted=(\d+) evictionRequests=(\d+)`)

// Summary returns the counts of the run's closing log line: pods evicted by
// the loop and evictions in background the evictor tracks.
func (r DeschedulerRun) Summary() (evicted, requests string, ok bool) {
	m := evictionSummary.FindStringSubmatch(r.Log)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}
