package framework

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

// VMIOption changes a VMI before it is created.
type VMIOption func(*virtv1.VirtualMachineInstance)

// WithRequiredNodeAffinity adds a required node-affinity term (ORed with
// existing terms) to the VMI; it is copied to every launcher pod.
func WithRequiredNodeAffinity(term k8sv1.NodeSelectorTerm) VMIOption {
	return func(vmi *virtv1.VirtualMachineInstance) {
		aff := EnsureNodeAffinity(vmi)
		if aff.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			aff.RequiredDuringSchedulingIgnoredDuringExecution = &k8sv1.NodeSelector{}
		}
		req := aff.RequiredDuringSchedulingIgnoredDuringExecution
		req.NodeSelectorTerms = append(req.NodeSelectorTerms, term)
	}
}

// LiveMigrateOnEviction sets evictionStrategy: LiveMigrate, so a drain or the descheduler's
// eviction of the VMI's pod becomes an evacuation migration (virt-api's eviction interceptor).
func LiveMigrateOnEviction(vmi *virtv1.VirtualMachineInstance) {
	s := virtv1.EvictionStrategyLiveMigrate
	vmi.Spec.EvictionStrategy = &s
}

// WithToleration adds a toleration to the VMI (KubeVirt copies it to its pods).
func WithToleration(tol k8sv1.Toleration) VMIOption {
	return func(vmi *virtv1.VirtualMachineInstance) {
		vmi.Spec.Tolerations = append(vmi.Spec.Tolerations, tol)
	}
}

// WithNodeSelector adds nodeSelector labels to the VMI.
func WithNodeSelector(labels map[string]string) VMIOption {
	return func(vmi *virtv1.VirtualMachineInstance) {
		if vmi.Spec.NodeSelector == nil {
			vmi.Spec.NodeSelector = map[string]string{}
		}
		for k, v := range labels {
			vmi.Spec.NodeSelector[k] = v
		}
	}
}

// EnsureNodeAffinity returns the VMI's node affinity, created empty when it has none.
func EnsureNodeAffinity(vmi *virtv1.VirtualMachineInstance) *k8sv1.NodeAffinity {
	if vmi.Spec.Affinity == nil {
		vmi.Spec.Affinity = &k8sv1.Affinity{}
	}
	if vmi.Spec.Affinity.NodeAffinity == nil {
		vmi.Spec.Affinity.NodeAffinity = &k8sv1.NodeAffinity{}
	}
	return vmi.Spec.Affinity.NodeAffinity
}

// HostnameTerm is a node-selector term matching exactly the named nodes.
func HostnameTerm(nodes ...string) k8sv1.NodeSelectorTerm {
	return k8sv1.NodeSelectorTerm{MatchExpressions: []k8sv1.NodeSelectorRequirement{{
		Key: k8sv1.LabelHostname, Operator: k8sv1.NodeSelectorOpIn, Values: nodes}}}
}

// NewVMI returns a small VMI as a user writes it: a memory request and no
// devices. virt-api's mutating webhook fills in the rest on CREATE (defaults, the
// finalizer, status.phase Pending with its timestamp, status.runtimeUser), as in
// a real cluster. preferNode, when not empty, adds a preferred node-affinity term
// so the scheduler starts the VMI there while the VMI itself still allows every
// node.
func NewVMI(name, preferNode string, opts ...VMIOption) *virtv1.VirtualMachineInstance {
	mem := resource.MustParse("128Mi")
	vmi := &virtv1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: mem}},
				Devices:   virtv1.Devices{AutoattachPodInterface: ptr(false)},
			},
			TerminationGracePeriodSeconds: ptr(int64(0)),
		},
	}
	if preferNode != "" {
		aff := EnsureNodeAffinity(vmi)
		aff.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.PreferredDuringSchedulingIgnoredDuringExecution,
			k8sv1.PreferredSchedulingTerm{Weight: 100, Preference: HostnameTerm(preferNode)})
	}
	for _, o := range opts {
		o(vmi)
	}
	return vmi
}

func ptr[T any](v T) *T { return &v }

// StartVMI creates vmi in ns as c and waits until it runs on node; it returns
// the running VMI.
func (f *Framework) StartVMI(t testing.TB, c *Client, ns string, vmi *virtv1.VirtualMachineInstance, node string) *virtv1.VirtualMachineInstance {
	t.Helper()
	if _, err := c.Virt.KubevirtV1().VirtualMachineInstances(ns).Create(Ctx(t), vmi, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create VMI %s/%s as %s: %v", ns, vmi.Name, c.User, err)
	}
	return f.WaitVMIRunning(t, ns, vmi.Name, node)
}

// WaitVMIRunning waits until the VMI is Running on node (any node if empty).
func (f *Framework) WaitVMIRunning(t testing.TB, ns, name, node string) *virtv1.VirtualMachineInstance {
	t.Helper()
	var vmi *virtv1.VirtualMachineInstance
	Eventually(t, 60*time.Second, fmt.Sprintf("VMI %s/%s Running on %q", ns, name, node), func() (bool, string) {
		var err error
		vmi, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if vmi.Status.Phase == virtv1.Failed || vmi.Status.Phase == virtv1.Succeeded {
			t.Fatalf("VMI %s/%s ended in phase %s", ns, name, vmi.Status.Phase)
		}
		return vmi.Status.Phase == virtv1.Running, fmt.Sprintf("phase %q on node %q", vmi.Status.Phase, vmi.Status.NodeName)
	})
	if node != "" && vmi.Status.NodeName != node {
		t.Fatalf("VMI %s/%s runs on %q, want %q", ns, name, vmi.Status.NodeName, node)
	}
	return vmi
}

// MigrationOption changes a VMIM before it is created.
type MigrationOption func(*virtv1.VirtualMachineInstanceMigration)

// WithAnnotation sets an annotation on the VMIM.
func WithAnnotation(key, value string) MigrationOption {
	return func(m *virtv1.VirtualMachineInstanceMigration) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = value
	}
}

// WithAddedNodeSelector sets KubeVirt's own spec.addedNodeSelector.
func WithAddedNodeSelector(labels map[string]string) MigrationOption {
	return func(m *virtv1.VirtualMachineInstanceMigration) { m.Spec.AddedNodeSelector = labels }
}

// NewMigration returns a VMIM of vmiName.
func NewMigration(name, vmiName string, opts ...MigrationOption) *virtv1.VirtualMachineInstanceMigration {
	m := &virtv1.VirtualMachineInstanceMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// CreateMigration creates the VMIM in ns as c.
func (f *Framework) CreateMigration(t testing.TB, c *Client, ns string, m *virtv1.VirtualMachineInstanceMigration) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	created, err := c.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(Ctx(t), m, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create VMIM %s/%s as %s: %v", ns, m.Name, c.User, err)
	}
	return created
}

// WaitMigrationPhase waits until the VMIM reaches phase; it fails at once if the
// VMIM ends in another final phase.
func (f *Framework) WaitMigrationPhase(t testing.TB, ns, name string, phase virtv1.VirtualMachineInstanceMigrationPhase, timeout time.Duration) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var m *virtv1.VirtualMachineInstanceMigration
	Eventually(t, timeout, fmt.Sprintf("VMIM %s/%s phase %s", ns, name, phase), func() (bool, string) {
		var err error
		m, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if m.Status.Phase != phase && m.IsFinal() {
			t.Fatalf("VMIM %s/%s ended in phase %s, want %s; status: %s", ns, name, m.Status.Phase, phase, toJSON(m.Status))
		}
		return m.Status.Phase == phase, fmt.Sprintf("phase %q", m.Status.Phase)
	})
	return m
}

// TargetPods returns the pods virt-controller created for the VMIM, found by
// the kubevirt.io/migrationJobUID label.
func (f *Framework) TargetPods(t testing.TB, ns string, m *virtv1.VirtualMachineInstanceMigration) []k8sv1.Pod {
	t.Helper()
	pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(Ctx(t), metav1.ListOptions{
		LabelSelector: virtv1.MigrationJobLabel + "=" + string(m.UID)})
	if err != nil {
		t.Fatalf("list target pods: %v", err)
	}
	return pods.Items
}

// WaitTargetPod waits until virt-controller created the VMIM's target pod and
// cond holds for it; it returns the pod.
func (f *Framework) WaitTargetPod(t testing.TB, ns string, m *virtv1.VirtualMachineInstanceMigration, what string, cond func(*k8sv1.Pod) bool) k8sv1.Pod {
	t.Helper()
	var pod k8sv1.Pod
	Eventually(t, 60*time.Second, "target pod of VMIM "+m.Name+": "+what, func() (bool, string) {
		pods := f.TargetPods(t, ns, m)
		if len(pods) == 0 {
			return false, "no target pod"
		}
		pod = pods[0]
		return cond(&pod), "pod status: " + toJSON(pod.Status)
	})
	return pod
}

// MigrationPhases returns the phases of the VMIM's phaseTransitionTimestamps,
// in time order.
func MigrationPhases(m *virtv1.VirtualMachineInstanceMigration) []string {
	ts := append([]virtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp(nil), m.Status.PhaseTransitionTimestamps...)
	sort.SliceStable(ts, func(i, j int) bool {
		return ts[i].PhaseTransitionTimestamp.Before(&ts[j].PhaseTransitionTimestamp)
	})
	out := make([]string, 0, len(ts))
	for _, p := range ts {
		out = append(out, string(p.Phase))
	}
	return out
}

// PodCondition returns the pod's condition of type ct, or nil.
func PodCondition(pod *k8sv1.Pod, ct k8sv1.PodConditionType) *k8sv1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsUnschedulable reports whether the scheduler marked the pod Unschedulable.
func IsUnschedulable(pod *k8sv1.Pod) bool {
	c := PodCondition(pod, k8sv1.PodScheduled)
	return c != nil && c.Status == k8sv1.ConditionFalse && c.Reason == k8sv1.PodReasonUnschedulable
}

// Join is strings.Join for readable assertion messages.
func Join(s []string) string { return "[" + strings.Join(s, " ") + "]" }

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
