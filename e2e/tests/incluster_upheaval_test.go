package tests

// The in-cluster tier's upheavals (see incluster_test.go): the leader pod deleted mid-flight, a
// drain of the node both replicas run on, the projected token rotated under the leader.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// (3) The leader pod deleted (as `kubectl delete pod` does: SIGTERM, the grace period) while
// placed migrations are in flight: a replica that was not deleted takes the Lease, every
// migration lands inside its term, no target pod is left gated (framework.CheckInvariants), and
// the Deployment is back to two Ready replicas on infra-0. KMT_INCLUSTER_MIGRATIONS (default 20)
// sets how many; the deletion comes after a seeded number of gates were released.
func TestInClusterLeaderPodDeletedMidFlight(t *testing.T) {
	f, node := requireInCluster(t)
	n := framework.EnvInt(t, "KMT_INCLUSTER_MIGRATIONS", 20)
	seed := framework.FaultSeed(t)
	rng := framework.NewRand(seed)
	pods := waitOperatorReady(t, f, node, 3*time.Minute)
	leaderID, leaderPod := leaderIdentity(t, f, pods)

	fl := startFleet(t, f, n)

	// The deletion comes after the k-th of the n VMIMs was created: the rest are created, gated
	// and released while the leader pod terminates and the other replica takes over.
	k := 1 + rng.Intn(n/2)
	var deleted time.Time
	var sofar []framework.Placed
	placed := fl.placeOn(t, rng, "incl", fl.vmis, func(p framework.Placed) {
		if sofar = append(sofar, p); len(sofar) != k {
			return
		}
		released, _ := fl.released(t, sofar)
		if err := f.Admin.Kube.CoreV1().Pods(framework.OperatorNamespace).Delete(framework.Ctx(t), leaderPod, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete the leader pod %s: %v", leaderPod, err)
		}
		deleted = time.Now()
		t.Logf("seed %d: deleted the leader pod %s after %d of %d VMIMs were created (%d gates released)", seed, leaderPod, k, n, released)
	})

	var holder string
	framework.Eventually(t, 2*framework.LeaseDuration+15*time.Second, "a replica other than the deleted one holds the Lease", func() (bool, string) {
		holder = leaseHolder(t, f)
		return holder != "" && holder != leaderID, "holder " + holder
	})
	tookOver := time.Since(deleted)
	rep := f.CheckInvariants(t, fl.ns, placed, framework.InvariantOptions{FaultEnded: deleted, Kills: []time.Time{deleted}})
	survivor := "the other original replica"
	if !strings.HasPrefix(holder, pods[0].Name+"_") && !strings.HasPrefix(holder, pods[1].Name+"_") {
		survivor = "the Deployment's new pod"
	}
	t.Logf("Lease taken by %s (%s) %s after the deletion; %s", holder, survivor, tookOver.Round(100*time.Millisecond), rep)
	if rep.StillGated != 0 || rep.OutsideTerm != 0 || rep.VMIMs != n {
		t.Errorf("after the leader pod's deletion: %s", rep)
	}

	after := waitOperatorReady(t, f, node, 3*time.Minute)
	for _, p := range after {
		if p.Name == leaderPod {
			t.Errorf("the deleted pod %s is still among the replicas", leaderPod)
		}
	}
}

// kubectlAdmin runs kubectl as the admin with a deadline.
func kubectlAdmin(t *testing.T, timeout time.Duration, args ...string) framework.Result {
	t.Helper()
	return framework.Run(t, timeout, nil, framework.Kubectl(), append([]string{"--kubeconfig", framework.KubeconfigOf(framework.AdminUser)}, args...)...)
}

// (4) `kubectl drain infra-0` while it would take both replicas. As the issue words it (only
// --ignore-daemonsets) the drain is refused before any eviction, because the pods' certificate
// directory is an emptyDir (local storage); with --delete-emptydir-data it evicts one replica (the
// PodDisruptionBudget allows one disruption) and the PodDisruptionBudget refuses the other until
// the drain's timeout: one replica stays Ready throughout and keeps answering the webhook. After
// uncordon both are Ready again.
func TestInClusterDrainRefusedByPDB(t *testing.T) {
	f, node := requireInCluster(t)
	before := waitOperatorReady(t, f, node, 3*time.Minute)
	t.Cleanup(func() {
		if r := kubectlAdmin(t, 30*time.Second, "uncordon", node.Name); r.Code != 0 {
			t.Errorf("kubectl uncordon %s: %s", node.Name, r)
		}
		waitOperatorReady(t, f, node, 3*time.Minute)
	})
	framework.Eventually(t, 60*time.Second, "the PodDisruptionBudget allows one disruption", func() (bool, string) {
		pdb, err := f.Admin.Kube.PolicyV1().PodDisruptionBudgets(framework.OperatorNamespace).Get(framework.Ctx(t), operatorDeployment, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.CurrentHealthy == 2 && pdb.Status.DisruptionsAllowed == 1, fmt.Sprintf("status %+v", pdb.Status)
	})
	uids := map[string]bool{}
	for _, p := range before {
		uids[string(p.UID)] = true
	}

	// As the issue words it: refused for the emptyDir, nothing evicted.
	r := kubectlAdmin(t, 60*time.Second, "drain", node.Name, "--ignore-daemonsets", "--timeout=30s")
	if r.Code == 0 || !strings.Contains(r.Stderr, "cannot delete Pods with local storage") {
		t.Errorf("kubectl drain %s --ignore-daemonsets: want a refusal naming local storage (the emptyDir), got %s", node.Name, r)
	}
	for _, p := range operatorPods(t, f) {
		if !uids[string(p.UID)] {
			t.Errorf("pod %s appeared after a drain that evicted nothing", p.Name)
		}
	}

	// With the emptyDir allowed: one eviction, then the budget refuses the other.
	r = kubectlAdmin(t, 120*time.Second, "drain", node.Name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s")
	out := r.Stdout + r.Stderr
	if r.Code == 0 || !strings.Contains(out, "Cannot evict pod as it would violate the pod's disruption budget") {
		t.Errorf("kubectl drain %s --delete-emptydir-data: want the PodDisruptionBudget's refusal until the timeout, got %s", node.Name, r)
	}
	if n := strings.Count(out, " evicted"); n != 1 {
		t.Errorf("kubectl drain evicted %d pods, want exactly one: %s", n, out)
	}
	var survivors []string
	for _, p := range operatorPods(t, f) {
		if uids[string(p.UID)] && podReady(&p) {
			survivors = append(survivors, p.Name)
		}
	}
	if len(survivors) != 1 {
		t.Fatalf("original replicas still Ready after the drain: %v, want exactly one", survivors)
	}
	// The remaining replica still serves the webhook through the Service.
	ns := f.Namespace(t)
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", f.Nodes[0]), f.Nodes[0])
	_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
		framework.NewMigration("broken", "vmi", framework.WithTerm(`{"matchExpressions":[{"key":"a","operator":"Bogus"}]}`)), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), framework.VMIMWebhookName) {
		t.Errorf("with one replica left, a broken term: err %v, want a denial by %s", err, framework.VMIMWebhookName)
	}
	t.Logf("drain refused by the PodDisruptionBudget; %s kept running", survivors[0])
}

// tokenJTI is the jti claim of a ServiceAccount token (a JWT), which the API server's audit
// events name as credential-id "JTI=<jti>".
func tokenJTI(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	var claims struct {
		JTI string `json:"jti"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.JTI == "" {
		t.Fatalf("JWT claims without jti: %v: %s", err, payload)
	}
	return claims.JTI
}

// auditTail reads the API server's audit log of the operator's requests from where it last
// stopped (cluster.sh writes it in the in-cluster tier).
type auditTail struct {
	path   string
	offset int64
}

// credentialsUsed returns the credential-ids of the operator's requests since the last call that
// pod made or that carried a token not bound to a pod.
func (a *auditTail) credentialsUsed(t *testing.T, pod string) map[string]int {
	t.Helper()
	f, err := os.Open(a.path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, 0); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	// Only whole lines; a partial last line is read next time.
	end := bytes.LastIndexByte(b, '\n') + 1
	a.offset += int64(end)
	used := map[string]int{}
	for _, l := range bytes.Split(b[:end], []byte("\n")) {
		var ev struct {
			User struct {
				Extra map[string][]string `json:"extra"`
			} `json:"user"`
		}
		if len(l) == 0 || json.Unmarshal(l, &ev) != nil {
			continue
		}
		// A token bound to the pod names it; one bound to a Secret (boundToken) does not, and
		// only the pod it was written into presents it.
		if p := ev.User.Extra["authentication.kubernetes.io/pod-name"]; len(p) == 0 || p[0] == pod {
			for _, id := range ev.User.Extra["authentication.kubernetes.io/credential-id"] {
				used[id]++
			}
		}
	}
	return used
}

// tokenVolume is the directory the kubelet projects a pod's ServiceAccount token into
// (kube-api-access-*), under the real node's kubelet root.
func tokenVolume(t *testing.T, pod *k8sv1.Pod) string {
	t.Helper()
	glob := filepath.Join(os.Getenv("KMT_E2E_NODE_DIR"), "kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~projected", "kube-api-access-*")
	dirs, err := filepath.Glob(glob)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("the token volume of pod %s: %v %v", pod.Name, dirs, err)
	}
	return dirs[0]
}

// replaceToken writes token into a pod's token volume as the kubelet's atomic writer does when it
// rotates the token: a new timestamped directory with every file of the volume, then the ..data
// symlink renamed over, so the container never sees a half-written file. Returns the new
// directory's name (what ..data points to).
func replaceToken(t *testing.T, dir, token string, n int) string {
	t.Helper()
	cur, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatalf("token volume %s: %v", dir, err)
	}
	tsDir, err := os.MkdirTemp(dir, fmt.Sprintf("..kmt_rotated_%d_", n))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(tsDir)
	for _, f := range []string{"ca.crt", "namespace"} {
		b, err := os.ReadFile(filepath.Join(dir, cur, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name, "token"), []byte(token), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	return name
}

// boundToken is a token of the operator's ServiceAccount bound to a new Secret (deleting the
// Secret revokes it), as the kubelet's are bound to the pod.
func boundToken(t *testing.T, f *framework.Framework, name string) (token string, revoke func()) {
	t.Helper()
	ns := framework.OperatorNamespace
	sec, err := f.Admin.Kube.CoreV1().Secrets(ns).Create(framework.Ctx(t), &k8sv1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Secret %s: %v", name, err)
	}
	revoke = func() {
		if err := f.Admin.Kube.CoreV1().Secrets(ns).Delete(framework.Ctx(t), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Secret %s: %v", name, err)
		}
	}
	exp := int64(600)
	tr, err := f.Admin.Kube.CoreV1().ServiceAccounts(ns).CreateToken(framework.Ctx(t), operatorDeployment, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp,
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: name, UID: sec.UID}}}, metav1.CreateOptions{})
	if err != nil {
		revoke()
		t.Fatalf("TokenRequest for %s bound to Secret %s: %v", operatorDeployment, name, err)
	}
	return tr.Status.Token, revoke
}

// (5) The projected token rotated under a running replica: the leader pod's token file replaced
// the way the kubelet's atomic writer replaces it, with another valid token of its
// ServiceAccount (A). The replica must start presenting A (the API server's audit log names each
// request's credential-id) without a restart; then A is revoked while the file already holds a
// third token B: the replica's next request is refused, it re-reads the file and presents B
// within seconds. Throughout it keeps the Lease, and a placed migration succeeds afterwards.
func TestInClusterTokenRotated(t *testing.T) {
	f, node := requireInCluster(t)
	pods := waitOperatorReady(t, f, node, 3*time.Minute)
	leaderID, leaderPod := leaderIdentity(t, f, pods)
	var pod *k8sv1.Pod
	for i := range pods {
		if pods[i].Name == leaderPod {
			pod = &pods[i]
		}
	}
	dir := tokenVolume(t, pod)
	original, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	audit := &auditTail{path: filepath.Join(os.Getenv("KMT_E2E_DIR"), "logs", "audit.log")}
	if used := audit.credentialsUsed(t, leaderPod); used["JTI="+tokenJTI(t, string(original))] == 0 {
		t.Fatalf("the audit log has no request of %s with its projected token (credential-ids %v)", leaderPod, used)
	}
	suffix := framework.RandomSuffix()
	tokenA, revokeA := boundToken(t, f, "kmt-rotation-a-"+suffix)
	tokenB, revokeB := boundToken(t, f, "kmt-rotation-b-"+suffix)
	// Whatever happens, the pod gets its kubelet's token back before B is revoked.
	t.Cleanup(func() {
		replaceToken(t, dir, string(original), 99)
		revokeA()
		revokeB()
	})

	// 1. Rotated to A: the replica re-reads its token file (at most a minute apart, and at once
	//    after a 401). The kubelet may write its own token back at its next sync of the pod
	//    (about a minute); then A is written again.
	jtiA := "JTI=" + tokenJTI(t, tokenA)
	written := replaceToken(t, dir, tokenA, 1)
	start, rewrites := time.Now(), 0
	framework.Eventually(t, 4*time.Minute, leaderPod+" presents the rotated token A", func() (bool, string) {
		if audit.credentialsUsed(t, leaderPod)[jtiA] > 0 {
			return true, ""
		}
		if cur, _ := os.Readlink(filepath.Join(dir, "..data")); cur != written {
			rewrites++
			written = replaceToken(t, dir, tokenA, 1+rewrites)
		}
		return false, fmt.Sprintf("not yet; the kubelet wrote its own token back %d times", rewrites)
	})
	t.Logf("%s presented token A %s after it was written (kubelet rewrites in between: %d)", leaderPod, time.Since(start).Round(100*time.Millisecond), rewrites)

	// 2. B written, A revoked: the next request with A is refused, the replica re-reads.
	jtiB := "JTI=" + tokenJTI(t, tokenB)
	replaceToken(t, dir, tokenB, 50)
	revokeA()
	revoked := time.Now()
	framework.Eventually(t, 30*time.Second, leaderPod+" presents token B after A was revoked", func() (bool, string) {
		used := audit.credentialsUsed(t, leaderPod)
		return used[jtiB] > 0, fmt.Sprintf("credential-ids since: %v", used)
	})
	t.Logf("%s presented token B %s after A was revoked", leaderPod, time.Since(revoked).Round(100*time.Millisecond))

	// 3. Still the leader, never restarted, and working.
	if h := leaseHolder(t, f); h != leaderID {
		t.Errorf("Lease holder %q after the rotations, want %s (%s) still", h, leaderPod, leaderID)
	}
	p, err := f.Admin.Kube.CoreV1().Pods(framework.OperatorNamespace).Get(framework.Ctx(t), leaderPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 || !podReady(p) {
		t.Errorf("pod %s: restarts %d, ready %t after the rotations", leaderPod, rc, podReady(p))
	}
	if n := len(logRecords(t, podLogs(t, leaderPod), "Lost lease")); n != 0 {
		t.Errorf("pod %s logged \"Lost lease\" %d times during the rotations", leaderPod, n)
	}
	ns := f.Namespace(t)
	source, target := f.Nodes[1], f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(target))))
	m = f.WaitMigrationPhase(t, ns, m.Name, virtv1.MigrationSucceeded, 90*time.Second)
	termAppliedOnce(t, f, ns, m, target, time.Time{})
	if used := audit.credentialsUsed(t, leaderPod); used[jtiB] == 0 {
		t.Errorf("the leader's requests during the migration carried %v, want token B", used)
	}
}
