// Package framework holds the helpers the e2e scenarios share: clients for the
// cluster's users, a fresh namespace per test with the VM owner's Role, VMIs that
// start on a chosen fake node, migrations, and polling with deadlines.
//
// The cluster comes from e2e/cluster.sh (`source <(e2e/cluster.sh env)` exports
// the kubeconfig paths read here). Every wait polls the API with a deadline; no
// helper sleeps for a fixed time to let something happen.
package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	kvclient "kubevirt.io/client-go/kubevirt"
)

// Users of the e2e cluster, as their client certificates name them.
const (
	AdminUser   = "kmt-admin"
	VMOwnerUser = "vm-owner"
	// VMOwnerRole is the Role (and RoleBinding) Namespace creates for VMOwnerUser.
	VMOwnerRole = "vm-owner"
)

// Client bundles the clients of one user.
type Client struct {
	User    string
	Config  *rest.Config
	Kube    kubernetes.Interface
	Virt    kvclient.Interface
	Dynamic dynamic.Interface
}

// Framework gives a test the cluster's clients.
type Framework struct {
	Admin   *Client
	VMOwner *Client
	// Nodes are the fake nodes the cluster started with (KMT_E2E_NODES).
	Nodes []string
}

var (
	once    sync.Once
	shared  *Framework
	initErr error
)

// New returns the framework, skipping nothing: a test run without a cluster
// fails with a message saying how to start one.
func New(t testing.TB) *Framework {
	t.Helper()
	once.Do(func() {
		shared, initErr = load()
	})
	if initErr != nil {
		t.Fatalf("e2e cluster: %v (start one with `e2e/cluster.sh up` and `source <(e2e/cluster.sh env)`)", initErr)
	}
	return shared
}

func load() (*Framework, error) {
	admin, err := NewClient(os.Getenv("KMT_E2E_ADMIN_KUBECONFIG"), AdminUser)
	if err != nil {
		return nil, err
	}
	owner, err := NewClient(os.Getenv("KMT_E2E_VM_OWNER_KUBECONFIG"), VMOwnerUser)
	if err != nil {
		return nil, err
	}
	nodes := strings.Split(os.Getenv("KMT_E2E_NODES"), ",")
	if len(nodes) < 3 || nodes[0] == "" {
		return nil, fmt.Errorf("KMT_E2E_NODES must name at least three fake nodes, got %q", os.Getenv("KMT_E2E_NODES"))
	}
	return &Framework{Admin: admin, VMOwner: owner, Nodes: nodes}, nil
}

// NewClient builds the clients of the user a kubeconfig file names.
func NewClient(kubeconfig, user string) (*Client, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("no kubeconfig for %s in the environment", user)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "kmt-e2e/" + user
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	virt, err := kvclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{User: user, Config: cfg, Kube: kube, Virt: virt, Dynamic: dyn}, nil
}

// Ctx is a context for one API call.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Namespace creates a fresh namespace for the test, with a Role granting the VM
// owner every verb on VMIs and VMIMs in it (and reading pods and events), bound
// to VMOwnerUser. It waits for the namespace's default ServiceAccount, which
// virt-launcher pods need, and deletes the namespace when the test ends
// (KMT_E2E_KEEP_NAMESPACES=1 keeps it for debugging).
func (f *Framework) Namespace(t testing.TB) string {
	t.Helper()
	ns := f.BareNamespace(t)
	ctx := Ctx(t)
	kube := f.Admin.Kube
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: VMOwnerRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachineinstances", "virtualmachineinstancemigrations"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: VMOwnerRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: VMOwnerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: VMOwnerUser}},
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding: %v", err)
	}
	return ns
}

// BareNamespace is Namespace without the VM owner's Role: only the admin has
// rights in it.
func (f *Framework) BareNamespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("e2e-%s-%s", strings.Trim(name, "-"), randomSuffix())
	ctx := Ctx(t)
	kube := f.Admin.Kube
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{"kmt-e2e": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if os.Getenv("KMT_E2E_KEEP_NAMESPACES") == "1" || t.Failed() && os.Getenv("KMT_E2E_KEEP_FAILED") == "1" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	Eventually(t, 30*time.Second, "ServiceAccount "+name+"/default", func() (bool, string) {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(Ctx(t), "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return name
}

// Eventually polls cond every 100ms until it reports true, and fails the test
// with cond's last message once timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// IsForbidden reports whether err is an HTTP 403 from the API server.
func IsForbidden(err error) bool { return apierrors.IsForbidden(err) }
