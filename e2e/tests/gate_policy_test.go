package tests

// The admission policies of manifests/default/admission_policies.yaml (issue 45): they run
// inside the API server, so they hold while no operator replica runs or leads.
//   - Only the operator's ServiceAccount removes the scheduling gate, and only in a request
//     that leaves every term of the pod's required node affinity with a requirement.
//   - Nobody adds or changes a pod's kubevirt.io/migrationJobUID label.
//   - The operator's ServiceAccount updates only gated pods, changing only the node affinity and
//     its gate, and deletes only virt-launcher pods of a migration.

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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

const (
	gatePolicy    = "migration-target-scheduling-gate"
	gatePolicyMsg = "ValidatingAdmissionPolicy '" + gatePolicy + "'"
	writesPolicy  = "migration-target-operator-writes"
	jobLabel      = "kubevirt.io/migrationJobUID"
	removeGate    = `[{"op":"remove","path":"/spec/schedulingGates"}]`
)

// bindEdit gives user the namespace's built-in `edit` ClusterRole (pods update and patch among
// it) and waits until the authorizer grants it a pod patch.
func bindEdit(t *testing.T, f *framework.Framework, ns string, subject rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "edit-" + strings.ToLower(subject.Kind) + "-" + subject.Name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := f.Admin.Kube.RbacV1().RoleBindings(ns).Create(framework.Ctx(t), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("RoleBinding %s: %v", rb.Name, err)
	}
	as := subject.Name
	if subject.Kind == rbacv1.ServiceAccountKind {
		as = "system:serviceaccount:" + subject.Namespace + ":" + subject.Name
	}
	framework.Eventually(t, 30*time.Second, as+" may patch pods in "+ns, func() (bool, string) {
		r := framework.KubectlAs(t, framework.AdminUser, "", "auth", "can-i", "patch", "pods", "-n", ns, "--as="+as)
		return strings.TrimSpace(r.Stdout) == "yes", r.String()
	})
}

// gatedPod creates (as the admin) a pod held by the operator's gate, labelled as a target pod
// of the migration jobUID but without kubevirt.io=virt-launcher, so that neither KubeVirt nor
// the operator's mutating webhook take it for a VM's pod.
func gatedPod(t *testing.T, f *framework.Framework, ns, name, jobUID string) *k8sv1.Pod {
	t.Helper()
	return createPod(t, f, ns, name, jobUID, true)
}

// createPod is gatedPod, with the gate or without.
func createPod(t *testing.T, f *framework.Framework, ns, name, jobUID string, gated bool) *k8sv1.Pod {
	t.Helper()
	p := &k8sv1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "kmt-e2e-gate"}},
		Spec: k8sv1.PodSpec{
			Containers: []k8sv1.Container{{Name: "c", Image: "kmt-e2e/none:0"}},
		},
	}
	if gated {
		p.Spec.SchedulingGates = []k8sv1.PodSchedulingGate{{Name: framework.SchedulingGate}}
	}
	if jobUID != "" {
		p.Labels[jobLabel] = jobUID
	}
	var out *k8sv1.Pod
	// Until kube-controller-manager made the namespace's "default" ServiceAccount, the
	// ServiceAccount admission plugin rejects the pod.
	framework.Eventually(t, 30*time.Second, "create pod "+name, func() (bool, string) {
		var err error
		out, err = f.Admin.Kube.CoreV1().Pods(ns).Create(framework.Ctx(t), p, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return out
}

// impersonating is a client of the admin's acting as user (a ServiceAccount's name: its
// groups are what the API server gives a ServiceAccount token).
func impersonating(t *testing.T, f *framework.Framework, user string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(f.Admin.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts",
		"system:serviceaccounts:" + strings.Split(user, ":")[2], "system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiResult is an API call's error as a Result (the message as stderr).
func apiResult(err error) framework.Result {
	if err != nil {
		return framework.Result{Stderr: err.Error(), Code: 1}
	}
	return framework.Result{}
}

// denied checks that r is a denial by the gate policy carrying want.
func denied(t *testing.T, what string, r framework.Result, want string) {
	t.Helper()
	deniedBy(t, gatePolicy, what, r, want)
}

// deniedBy checks that r is a denial by the admission policy `policy` carrying want.
func deniedBy(t *testing.T, policy, what string, r framework.Result, want string) {
	t.Helper()
	by := "ValidatingAdmissionPolicy '" + policy + "'"
	if r.Code == 0 || !strings.Contains(r.Stderr, by) || !strings.Contains(r.Stderr, want) {
		t.Errorf("%s: want a denial by %s saying %q, got %s", what, by, want, r)
	}
}

func allowed(t *testing.T, what string, r framework.Result) {
	t.Helper()
	if r.Code != 0 {
		t.Errorf("%s: want allowed, got %s", what, r)
	}
}

// The policy on its own (no operator or KubeVirt involved): who may remove the gate, and how;
// the migration label cannot be added or changed; ordinary edits of a gated pod still pass.
func TestGatePolicyPodUpdates(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	const editor = "vm-owner"
	bindEdit(t, f, ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: editor})
	// A ServiceAccount of the operator's name in a tenant's namespace, with `edit` there: the
	// name alone must not make it the operator.
	sa := &k8sv1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "migration-target-operator", Namespace: ns}}
	if _, err := f.Admin.Kube.CoreV1().ServiceAccounts(ns).Create(framework.Ctx(t), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindEdit(t, f, ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns})
	impostor := "system:serviceaccount:" + ns + ":" + sa.Name
	operator := framework.OperatorServiceAccount

	gatedPod(t, f, ns, "gated", "job-1")
	gatedPod(t, f, ns, "plain", "")
	createPod(t, f, ns, "ungated", "", false)
	// As another identity, through the API directly: kubectl would GET the pod first, and the
	// operator may not get pods (it lists and watches them).
	patch := func(user string, as string, pod, body string) framework.Result {
		if as == "" {
			return framework.KubectlAs(t, user, "", "-n", ns, "patch", "pod", pod, "--type=json", "-p", body)
		}
		_, err := impersonating(t, f, as).CoreV1().Pods(ns).Patch(framework.Ctx(t), pod, types.JSONPatchType, []byte(body), metav1.PatchOptions{})
		return apiResult(err)
	}
	del := func(as, pod string) framework.Result {
		return apiResult(impersonating(t, f, as).CoreV1().Pods(ns).Delete(framework.Ctx(t), pod, metav1.DeleteOptions{}))
	}
	notOperator := "only the kubevirt-migration-target operator may remove the scheduling gate " + framework.SchedulingGate

	denied(t, "a namespace editor removes the gate", patch(editor, "", "gated", removeGate), notOperator+
		" (it first ANDs the node selector term of the migration request into the required node affinity of the pod); vm-owner may not")
	denied(t, "the cluster admin removes the gate", patch(framework.AdminUser, "", "gated", removeGate), notOperator)
	denied(t, "a ServiceAccount named like the operator in a tenant namespace removes the gate",
		patch(framework.AdminUser, impostor, "gated", removeGate), notOperator)
	denied(t, "the operator removes the gate without ANDing a term", patch(framework.AdminUser, operator, "gated", removeGate),
		"is removed only in the request that ANDs the added node selector term")
	// An empty term would narrow nothing.
	emptyTerm := `[{"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[]}]}}}},` +
		`{"op":"remove","path":"/spec/schedulingGates"}]`
	denied(t, "the operator removes the gate with an empty term", patch(framework.AdminUser, operator, "gated", emptyTerm),
		"is removed only in the request that ANDs the added node selector term")

	// The operator's own writes (issue 45 §3): not to a pod without the gate, not to anything
	// but the node affinity and its gate, deletes only of migration virt-launcher pods.
	deniedBy(t, writesPolicy, "the operator patches a pod without the gate",
		patch(framework.AdminUser, operator, "ungated", `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`),
		"may update only pods that carry its scheduling gate")
	deniedBy(t, writesPolicy, "the operator relabels a gated pod",
		patch(framework.AdminUser, operator, "gated", `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`),
		"may change only the node affinity of a gated pod and remove its own scheduling gate")
	deniedBy(t, writesPolicy, "the operator adds a toleration to a gated pod",
		patch(framework.AdminUser, operator, "gated", `[{"op":"add","path":"/spec/tolerations/-","value":{"key":"kmt-e2e/any","operator":"Exists","effect":"NoSchedule"}}]`),
		"may change only the node affinity of a gated pod and remove its own scheduling gate")
	deniedBy(t, writesPolicy, "the operator deletes a pod that is no migration's virt-launcher pod",
		del(operator, "ungated"),
		"may delete only virt-launcher pods of a migration")
	deniedBy(t, writesPolicy, "the operator deletes a gated pod that is no virt-launcher pod",
		del(operator, "gated"),
		"may delete only virt-launcher pods of a migration")
	// Labelled a virt-launcher pod after its creation: the operator's mutating webhook sees only
	// creations of such pods, and there is no migration job-3 for it to find.
	gatedPod(t, f, ns, "launcher", "job-3")
	framework.Eventually(t, 30*time.Second, "label pod launcher as a virt-launcher pod", func() (bool, string) {
		r := framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "label", "pod", "launcher", "kubevirt.io=virt-launcher")
		return r.Code == 0, r.String()
	})
	allowed(t, "the operator deletes a migration's virt-launcher pod",
		del(operator, "launcher"))
	// The namesake in a tenant's namespace is not bound by the operator's policy, nor helped
	// by it: its `edit` role decides (and the gate policy above).
	allowed(t, "a ServiceAccount named like the operator labels a plain pod in its namespace",
		patch(framework.AdminUser, impostor, "plain", `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`))

	// Ordinary edits of a gated pod pass (the gate and the label untouched).
	allowed(t, "a namespace editor labels a gated pod",
		framework.KubectlAs(t, editor, "", "-n", ns, "label", "pod", "gated", "team=blue"))

	// The label: not added, not changed, by anyone.
	labelMsg := "the label kubevirt.io/migrationJobUID of a pod is set when the pod is created and cannot be added or changed"
	denied(t, "a namespace editor adds the migration label",
		framework.KubectlAs(t, editor, "", "-n", ns, "label", "pod", "plain", jobLabel+"=job-2"), labelMsg)
	denied(t, "a namespace editor changes the migration label",
		framework.KubectlAs(t, editor, "", "-n", ns, "label", "--overwrite", "pod", "gated", jobLabel+"=job-2"), labelMsg)
	denied(t, "the cluster admin changes the migration label",
		framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "label", "--overwrite", "pod", "gated", jobLabel+"=job-2"), labelMsg)

	// The operator's release: the term ANDed in and the gate removed in one request.
	release := `[{"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
		`{"matchExpressions":[{"key":"kmt-e2e/pool","operator":"In","values":["nowhere"]}]}]}}}},{"op":"remove","path":"/spec/schedulingGates"}]`
	allowed(t, "the operator releases the gate with the term", patch(framework.AdminUser, operator, "gated", release))
	p, err := f.Admin.Kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.SchedulingGates) != 0 || p.Labels[jobLabel] != "job-1" {
		t.Errorf("after the release: gates %v, label %q", p.Spec.SchedulingGates, p.Labels[jobLabel])
	}
}

// Issue 45, finding 1: a VM owner with the namespace's `edit` role removes the gate of its
// own VM's target pod while the webhook answers but no replica leads. Denied, naming the
// policy; the pod stays gated; once a leader runs it releases the pod with the term, and the
// migration lands inside it.
func TestGatePolicyOwnerCannotReleaseWithoutLeader(t *testing.T) {
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0, "--disable-controller")

	ns := f.OwnerNamespace(t)
	bindEdit(t, f, ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: framework.VMOwnerUser})
	source, target := f.Nodes[0], f.Nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(target))))
	pod := f.WaitTargetPod(t, ns, m, "gated", func(p *k8sv1.Pod) bool { return framework.HasGate(p) })

	r := framework.KubectlAs(t, framework.VMOwnerUser, "", "-n", ns, "patch", "pod", pod.Name, "--type=json", "-p", removeGate)
	denied(t, "the VM owner removes the gate of its target pod", r,
		"only the kubevirt-migration-target operator may remove the scheduling gate")
	r = framework.KubectlAs(t, framework.VMOwnerUser, "", "-n", ns, "label", "--overwrite", "pod", pod.Name, jobLabel+"=other")
	denied(t, "the VM owner relabels its target pod", r, "cannot be added or changed")
	// Still gated a moment later: nothing else released it.
	time.Sleep(2 * time.Second)
	if p, err := f.Admin.Kube.CoreV1().Pods(ns).Get(framework.Ctx(t), pod.Name, metav1.GetOptions{}); err != nil || !framework.HasGate(p) {
		t.Fatalf("target pod %s lost its gate without a leader (err %v)", pod.Name, err)
	}

	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0)
	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 120*time.Second)
	termAppliedOnce(t, f, ns, m, target, time.Time{})
}

// removeGatePolicyBinding deletes the gate policy's binding (a bypass, as a cluster admin
// could) and re-creates it when the test ends.
func removeGatePolicyBinding(t *testing.T, f *framework.Framework) {
	t.Helper()
	bindings := f.Admin.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	b, err := bindings.Get(framework.Ctx(t), gatePolicy, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Logf("no binding %s: nothing to bypass", gatePolicy)
		return
	}
	if err != nil {
		t.Fatalf("the binding %s: %v", gatePolicy, err)
	}
	if err := bindings.Delete(framework.Ctx(t), gatePolicy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.ObjectMeta = metav1.ObjectMeta{Name: b.Name, Labels: b.Labels}
		if _, err := bindings.Create(framework.Ctx(t), b, metav1.CreateOptions{}); err != nil {
			t.Errorf("re-create the binding %s: %v", gatePolicy, err)
		}
	})
}

// Issue 45, the silent escape: with the policy bypassed, the VM owner removes the gate while
// no replica leads and the migration ends. A leader that comes afterwards gives the final
// VMIM addedNodeSelectorTermApplied=False/TargetPodEscapedGate naming the node it landed on
// and whether the term allows it, with one Warning Event.
func TestGatePolicyBypassedEscapeReportedAfterTheFact(t *testing.T) {
	f := fw(t)
	framework.RestoreDefaultOperator(t)
	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0, "--disable-controller")

	ns := f.OwnerNamespace(t)
	bindEdit(t, f, ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: framework.VMOwnerUser})
	source, target := f.Nodes[0], f.Nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("mig", "vmi", framework.WithTerm(framework.NodeNameTerm(target))))
	pod := f.WaitTargetPod(t, ns, m, "gated", func(p *k8sv1.Pod) bool { return framework.HasGate(p) })

	removeGatePolicyBinding(t, f)
	framework.Eventually(t, 30*time.Second, "the VM owner removes the gate (the policy's binding is gone)", func() (bool, string) {
		r := framework.KubectlAs(t, framework.VMOwnerUser, "", "-n", ns, "patch", "pod", pod.Name, "--type=json", "-p", removeGate)
		return r.Code == 0, r.String()
	})
	m = f.WaitMigrationPhase(t, ns, "mig", virtv1.MigrationSucceeded, 120*time.Second)
	landed := f.WaitVMIRunning(t, ns, "vmi", "").Status.NodeName
	if landed == source {
		t.Fatalf("the Succeeded migration left the VMI on its source %s", source)
	}
	if c := framework.MigrationCondition(m, framework.ConditionTermApplied); c != nil {
		t.Fatalf("a condition without a leader: %s", framework.ToJSON(c))
	}

	framework.StopOperator(t, "0", "TERM")
	framework.StartOperator(t, "0", 0)
	m = f.WaitMigrationCondition(t, ns, "mig", framework.ConditionTermApplied, "False", framework.ReasonTargetPodEscapedGate, 60*time.Second)
	msg := framework.MigrationCondition(m, framework.ConditionTermApplied).Message
	inside := "outside"
	if landed == target {
		inside = "inside"
	}
	want := fmt.Sprintf("migration ended on node %s, which is %s the term", landed, inside)
	if !strings.Contains(msg, "never carried the added term") || !strings.Contains(msg, want) {
		t.Errorf("TargetPodEscapedGate message %q, want it to say the pod never carried the term and %q", msg, want)
	}
	ev := waitEvents(t, f, ns, "mig", framework.ReasonTargetPodEscapedGate, true)
	if len(ev) != 1 || ev[0].Type != k8sv1.EventTypeWarning || ev[0].Count > 1 {
		t.Errorf("TargetPodEscapedGate Events %s, want exactly one Warning", framework.EventSummary(ev))
	}
}

// Issue 45, finding 2: a tenant whose VM is being evacuated under a policy with
// maxInboundPerNode creates extra pods labelled with its evacuation VMIM's uid (nothing stops
// that at creation). The webhook gates them and the loop releases them; they stay Pending,
// and counted as inbound they would fill every node of the policy's term. Counted one pod per
// migration, they do not hold another tenant's evacuation under the same policy.
func TestGatePolicyFakeTargetPodsDoNotHoldEvacuations(t *testing.T) {
	t.Parallel()
	f := fw(t)
	tenant, other := f.Namespace(t), f.Namespace(t)
	bindEdit(t, f, tenant, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: framework.VMOwnerUser})
	pool := "kmt-fake-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 88, "a", "a", "b", "b")
	rackB := map[string]bool{nodes[2]: true, nodes[3]: true}
	policy := pool + "-two-per-node"
	if err := createPolicy(t, f, f.Admin, policy, fmt.Sprintf(`{
		"maxInboundPerNode": 2,
		"match": {"sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q, "rack": "a"}}},
		"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}}`, pool)); err != nil {
		t.Fatalf("create policy: %v", err)
	}

	// The tenant's VM may only run on its own node (a node selector of its own), so its
	// evacuation's target pod stays Pending and the evacuation stays in flight: its one pod
	// counts against both rack-b nodes (1 of 2 each).
	home := func(vmi *virtv1.VirtualMachineInstance) {
		framework.WithNodeSelector(map[string]string{k8sv1.LabelHostname: nodes[0]})(vmi)
	}
	f.StartVMI(t, f.Admin, tenant, framework.NewVMI("vm-a", nodes[0], inPool(pool), home, framework.LiveMigrateOnEviction), nodes[0])
	f.StartVMI(t, f.Admin, other, framework.NewVMI("vm-b", nodes[1], inPool(pool), framework.LiveMigrateOnEviction), nodes[1])

	// Drain the tenant's node: the eviction starts the evacuation; the drain itself cannot end.
	framework.Run(t, 60*time.Second, nil, framework.Kubectl(), "--kubeconfig", framework.KubeconfigOf(framework.AdminUser),
		"drain", nodes[0], "--pod-selector=kubevirt.io=virt-launcher", "--delete-emptydir-data", "--ignore-daemonsets", "--timeout=15s")
	var migA virtv1.VirtualMachineInstanceMigration
	framework.Eventually(t, 60*time.Second, "the tenant's evacuation VMIM, its target pod released and Pending", func() (bool, string) {
		list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(tenant).List(framework.Ctx(t), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("VMIMs %v (%v)", list, err)
		}
		migA = list.Items[0]
		pods := f.TargetPods(t, tenant, &migA)
		return len(pods) == 1 && !framework.HasGate(&pods[0]) && pods[0].Spec.NodeName == "", "target pods " + framework.ToJSON(pods)
	})
	if migA.Annotations[framework.PolicyAnnotation] != policy {
		t.Fatalf("the tenant's evacuation %s is not under policy %s: %v", migA.Name, policy, migA.Annotations)
	}

	// Three extra pods labelled with the evacuation's uid, created by the tenant; Pending
	// forever (no node has their label), each released by the operator with the policy's term.
	for i := 0; i < 3; i++ {
		p := &k8sv1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("extra-%d", i), Namespace: tenant,
				Labels:      map[string]string{"kubevirt.io": "virt-launcher", jobLabel: string(migA.UID)},
				Annotations: map[string]string{"kubevirt.io/migrationJobName": migA.Name},
			},
			Spec: k8sv1.PodSpec{
				Containers:   []k8sv1.Container{{Name: "c", Image: "kmt-e2e/none:0"}},
				NodeSelector: map[string]string{"kmt-e2e/nowhere": "true"},
			},
		}
		framework.Eventually(t, 30*time.Second, "the tenant creates "+p.Name, func() (bool, string) {
			_, err := f.VMOwner.Kube.CoreV1().Pods(tenant).Create(framework.Ctx(t), p, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	framework.Eventually(t, 60*time.Second, "the extra pods released with the policy's term", func() (bool, string) {
		pods := f.TargetPods(t, tenant, &migA)
		released := 0
		for i := range pods {
			if !framework.HasGate(&pods[i]) && framework.RequiredNodeAffinity(&pods[i]) != nil {
				released++
			}
		}
		return len(pods) == 4 && released == 4, "target pods " + framework.ToJSON(pods)
	})

	// The other tenant's node is drained: its evacuation is not held by the extra pods.
	if r := drain(t, nodes[1], "120s"); r.Code != 0 {
		t.Errorf("kubectl drain %s: %s", nodes[1], r)
	}
	vmi := f.WaitVMIRunning(t, other, "vm-b", "")
	if !rackB[vmi.Status.NodeName] {
		t.Errorf("vm-b on %s, want a rack-b node %v", vmi.Status.NodeName, nodes[2:])
	}
	for _, m := range evacuationVMIMs(t, f, other) {
		if c := framework.MigrationCondition(&m, framework.ConditionTermApplied); c == nil || c.Reason != framework.ReasonTermApplied {
			t.Errorf("evacuation %s: %s = %s, want True/%s", m.Name, framework.ConditionTermApplied, framework.ToJSON(c), framework.ReasonTermApplied)
		}
		for _, e := range framework.EventsWithReason(f.OperatorEvents(t, other, m.Name), framework.ReasonInboundLimitReached) {
			t.Errorf("evacuation %s was held by the limit: %s", m.Name, e.Message)
		}
	}
}
