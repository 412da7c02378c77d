package framework

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
)

// RealNode is the real node e2e/node.sh starts beside the fake ones: a kubelet with containerd
// and a CNI bridge, tainted RealNodeTaint and labelled RealNodeLabel (see e2e/README.md).
type RealNode struct {
	Name         string
	IP           string
	PodCIDR      string
	Image        string // a locally built image imported into its containerd (static busybox)
	WebhookImage string // e2e/cmd/webhook-echo, imported the same way
	CtrAddress   string // its containerd's socket, for `ctr -n k8s.io`
}

// RealNodeLabel and RealNodeTaint keep every pod but those that ask for it off the real node.
const (
	RealNodeLabel = "kmt.local/infra"
	RealNodeTaint = "kmt.local/infra"
)

// RequireRealNode returns the real node, or skips the scenario with "<test> skipped: <reason>"
// when the cluster runs without one (KMT_E2E_REAL_NODE=0, the matrix's other pairs): never silently.
func RequireRealNode(t testing.TB) RealNode {
	t.Helper()
	SkipWithout(t, os.Getenv("KMT_E2E_REAL_NODE") == "1",
		"the cluster runs without the real node infra-0 (KMT_E2E_REAL_NODE="+os.Getenv("KMT_E2E_REAL_NODE")+")")
	n := RealNode{
		Name: os.Getenv("KMT_E2E_NODE_NAME"), IP: os.Getenv("KMT_E2E_NODE_IP"),
		PodCIDR: os.Getenv("KMT_E2E_NODE_POD_CIDR"), Image: os.Getenv("KMT_E2E_NODE_BUSYBOX_IMAGE"),
		CtrAddress: os.Getenv("KMT_E2E_NODE_CTR_ADDRESS"), WebhookImage: os.Getenv("KMT_E2E_NODE_WEBHOOK_IMAGE"),
	}
	if n.Name == "" || n.IP == "" || n.Image == "" || n.CtrAddress == "" || n.WebhookImage == "" {
		t.Fatalf("KMT_E2E_REAL_NODE=1 but the node's variables are missing (source <(e2e/cluster.sh env)): %+v", n)
	}
	return n
}

// OnRealNode pins a pod spec to the real node: its node selector and a toleration of its taint.
func OnRealNode(spec *k8sv1.PodSpec) {
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[RealNodeLabel] = "true"
	spec.Tolerations = append(spec.Tolerations, k8sv1.Toleration{
		Key: RealNodeTaint, Operator: k8sv1.TolerationOpExists, Effect: k8sv1.TaintEffectNoSchedule})
}

// Ctr runs `ctr -n k8s.io` against the real node's containerd.
func (n RealNode) Ctr(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("ctr", append([]string{"--address", n.CtrAddress, "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
