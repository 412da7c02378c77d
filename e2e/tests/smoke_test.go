package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// The phases a successful migration passes through, in order (KubeVirt
// pkg/virt-controller/watch/migration/migration.go processMigrationPhase).
var successPhases = []string{"Pending", "Scheduling", "Scheduled", "PreparingTarget", "TargetReady", "Running", "Succeeded"}

// An admin's VMIM moves a running VMI to another node: virt-controller renders
// the target pod, the scheduler binds it, the (fake) handlers migrate.
func TestSmokeMigrationSucceeds(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)

	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi"))
	pod := f.WaitTargetPod(t, ns, m, "created", func(*k8sv1.Pod) bool { return true })
	if pod.Labels[virtv1.AppLabel] != "virt-launcher" || pod.Labels[virtv1.MigrationJobLabel] != string(m.UID) ||
		pod.Annotations[virtv1.MigrationJobNameAnnotation] != "mig" {
		t.Fatalf("target pod %s labels %v annotations %v: want kubevirt.io=virt-launcher, %s=%s, %s=mig",
			pod.Name, pod.Labels, pod.Annotations, virtv1.MigrationJobLabel, m.UID, virtv1.MigrationJobNameAnnotation)
	}

	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 60*time.Second)
	if got := framework.MigrationPhases(m); !slices.Equal(got, successPhases) {
		t.Errorf("VMIM phaseTransitionTimestamps phases = %s, want %s", framework.Join(got), framework.Join(successPhases))
	}
	pods := f.TargetPods(t, ns, m)
	if len(pods) != 1 {
		t.Fatalf("want exactly one target pod, got %d", len(pods))
	}
	target := pods[0].Spec.NodeName
	if target == "" || target == source {
		t.Fatalf("target pod bound to %q, want a node other than the source %q", target, source)
	}
	vmi := f.WaitVMIRunning(t, ns, "vmi", target)
	if ms := vmi.Status.MigrationState; ms == nil || !ms.Completed || ms.Failed || ms.SourceNode != source || ms.TargetNode != target {
		t.Fatalf("VMI migrationState = %+v, want completed, not failed, %s -> %s", ms, source, target)
	}
}

// KubeVirt's own spec.addedNodeSelector is merged into the target pod's
// nodeSelector, so the VM lands on the selected node.
func TestSmokeAddedNodeSelector(t *testing.T) {
	f := fw(t)
	f.RequireMigrationAddedNodeSelector(t)
	ns := f.Namespace(t)
	source, want := f.Nodes[0], f.Nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)

	sel := map[string]string{k8sv1.LabelHostname: want}
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithAddedNodeSelector(sel)))
	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 60*time.Second)
	pods := f.TargetPods(t, ns, m)
	if len(pods) != 1 {
		t.Fatalf("want exactly one target pod, got %d", len(pods))
	}
	if got := pods[0].Spec.NodeSelector[k8sv1.LabelHostname]; got != want {
		t.Errorf("target pod nodeSelector[%s] = %q, want %q (nodeSelector %v)", k8sv1.LabelHostname, got, want, pods[0].Spec.NodeSelector)
	}
	if pods[0].Spec.NodeName != want {
		t.Errorf("target pod bound to %q, want %q", pods[0].Spec.NodeName, want)
	}
	f.WaitVMIRunning(t, ns, "vmi", want)
}

// A VMI whose own constraints allow only its current node: the target pod is
// Unschedulable and virt-controller fails the VMIM after the unschedulable
// timeout (shortened by annotation); the VMI keeps running on its node.
func TestSmokeUnschedulableTargetFails(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	source := f.Nodes[0]
	vmi := framework.NewVMI("vmi", "", framework.WithRequiredNodeAffinity(framework.HostnameTerm(source)))
	f.StartVMI(t, f.Admin, ns, vmi, source)

	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi",
		framework.WithAnnotation(virtv1.MigrationUnschedulablePodTimeoutSecondsAnnotation, "3")))
	pod := f.WaitTargetPod(t, ns, m, "Unschedulable", framework.IsUnschedulable)
	if msg := framework.PodCondition(&pod, k8sv1.PodScheduled).Message; !strings.Contains(msg, "0/") {
		t.Errorf("PodScheduled message %q does not carry the scheduler's node count", msg)
	}

	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationFailed, 60*time.Second)
	phases := framework.MigrationPhases(m)
	if !slices.Contains(phases, "Scheduling") || phases[len(phases)-1] != "Failed" {
		t.Errorf("VMIM phases = %s, want Scheduling ... Failed", framework.Join(phases))
	}
	framework.Eventually(t, 30*time.Second, "timed-out target pod deleted", func() (bool, string) {
		n := len(f.TargetPods(t, ns, m))
		return n == 0, fmt.Sprintf("%d target pods left", n)
	})
	f.WaitVMIRunning(t, ns, "vmi", source)
}

var vmimGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}

type warnings struct{ msgs []string }

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.msgs = append(w.msgs, text) }

// The seed proposal's spec.addedNodeSelectorTerm is unknown to KubeVirt's
// structural VMIM schema: the API server prunes it (with a warning) before any
// webhook could see it, and rejects it under strict field validation. This is
// why the request travels as an annotation.
func TestSmokeUnknownSpecFieldPruned(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	// virt-api admits VMIMs only for a VMI that exists and is not final.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")
	obj := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"vmiName": "vmi",
				"addedNodeSelectorTerm": map[string]any{"matchExpressions": []any{map[string]any{
					"key": "kubernetes.io/hostname", "operator": "In", "values": []any{"node-b"}}}},
			},
		}}
	}
	w := &warnings{}
	cfg := rest.CopyConfig(f.Admin.Config)
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The create response is the object as persisted.
	created, err := dyn.Resource(vmimGVR).Namespace(ns).Create(framework.Ctx(t), obj("pruned"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(created.Object, "spec", "addedNodeSelectorTerm"); found {
		t.Errorf("persisted VMIM still has spec.addedNodeSelectorTerm: %v", created.Object["spec"])
	}
	if got, _, _ := unstructured.NestedString(created.Object, "spec", "vmiName"); got != "vmi" {
		t.Errorf("persisted spec.vmiName = %q, want the known field kept", got)
	}
	const unknown = `unknown field "spec.addedNodeSelectorTerm"`
	if !slices.ContainsFunc(w.msgs, func(s string) bool { return strings.Contains(s, unknown) }) {
		t.Errorf("warnings %q do not mention %s", w.msgs, unknown)
	}

	_, err = dyn.Resource(vmimGVR).Namespace(ns).Create(framework.Ctx(t), obj("strict"), metav1.CreateOptions{FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), unknown) {
		t.Fatalf("strict create error = %v, want BadRequest mentioning %s", err, unknown)
	}
}

// The VM owner has rights in its namespace only: it may create VMIMs there, not
// elsewhere, and no cluster-scoped object at all; the admin may.
func TestSmokeVMOwnerIsNamespaceScoped(t *testing.T) {
	f := fw(t)
	ns := f.OwnerNamespace(t) // waits until RBAC has seen the vm-owner RoleBinding
	other := f.BareNamespace(t)
	owner := f.VMOwner
	f.StartVMI(t, owner, ns, framework.NewVMI("vmi", ""), "")

	if _, err := owner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
		framework.NewMigration("own", "vmi"), metav1.CreateOptions{}); err != nil {
		t.Errorf("vm-owner creating a VMIM in its namespace: %v", err)
	}
	_, err := owner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(other).Create(framework.Ctx(t),
		framework.NewMigration("foreign", "absent"), metav1.CreateOptions{})
	if !framework.IsForbidden(err) {
		t.Errorf("vm-owner creating a VMIM in another namespace: err = %v, want Forbidden", err)
	}

	name := "kmt-e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	clusterScoped := []struct {
		what   string
		create func(c *framework.Client) error
		remove func() error
	}{
		{"Namespace", func(c *framework.Client) error {
			_, err := c.Kube.CoreV1().Namespaces().Create(framework.Ctx(t), &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		}, func() error {
			return f.Admin.Kube.CoreV1().Namespaces().Delete(framework.Ctx(t), name, metav1.DeleteOptions{})
		}},
		{"ClusterRole", func(c *framework.Client) error {
			_, err := c.Kube.RbacV1().ClusterRoles().Create(framework.Ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		}, func() error {
			return f.Admin.Kube.RbacV1().ClusterRoles().Delete(framework.Ctx(t), name, metav1.DeleteOptions{})
		}},
		{"Node", func(c *framework.Client) error {
			_, err := c.Kube.CoreV1().Nodes().Create(framework.Ctx(t), &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"kmt-e2e": "unschedulable"}}, Spec: k8sv1.NodeSpec{Unschedulable: true}}, metav1.CreateOptions{})
			return err
		}, func() error {
			return f.Admin.Kube.CoreV1().Nodes().Delete(framework.Ctx(t), name, metav1.DeleteOptions{})
		}},
	}
	for _, tc := range clusterScoped {
		t.Run(tc.what, func(t *testing.T) {
			if err := tc.create(owner); !framework.IsForbidden(err) {
				t.Errorf("vm-owner creating a %s: err = %v, want Forbidden", tc.what, err)
			}
			if err := tc.create(f.Admin); err != nil {
				t.Fatalf("admin creating a %s: %v", tc.what, err)
			}
			if err := tc.remove(); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("admin deleting the %s: %v", tc.what, err)
			}
		})
	}
}

// The VM owner may still run its VM and migrate it with a plain VMIM, in its
// own namespace, without any admin right.
func TestSmokeVMOwnerMigrates(t *testing.T) {
	f := fw(t)
	ns := f.OwnerNamespace(t) // waits until RBAC has seen the vm-owner RoleBinding
	source := f.Nodes[1]
	f.StartVMI(t, f.VMOwner, ns, framework.NewVMI("vmi", source), source)
	f.CreateMigration(t, f.VMOwner, ns, framework.NewMigration("mig", "vmi"))
	m := f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 60*time.Second)
	if got := framework.MigrationPhases(m); !slices.Equal(got, successPhases) {
		t.Errorf("VMIM phases = %s, want %s", framework.Join(got), framework.Join(successPhases))
	}
	vmi := f.WaitVMIRunning(t, ns, "vmi", "")
	if vmi.Status.NodeName == source {
		t.Fatalf("VMI still on %s after a successful migration", source)
	}
}

// A VMI migrates again after a migration: the first source launcher pod has
// completed (as virt-launcher exits after handing over), so virt-controller
// does not wait for it, and the second target avoids the current node.
func TestSmokeMigrateTwice(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	first := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", first), first)
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig-1", "vmi"))
	f.WaitMigrationPhase(t, ns, "mig-1", virtv1.MigrationSucceeded, 60*time.Second)
	second := f.WaitVMIRunning(t, ns, "vmi", "").Status.NodeName

	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig-2", "vmi"))
	f.WaitMigrationPhase(t, ns, "mig-2", virtv1.MigrationSucceeded, 60*time.Second)
	// The VMI's migrationState is final once the VMIM succeeded; the VMIM's copy
	// of it is filled in by a later virt-controller sync.
	// Under load the VMI's status may trail the VMIM by a sync: poll for it.
	var vmi *virtv1.VirtualMachineInstance
	framework.Eventually(t, 30*time.Second, "the VMI's status to show the second migration", func() (bool, string) {
		vmi = f.WaitVMIRunning(t, ns, "vmi", "")
		ms := vmi.Status.MigrationState
		ok := vmi.Status.NodeName != second && ms != nil && ms.SourceNode == second && ms.TargetNode == vmi.Status.NodeName
		return ok, fmt.Sprintf("%s -> %s (VMI migrationState %+v), want a move off %s", second, vmi.Status.NodeName, ms, second)
	})
	third := vmi.Status.NodeName
	pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == k8sv1.PodRunning {
			running++
			if p.Spec.NodeName != third {
				t.Errorf("launcher pod %s still Running on %s; the VMI runs on %s", p.Name, p.Spec.NodeName, third)
			}
		}
	}
	if running != 1 {
		t.Errorf("%d launcher pods Running, want 1", running)
	}
}
