package tests

import (
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kmt.local/e2e/framework"
)

// What the VM's owner can read names only its own namespace's objects (issue 40): a pod of
// another tenant whose required anti-affinity keeps the target off a node is counted in the
// VMIM's condition and Events, never named, and its namespace is not named either. Read as
// the vm-owner identity, which may read VMIMs and Events in its namespace only.
func TestTenantReadsOnlyItsOwnNamespace(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	other := f.BareNamespace(t)
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)

	guarded := "x-" + framework.RandomSuffix() + "-guarded"
	f.ExtraNode(t, guarded, "192.168.74.1", nil)
	guard := &k8sv1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-guard", Labels: map[string]string{"app": "secret"}},
		Spec: k8sv1.PodSpec{
			NodeName:                      guarded,
			TerminationGracePeriodSeconds: ptrTo(int64(0)),
			Containers:                    []k8sv1.Container{{Name: "guard", Image: "kmt-e2e/filler:none"}},
			Affinity: &k8sv1.Affinity{PodAntiAffinity: &k8sv1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []k8sv1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-launcher"}},
					Namespaces:    []string{ns},
					TopologyKey:   k8sv1.LabelHostname,
				}},
			}},
		},
	}
	if _, err := f.Admin.Kube.CoreV1().Pods(other).Create(framework.Ctx(t), guard, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s/secret-guard: %v", other, err)
	}

	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi",
		framework.WithTerm(framework.HostnamesTerm(guarded, source))))
	f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTargetUnsched, "True", framework.ReasonUnschedulable, 90*time.Second)

	// As the VM's owner.
	m, err := f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(framework.Ctx(t), "mig", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the VM owner reads its VMIM: %v", err)
	}
	msg := framework.MigrationCondition(m, framework.ConditionTargetUnsched).Message
	want := guarded + ": the anti-affinity of 1 pod in other namespaces (topologyKey kubernetes.io/hostname) excludes it"
	if !strings.Contains(msg, want) {
		t.Errorf("condition message %q lacks %q", msg, want)
	}
	texts := []string{msg}
	for _, c := range m.Status.Conditions {
		texts = append(texts, c.Message)
	}
	events, err := f.VMOwner.Kube.CoreV1().Events(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the VM owner lists its Events: %v", err)
	}
	if len(events.Items) == 0 {
		t.Errorf("the VM owner sees no Events in %s", ns)
	}
	for _, e := range events.Items {
		texts = append(texts, e.Message)
	}
	for _, text := range texts {
		for _, secret := range []string{"secret-guard", other} {
			if strings.Contains(text, secret) {
				t.Errorf("the VM owner reads %q, which names %q of another namespace", text, secret)
			}
		}
	}
	t.Logf("the VM owner reads: %s", msg)
}
