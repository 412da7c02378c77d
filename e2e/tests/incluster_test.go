package tests

// The in-cluster tier (e2e/incluster.sh, e2e/README.md "The in-cluster tier"): the operator
// installed as users install it (the image from hack/image.sh imported into the real node's
// containerd, manifests/default applied with `kubectl apply -k` after only `kustomize edit set
// image`), running as a Deployment of two replicas on infra-0 under the kubelet: in-cluster
// config with a projected ServiceAccount token, its own certificate Secret and caBundle, webhooks
// reached through the Service, leader election between the two pods, the probes, the
// PodDisruptionBudget, the memory limit. Every TestInCluster* skips outside that tier (the main
// e2e tier runs the operator out of cluster), and that tier counts a skip as a failure.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// Names manifests/default gives the installed operator.
const (
	operatorDeployment = "migration-target-operator"
	operatorSelector   = "app.kubernetes.io/component=operator"
	webhookCertSecret  = "migration-target-webhook-cert"
	webhookConfig      = "migration-target"
	operatorWebhookTCP = 9443
)

// requireInCluster skips outside the in-cluster tier and returns the framework and the node the
// operator runs on.
func requireInCluster(t *testing.T) (*framework.Framework, framework.RealNode) {
	t.Helper()
	framework.SkipWithout(t, os.Getenv("KMT_E2E_IN_CLUSTER") == "1",
		"the operator is not installed in the cluster (only e2e/incluster.sh installs it from manifests/default)")
	node := framework.RequireRealNode(t)
	return fw(t), node
}

// operatorPods lists the operator's pods that are not being deleted.
func operatorPods(t *testing.T, f *framework.Framework) []k8sv1.Pod {
	t.Helper()
	list, err := f.Admin.Kube.CoreV1().Pods(framework.OperatorNamespace).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		t.Fatalf("list operator pods: %v", err)
	}
	var out []k8sv1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitOperatorReady waits until the Deployment has both replicas Ready (the kubelet's readiness
// probe on /readyz), both pods on node and no other pod left, and returns the pods.
func waitOperatorReady(t *testing.T, f *framework.Framework, node framework.RealNode, timeout time.Duration) []k8sv1.Pod {
	t.Helper()
	var pods []k8sv1.Pod
	framework.Eventually(t, timeout, "both operator replicas Ready on "+node.Name, func() (bool, string) {
		d, err := f.Admin.Kube.AppsV1().Deployments(framework.OperatorNamespace).Get(framework.Ctx(t), operatorDeployment, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods = operatorPods(t, f)
		var states []string
		ready := 0
		for i := range pods {
			p := &pods[i]
			states = append(states, fmt.Sprintf("%s on %q %s ready=%t", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(p)))
			if podReady(p) && p.Spec.NodeName == node.Name {
				ready++
			}
		}
		return d.Status.ReadyReplicas == 2 && d.Status.UpdatedReplicas == 2 && len(pods) == 2 && ready == 2,
			fmt.Sprintf("deployment ready=%d updated=%d; pods %v", d.Status.ReadyReplicas, d.Status.UpdatedReplicas, states)
	})
	return pods
}

// podLogs is `kubectl logs` of a pod's operator container, as the admin.
func podLogs(t *testing.T, pod string) string {
	t.Helper()
	r := framework.KubectlAs(t, framework.AdminUser, "", "-n", framework.OperatorNamespace, "logs", pod, "-c", "operator")
	if r.Code != 0 {
		t.Fatalf("kubectl logs %s: %s", pod, r)
	}
	return r.Stdout
}

// logRecords parses the operator's JSON log lines (--log-format=json) whose msg is msg.
func logRecords(t *testing.T, log, msg string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, l := range strings.Split(log, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var rec map[string]string
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("log line is not flat JSON: %v: %s", err, l)
			continue
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// podIdentity is the leader-election identity a pod's replica logged.
func podIdentity(t *testing.T, pod string) string {
	t.Helper()
	recs := logRecords(t, podLogs(t, pod), "Started leader election")
	if len(recs) != 1 || recs[0]["identity"] == "" {
		t.Fatalf("pod %s logged %d \"Started leader election\" records with an identity, want 1: %v", pod, len(recs), recs)
	}
	return recs[0]["identity"]
}

// servedCertificate is the leaf a pod's webhook server presents, dialled at the pod's IP.
func servedCertificate(t *testing.T, pod *k8sv1.Pod) *x509.Certificate {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp",
		net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(operatorWebhookTCP)),
		&tls.Config{InsecureSkipVerify: true, ServerName: "migration-target-webhook.kubevirt-migration-target.svc"})
	if err != nil {
		t.Fatalf("TLS to pod %s (%s:%d): %v", pod.Name, pod.Status.PodIP, operatorWebhookTCP, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// containerPID is the host PID of a pod's operator container, from the node's containerd.
func containerPID(t *testing.T, node framework.RealNode, pod *k8sv1.Pod) int {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container status", pod.Name)
	}
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	for _, l := range strings.Split(node.Ctr(t, "tasks", "ls"), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == id {
			var pid int
			if _, err := fmt.Sscan(f[1], &pid); err == nil && pid > 0 {
				return pid
			}
		}
	}
	t.Fatalf("pod %s: container %s has no running task in the node's containerd", pod.Name, id)
	return 0
}

// procStatus returns the named fields of /proc/PID/status (tabs and spaces folded).
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// (1) Installed as the README says: both replicas Ready through the kubelet's probes on
// infra-0, exactly one of them holds the Lease, the certificate Secret was made once (one
// replica created it, both serve its certificate) and its CA is the caBundle of every webhook
// of both configurations.
func TestInClusterInstalled(t *testing.T) {
	f, node := requireInCluster(t)
	pods := waitOperatorReady(t, f, node, 3*time.Minute)

	d, err := f.Admin.Kube.AppsV1().Deployments(framework.OperatorNamespace).Get(framework.Ctx(t), operatorDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantImage := "kmt.local/kubevirt-migration-target:"
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, wantImage) {
		t.Errorf("Deployment image %q, want the image kustomize edit set image named (%s...)", img, wantImage)
	}
	for i := range pods {
		p := &pods[i]
		c := p.Spec.Containers[0]
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
			c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("pod %s: probes %+v / %+v, want manifests/default's /readyz and /healthz", p.Name, c.ReadinessProbe, c.LivenessProbe)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if !cs.Ready || cs.State.Running == nil || cs.RestartCount != 0 {
				t.Errorf("pod %s container %s: ready=%t running=%t restarts=%d, want ready, running, never restarted",
					p.Name, cs.Name, cs.Ready, cs.State.Running != nil, cs.RestartCount)
			}
			if !strings.HasPrefix(cs.Image, wantImage) || cs.ImageID == "" {
				t.Errorf("pod %s runs image %q (id %q), want the imported %s...", p.Name, cs.Image, cs.ImageID, wantImage)
			}
		}
		// The process as the kubelet started it: the image's user and group (65532:65532, the
		// README's promise), no supplementary root group, no capabilities.
		st := procStatus(t, containerPID(t, node, p))
		for k, want := range map[string]string{"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532",
			"Groups": "65532", "CapEff": "0000000000000000", "NoNewPrivs": "1"} {
			if st[k] != want {
				t.Errorf("pod %s: the operator process's %s is %q, want %q", p.Name, k, st[k], want)
			}
		}
	}

	// Exactly one Lease holder, and it is one of the two pods.
	ids := map[string]string{}
	for _, p := range pods {
		ids[podIdentity(t, p.Name)] = p.Name
	}
	if len(ids) != 2 {
		t.Fatalf("the two replicas logged identities %v, want two different ones", ids)
	}
	var holder string
	framework.Eventually(t, 2*framework.LeaseDuration+15*time.Second, "a pod holds the Lease", func() (bool, string) {
		holder = leaseHolder(t, f)
		_, ok := ids[holder]
		return ok, "holder " + holder
	})
	acquired := 0
	for _, p := range pods {
		n := len(logRecords(t, podLogs(t, p.Name), "Acquired lease"))
		if (ids[holder] == p.Name) != (n == 1) {
			t.Errorf("pod %s logged \"Acquired lease\" %d times; the holder is %s", p.Name, n, ids[holder])
		}
		acquired += n
	}
	if acquired != 1 {
		t.Errorf("\"Acquired lease\" logged %d times by the two pods, want exactly once", acquired)
	}

	// The certificate Secret: made once, by one replica; both serve its certificate.
	sec, err := f.Admin.Kube.CoreV1().Secrets(framework.OperatorNamespace).Get(framework.Ctx(t), webhookCertSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret %s: %v", webhookCertSecret, err)
	}
	created := 0
	for _, p := range pods {
		for _, r := range logRecords(t, podLogs(t, p.Name), "Ensured webhook certificate") {
			if r["secretCreated"] == "true" {
				created++
			}
		}
	}
	// Exactly one of these pods made it, unless it is older than both (a later rollout).
	want := 0
	for _, p := range pods {
		if p.Status.StartTime != nil && !sec.CreationTimestamp.Time.Before(p.Status.StartTime.Time.Truncate(time.Second)) {
			want = 1
		}
	}
	if created != want {
		t.Errorf("the replicas logged secretCreated=true %d times, want %d (Secret created %s)", created, want, sec.CreationTimestamp)
	}
	block, _ := pem.Decode(sec.Data["tls.crt"])
	if block == nil {
		t.Fatalf("Secret %s: no PEM in tls.crt", webhookCertSecret)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("migration-target-webhook.kubevirt-migration-target.svc"); err != nil {
		t.Errorf("the Secret's certificate does not name the webhook Service: %v", err)
	}
	for i := range pods {
		if served := servedCertificate(t, &pods[i]); !bytes.Equal(served.Raw, leaf.Raw) {
			t.Errorf("pod %s serves serial %s, the Secret holds serial %s", pods[i].Name, served.SerialNumber, leaf.SerialNumber)
		}
	}

	// The caBundle of every webhook of both configurations is the Secret's CA.
	ca := sec.Data["ca.crt"]
	if len(ca) == 0 {
		t.Fatalf("Secret %s has no ca.crt", webhookCertSecret)
	}
	framework.Eventually(t, 60*time.Second, "caBundle injected into both webhook configurations", func() (bool, string) {
		v, err := f.Admin.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(framework.Ctx(t), webhookConfig, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		m, err := f.Admin.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(framework.Ctx(t), webhookConfig, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var bad []string
		for _, w := range v.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, ca) {
				bad = append(bad, "validating "+w.Name)
			}
		}
		for _, w := range m.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, ca) {
				bad = append(bad, "mutating "+w.Name)
			}
		}
		return len(bad) == 0 && len(v.Webhooks) == 2 && len(m.Webhooks) == 2, fmt.Sprintf("without the Secret's CA: %v", bad)
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("Secret %s: ca.crt is not PEM", webhookCertSecret)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "migration-target-webhook.kubevirt-migration-target.svc"}); err != nil {
		t.Errorf("the served certificate does not verify against the injected CA: %v", err)
	}
	// Every replica's webhook lists and watches VMIs (its placement warnings read where a VMI
	// runs from that cache): with manifests/default's RBAC the cache syncs, once, and no watch
	// of the operator's is refused. A missing grant is only logged, never fails a review.
	for _, p := range pods {
		framework.Eventually(t, 60*time.Second, "pod "+p.Name+" synced its VMI cache", func() (bool, string) {
			n := len(logRecords(t, podLogs(t, p.Name), "Synced VMI cache"))
			return n == 1, fmt.Sprintf("\"Synced VMI cache\" logged %d times", n)
		})
		for _, r := range logRecords(t, podLogs(t, p.Name), "Failed to watch") {
			if strings.Contains(r["error"], "403") || strings.Contains(strings.ToLower(r["error"]), "forbidden") {
				t.Errorf("pod %s: a watch was refused: %s", p.Name, r["error"])
			}
		}
	}
	t.Logf("both replicas Ready on %s, lease held by %s, certificate serial %s", node.Name, ids[holder], leaf.SerialNumber)
}

// leaderIdentity waits until one of the operator's pods holds the Lease and returns its identity
// and pod name.
func leaderIdentity(t *testing.T, f *framework.Framework, pods []k8sv1.Pod) (id, pod string) {
	t.Helper()
	ids := map[string]string{}
	for _, p := range pods {
		ids[podIdentity(t, p.Name)] = p.Name
	}
	framework.Eventually(t, 2*framework.LeaseDuration+15*time.Second, "an operator pod holds the Lease", func() (bool, string) {
		id = leaseHolder(t, f)
		pod = ids[id]
		return pod != "", fmt.Sprintf("holder %q, pods %v", id, ids)
	})
	return id, pod
}

// (2) A placed migration and a policy-steered evacuation end to end through the installed
// operator: the validating webhook reached through the Service refuses a broken term (so the API
// server calls the pods), the mutating webhook gates the target pod, the leader pod ANDs the
// term and releases it (its Events carry the leader's identity), and a drain's evacuations get
// the policy's term from the evacuation webhook.
func TestInClusterPlacedMigrationAndEvacuation(t *testing.T) {
	f, node := requireInCluster(t)
	pods := waitOperatorReady(t, f, node, 3*time.Minute)
	leaderID, leaderPod := leaderIdentity(t, f, pods)
	ns := f.Namespace(t)

	// The validating webhook, served by the pods behind the Service.
	source, target := f.Nodes[0], f.Nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
		framework.NewMigration("broken", "vmi", framework.WithTerm(`{"matchExpressions":[{"key":"a","operator":"Bogus"}]}`)), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), framework.VMIMWebhookName) {
		t.Fatalf("a VMIM with a broken term: err %v, want a denial by %s", err, framework.VMIMWebhookName)
	}

	// A placed migration: gated by the mutating webhook, released by the leader with the term.
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(target))))
	m = f.WaitMigrationPhase(t, ns, m.Name, virtv1.MigrationSucceeded, 90*time.Second)
	termAppliedOnce(t, f, ns, m, target, time.Time{})
	f.WaitVMIRunning(t, ns, "vmi", target)
	ev := waitEvents(t, f, ns, m.Name, framework.ReasonTermApplied, true)
	for _, e := range ev {
		if e.ReportingInstance != leaderID {
			t.Errorf("TermApplied Event reported by %q, want the leader pod %s (%s)", e.ReportingInstance, leaderPod, leaderID)
		}
	}

	// A policy-steered evacuation: a drain of a rack-a node sends its VM to rack b.
	pool := "kmt-incl-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 78, "a", "b", "c")
	policy := pool + "-rack-a-to-b"
	const term = `{"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]}`
	if err := createPolicy(t, f, f.Admin, policy, fmt.Sprintf(`{
		"match": {"origin": "Evacuation", "sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q, "rack": "a"}}},
		"addedNodeSelectorTerm": %s}`, pool, term)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	evacNS := f.Namespace(t)
	f.StartVMI(t, f.Admin, evacNS, framework.NewVMI("evac", nodes[0], inPool(pool), framework.LiveMigrateOnEviction), nodes[0])
	if r := drain(t, nodes[0], "120s"); r.Code != 0 {
		t.Fatalf("kubectl drain %s: %s", nodes[0], r)
	}
	if vmi := f.WaitVMIRunning(t, evacNS, "evac", ""); vmi.Status.NodeName != nodes[1] {
		t.Errorf("VMI evac on %s after the drain, want the rack-b node %s", vmi.Status.NodeName, nodes[1])
	}
	evac := evacuationVMIMs(t, f, evacNS)
	if len(evac) != 1 {
		t.Fatalf("evacuation VMIMs: %d, want 1", len(evac))
	}
	e := evac[0]
	if got := e.Annotations[framework.AddedTermAnnotation]; got != term {
		t.Errorf("evacuation VMIM %s term annotation %q, want the policy's %q", e.Name, got, term)
	}
	if got := e.Annotations[framework.PolicyAnnotation]; got != policy {
		t.Errorf("evacuation VMIM %s policy annotation %q, want %q", e.Name, got, policy)
	}
	f.WaitMigrationCondition(t, evacNS, e.Name, framework.ConditionTermApplied, "True", framework.ReasonTermApplied, 30*time.Second)
}
