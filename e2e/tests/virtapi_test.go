package tests

// Scenarios that only exist because KubeVirt's real virt-api is in the path: its
// migration finalizer (cancel while scheduling), its virtualmachines/migrate
// subresource (virtctl migrate) and its pod eviction interceptor (kubectl drain).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// poolNodes creates n extra fake nodes labelled kmt-e2e/pool=<pool> and tainted
// kmt-e2e/pool=<pool>:NoSchedule (poolTaint), so only the scenario's own VMIs (inPool) land
// there and a scenario that cordons or drains them touches no other scenario's VMs (an
// unpinned VMI would otherwise prefer the empty new nodes, and a drain would evict it).
// Their InternalIPs come from 192.168.<octet>.0/24.
func poolNodes(t *testing.T, f *framework.Framework, pool string, octet, n int) []string {
	t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", pool, i)
		f.ExtraNode(t, name, fmt.Sprintf("192.168.%d.%d", octet, i+1), func(node *k8sv1.Node) {
			node.Labels["kmt-e2e/pool"] = pool
			node.Spec.Taints = append(node.Spec.Taints, poolTaint(pool))
		})
		names = append(names, name)
	}
	return names
}

func inPool(pool string) framework.VMIOption {
	return func(vmi *virtv1.VirtualMachineInstance) {
		framework.WithNodeSelector(map[string]string{"kmt-e2e/pool": pool})(vmi)
		framework.WithToleration(k8sv1.Toleration{Key: "kmt-e2e/pool", Operator: k8sv1.TolerationOpEqual,
			Value: pool, Effect: k8sv1.TaintEffectNoSchedule})(vmi)
	}
}

// poolTaint keeps every pod but the pool's own VMIs' off a pool node.
func poolTaint(pool string) k8sv1.Taint {
	return k8sv1.Taint{Key: "kmt-e2e/pool", Value: pool, Effect: k8sv1.TaintEffectNoSchedule}
}

func setUnschedulable(t *testing.T, f *framework.Framework, node string, on bool) {
	t.Helper()
	p := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := f.Admin.Kube.CoreV1().Nodes().Patch(framework.Ctx(t), node, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set node %s unschedulable=%t: %v", node, on, err)
	}
}

// The demo's sequence: a placed VMIM whose only allowed node is cordoned waits in
// Scheduling with its target pod Pending; deleting it removes that pod (virt-api's
// mutating webhook put the finalizer kubevirt.io/migrationJobFinalize on the VMIM,
// which lets virt-controller's handlePreHandoffMigrationCancel delete the target pod
// before the VMIM goes), so after uncordon a new VMIM for the same VM succeeds.
func TestVirtAPICancelWhileSchedulingRemovesTargetPod(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-cancel-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 72, 2)
	src, dst := nodes[0], nodes[1]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", src, inPool(pool)), src)
	setUnschedulable(t, f, dst, true)

	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("to-cordoned", "vmi",
		framework.WithTerm(framework.NodeNameTerm(dst))))
	if !contains(m.Finalizers, virtv1.VirtualMachineInstanceMigrationFinalizer) {
		t.Fatalf("VMIM finalizers %v: virt-api's mutating webhook did not add %s", m.Finalizers, virtv1.VirtualMachineInstanceMigrationFinalizer)
	}
	if m.Labels[virtv1.MigrationSelectorLabel] != "vmi" {
		t.Errorf("VMIM labels %v: want %s=vmi from virt-api's mutating webhook", m.Labels, virtv1.MigrationSelectorLabel)
	}
	pod := f.WaitTargetPod(t, ns, m, "released and unschedulable", func(p *k8sv1.Pod) bool {
		return !framework.HasGate(p) && framework.IsUnschedulable(p)
	})

	start := time.Now()
	if err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Delete(framework.Ctx(t), m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete VMIM: %v", err)
	}
	framework.Eventually(t, 60*time.Second, "target pod "+pod.Name+" and VMIM gone", func() (bool, string) {
		_, perr := f.Admin.Kube.CoreV1().Pods(ns).Get(framework.Ctx(t), pod.Name, metav1.GetOptions{})
		_, merr := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(framework.Ctx(t), m.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(merr), fmt.Sprintf("pod: %v; VMIM: %v", perr, merr)
	})
	t.Logf("target pod and VMIM gone %v after the delete", time.Since(start).Round(time.Millisecond))

	setUnschedulable(t, f, dst, false)
	again := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("after-uncordon", "vmi",
		framework.WithTerm(framework.NodeNameTerm(dst))))
	f.WaitMigrationPhase(t, ns, again.Name, virtv1.MigrationSucceeded, 90*time.Second)
	f.WaitVMIRunning(t, ns, "vmi", dst)
}

// virt-api's own VMIM admitter refuses a second migration while one is in flight for the
// same VMI, whoever asks and whatever the request carries.
func TestVirtAPIOneMigrationInFlight(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-inflight-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 73, 2)
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", nodes[0], inPool(pool)), nodes[0])
	setUnschedulable(t, f, nodes[1], true) // the first migration stays in flight
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("first", "vmi"))
	_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
		framework.NewMigration("second", "vmi", framework.WithTerm(framework.NodeNameTerm(nodes[1]))), metav1.CreateOptions{})
	const want = `admission webhook "migration-create-validator.kubevirt.io" denied the request: in-flight migration detected`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second VMIM while the first is in flight: err = %v, want %q", err, want)
	}
}

// newVM is a VirtualMachine that runs framework.NewVMI's spec (virtctl migrate acts on VMs).
func newVM(name string, opts ...framework.VMIOption) *virtv1.VirtualMachine {
	vmi := framework.NewVMI(name, "", opts...)
	always := virtv1.RunStrategyAlways
	return &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: virtv1.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kmt-e2e/vm": name}},
				Spec:       vmi.Spec,
			},
		},
	}
}

func virtctl(t *testing.T, user string, args ...string) framework.Result {
	t.Helper()
	return framework.Run(t, 60*time.Second, nil, framework.Virtctl(t), append([]string{"--kubeconfig", framework.KubeconfigOf(user)}, args...)...)
}

// bindMigrate gives user KubeVirt's kubevirt.io:migrate ClusterRole in ns (the
// virtualmachines/migrate subresource and VMIMs), as an admin would.
func bindMigrate(t *testing.T, f *framework.Framework, ns, user string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-migrate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubevirt.io:migrate"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if _, err := f.Admin.Kube.RbacV1().RoleBindings(ns).Create(framework.Ctx(t), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind kubevirt.io:migrate: %v", err)
	}
}

// migrateVM runs `virtctl migrate` as user and, when it succeeds, waits for the VMIM
// virt-api created (generateName kubevirt-migrate-vm-) to succeed and returns it.
func migrateVM(t *testing.T, f *framework.Framework, ns, user, vm string, extra ...string) (framework.Result, *virtv1.VirtualMachineInstanceMigration) {
	t.Helper()
	before := map[string]bool{}
	list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Items {
		before[m.Name] = true
	}
	r := virtctl(t, user, append([]string{"-n", ns, "migrate", vm}, extra...)...)
	if r.Code != 0 {
		return r, nil
	}
	list, err = f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !before[m.Name] {
			if !strings.HasPrefix(m.Name, "kubevirt-migrate-vm-") {
				t.Errorf("VMIM %s: want virt-api's generateName kubevirt-migrate-vm-", m.Name)
			}
			return r, f.WaitMigrationPhase(t, ns, m.Name, virtv1.MigrationSucceeded, 90*time.Second)
		}
	}
	t.Fatalf("virtctl migrate succeeded (%s) but no new VMIM in %s", r, ns)
	return r, nil
}

// virtctl migrate through virt-api's virtualmachines/migrate subresource. virt-api checks
// that the person may `update` virtualmachines/migrate (KubeVirt's kubevirt.io:migrate
// role, not aggregated into admin or edit), then creates the VMIM as its own service
// account: this webhook sees virt-api, not the person. Decided here: KubeVirt's
// spec.addedNodeSelector from virt-api is denied by default (the person's `use` cannot be
// checked) with a message naming the way out, and allowed with
// --trust-virt-api-added-node-selector (virt-api's authorisation stands in for the check).
// A plain virtctl migrate needs no decision: the operator has no opinion on it.
func TestVirtAPIMigrateSubresource(t *testing.T) {
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	ns := f.OwnerNamespace(t)
	pool := "kmt-virtctl-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 74, 3)
	if _, err := f.Admin.Virt.KubevirtV1().VirtualMachines(ns).Create(framework.Ctx(t), newVM("vm", inPool(pool)), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create VM: %v", err)
	}
	f.WaitVMIRunning(t, ns, "vm", "")
	owner := f.VMOwner.User

	// Without kubevirt.io:migrate the VM owner cannot use the subresource: virt-api refuses.
	if r, _ := migrateVM(t, f, ns, owner, "vm"); r.Code == 0 || !strings.Contains(r.Stderr, "virtualmachines/migrate") {
		t.Fatalf("virtctl migrate as %s without kubevirt.io:migrate: %s; want virt-api's refusal naming virtualmachines/migrate", owner, r)
	}

	// Plain migrations: admin, then the owner once bound to kubevirt.io:migrate.
	if r, m := migrateVM(t, f, ns, framework.AdminUser, "vm"); r.Code != 0 {
		t.Fatalf("virtctl migrate as admin: %s", r)
	} else if annotations := m.Annotations; annotations[framework.AddedTermAnnotation] != "" {
		t.Errorf("virt-api's VMIM carries %s", framework.AddedTermAnnotation)
	}
	bindMigrate(t, f, ns, owner)
	framework.Eventually(t, 30*time.Second, "the owner's virtctl migrate admitted", func() (bool, string) {
		r, _ := migrateVM(t, f, ns, owner, "vm")
		return r.Code == 0, r.String()
	})

	// spec.addedNodeSelector through virt-api. Where KubeVirt has none (before v1.6) the plain
	// migrations above are the whole scenario.
	t.Run("AddedNodeSelector", func(t *testing.T) {
		f.RequireMigrationAddedNodeSelector(t)
		target := func() string {
			cur, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(framework.Ctx(t), "vm", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				if n != cur.Status.NodeName {
					return n
				}
			}
			t.Fatalf("VMI on %s, no other pool node", cur.Status.NodeName)
			return ""
		}
		// Default operator: denied for everyone.
		for _, user := range []string{framework.AdminUser, owner} {
			r, _ := migrateVM(t, f, ns, user, "vm", "--addedNodeSelector", "kubernetes.io/hostname="+target())
			want := `may not set spec.addedNodeSelector`
			if r.Code == 0 || !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "--trust-virt-api-added-node-selector") ||
				!strings.Contains(r.Stderr, "kubevirt-apiserver") {
				t.Errorf("virtctl migrate --addedNodeSelector as %s, default operator: %s; want the webhook's denial of virt-api naming the flag", user, r)
			}
		}

		// Trusted: both place the VM where they ask.
		framework.StopOperator(t, "0", "TERM")
		framework.StartOperator(t, "0", 0, "--trust-virt-api-added-node-selector")
		for _, user := range []string{framework.AdminUser, owner} {
			node := target()
			r, m := migrateVM(t, f, ns, user, "vm", "--addedNodeSelector", "kubernetes.io/hostname="+node)
			if r.Code != 0 {
				t.Fatalf("virtctl migrate --addedNodeSelector as %s, trusting virt-api: %s", user, r)
			}
			if m.Spec.AddedNodeSelector["kubernetes.io/hostname"] != node {
				t.Errorf("VMIM spec.addedNodeSelector = %v", m.Spec.AddedNodeSelector)
			}
			f.WaitVMIRunning(t, ns, "vm", node)
		}
	})
}

// kubectl drain of the node a LiveMigrate VMI runs on: virt-api's eviction interceptor
// answers the eviction with 429 and sets status.evacuationNodeName, virt-controller's
// evacuation controller creates a kubevirt-evacuation-* VMIM, the VMI moves, its source
// pod completes and the drain finishes. The operator leaves the evacuation alone.
func TestVirtAPIDrainEvacuates(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-drain-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 75, 2)
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", nodes[0], inPool(pool), framework.LiveMigrateOnEviction), nodes[0])

	r := drain(t, nodes[0], "120s")
	if r.Code != 0 {
		t.Fatalf("kubectl drain %s: %s", nodes[0], r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "Eviction triggered evacuation") {
		t.Errorf("kubectl drain output does not show virt-api's 429 %q: %s", "Eviction triggered evacuation", r)
	}
	list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var evac []string
	for _, m := range list.Items {
		if strings.HasPrefix(m.Name, "kubevirt-evacuation-") && m.Annotations[virtv1.EvacuationMigrationAnnotation] == nodes[0] {
			evac = append(evac, fmt.Sprintf("%s:%s", m.Name, m.Status.Phase))
			if m.Status.Phase != virtv1.MigrationSucceeded {
				t.Errorf("evacuation VMIM %s phase %s", m.Name, m.Status.Phase)
			}
			if c := framework.MigrationCondition(&m, "addedNodeSelectorTermApplied"); c != nil {
				t.Errorf("the operator touched evacuation VMIM %s: %+v", m.Name, c)
			}
		}
	}
	if len(evac) != 1 {
		t.Fatalf("evacuation VMIMs for %s: %v, want exactly one", nodes[0], evac)
	}
	f.WaitVMIRunning(t, ns, "vmi", nodes[1])
	t.Logf("drained %s: %v", nodes[0], evac)
}

// A drain that meets a placed migration already in flight for the VMI: virt-api still
// answers 429 and marks the VMI for evacuation, but virt-controller's evacuation
// controller skips a VMI that already has a migration in flight
// (pkg/virt-controller/watch/drain/evacuation/evacuation.go
// filterRunningNonMigratingVMIs, "already migrating"), so no evacuation VMIM is created:
// the placed migration moves the VM where the admin asked, then the drain completes.
func TestVirtAPIDrainWaitsForPlacedMigration(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-drainplaced-" + framework.RandomSuffix()
	nodes := poolNodes(t, f, pool, 76, 3)
	src, dst := nodes[0], nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", src, inPool(pool), framework.LiveMigrateOnEviction), src)

	setUnschedulable(t, f, dst, true) // the placed migration waits in Scheduling
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("placed", "vmi", framework.WithTerm(framework.NodeNameTerm(dst))))
	f.WaitTargetPod(t, ns, m, "released and unschedulable", func(p *k8sv1.Pod) bool {
		return !framework.HasGate(p) && framework.IsUnschedulable(p)
	})

	drained := make(chan framework.Result, 1)
	go func() {
		drained <- drain(t, src, "120s")
	}()
	framework.Eventually(t, 60*time.Second, "VMI marked for evacuation of "+src, func() (bool, string) {
		cur, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(framework.Ctx(t), "vmi", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cur.Status.EvacuationNodeName == src, fmt.Sprintf("evacuationNodeName %q", cur.Status.EvacuationNodeName)
	})

	setUnschedulable(t, f, dst, false)
	f.WaitMigrationPhase(t, ns, "placed", virtv1.MigrationSucceeded, 90*time.Second)
	f.WaitVMIRunning(t, ns, "vmi", dst)
	r := <-drained
	if r.Code != 0 {
		t.Fatalf("kubectl drain %s: %s", src, r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "Eviction triggered evacuation") {
		t.Errorf("kubectl drain output does not show virt-api's 429: %s", r)
	}
	list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mig := range list.Items {
		if mig.Name != "placed" {
			t.Errorf("VMIM %s (annotations %v) besides the placed one: the evacuation controller should have left the VMI to it", mig.Name, mig.Annotations)
		}
	}
}

// drain runs kubectl drain of node as the admin, with kubectl's own --timeout.
func drain(t *testing.T, node, timeout string) framework.Result {
	t.Helper()
	return framework.Run(t, 150*time.Second, nil, framework.Kubectl(), "--kubeconfig", framework.KubeconfigOf(framework.AdminUser),
		"drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+timeout)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
