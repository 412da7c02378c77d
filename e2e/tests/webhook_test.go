package tests

// The webhooks' scenarios through the real API server: who may set the added term,
// what an invalid term and an UPDATE get, server-side dry runs, and plain
// migrations passing untouched. (That the admin's target pod is gated is proven
// in operator_test.go, where the controller is held off so the gate stays.)

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
	"k8s.io/client-go/rest"

	virtv1 "kubevirt.io/api/core/v1"
	kubecli "kubevirt.io/client-go/kubevirt"

	"kmt.local/e2e/framework"
)

// permissionDenial is the exact text the API server returns for a user without
// `use` on addednodeselectorterms (webhook/vmim_validator.cc PermissionMessage).
func permissionDenial(user, ns string) string {
	return fmt.Sprintf(`admission webhook %q denied the request: user %q may not set %s: requires "use" on addednodeselectorterms.migration-target.kubevirt.io in namespace %q`,
		framework.VMIMWebhookName, user, framework.FieldPath, ns)
}

// The admin's VMIM with a term is admitted and migrates into the term; the VM
// owner's identical VMIM is denied with the permission message; once a
// RoleBinding grants the VM owner `use` (ClusterRole migration-target-requester)
// in the namespace, the same VMIM is admitted and honoured.
func TestWebhookWhoMaySetTheTerm(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.OwnerNamespace(t)
	source, target := f.Nodes[0], f.Nodes[2]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	term := framework.NodeNameTerm(target)

	_, err := f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
		framework.NewMigration("owner", "vmi", framework.WithTerm(term)), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != permissionDenial(framework.VMOwnerUser, ns) {
		t.Fatalf("vm-owner's VMIM with a term: err = %v,\nwant Forbidden %q", err, permissionDenial(framework.VMOwnerUser, ns))
	}
	if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(framework.Ctx(t), "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("denied VMIM exists: get err = %v", err)
	}

	// The admin's identical request.
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("admin", "vmi", framework.WithTerm(term)))
	f.WaitMigrationPhase(t, ns, "admin", virtv1.MigrationSucceeded, 90*time.Second)
	f.WaitFinalReport(t, ns, "admin", target, 60*time.Second)
	f.WaitVMIRunning(t, ns, "vmi", target)

	// Grant the VM owner `use` in this namespace only.
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-owner-requester"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: framework.RequesterClusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: framework.VMOwnerUser}},
	}
	if _, err := f.Admin.Kube.RbacV1().RoleBindings(ns).Create(framework.Ctx(t), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding: %v", err)
	}
	back := framework.NodeNameTerm(source)
	// RBAC's authorizer reads bindings from an informer: the grant shows up
	// within moments, so retry only while the denial is the permission one.
	framework.Eventually(t, 30*time.Second, "vm-owner admitted after the RoleBinding", func() (bool, string) {
		_, err := f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
			framework.NewMigration("owner-granted", "vmi", framework.WithTerm(back)), metav1.CreateOptions{})
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("vm-owner with `use`: unexpected error %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
	f.WaitMigrationPhase(t, ns, "owner-granted", virtv1.MigrationSucceeded, 90*time.Second)
	f.WaitFinalReport(t, ns, "owner-granted", source, 60*time.Second)
	f.WaitVMIRunning(t, ns, "vmi", source)

	// Revoked: the webhook remembers an allowed answer for at most its
	// --authorization-cache-authorized-ttl (10 s), so the denial is back within
	// that plus RBAC's own propagation.
	if err := f.Admin.Kube.RbacV1().RoleBindings(ns).Delete(framework.Ctx(t), rb.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete RoleBinding: %v", err)
	}
	revoked := time.Now()
	framework.Eventually(t, 30*time.Second, "vm-owner denied again after the RoleBinding went", func() (bool, string) {
		_, err := f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
			framework.NewMigration("owner-revoked", "vmi", framework.WithTerm(term)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("vm-owner after the revocation: unexpected error %v", err)
		}
		return err != nil && err.Error() == permissionDenial(framework.VMOwnerUser, ns), fmt.Sprint(err)
	})
	if took := time.Since(revoked); took > 20*time.Second {
		t.Errorf("the revocation took %s to show, want within the 10 s cache TTL (+ RBAC propagation)", took.Round(time.Millisecond))
	} else {
		t.Logf("the revocation showed after %s", took.Round(time.Millisecond))
	}

	// The grant is per namespace: in another namespace the VM owner is still denied.
	other := f.OwnerNamespace(t)
	f.StartVMI(t, f.Admin, other, framework.NewVMI("vmi", ""), "")
	_, err = f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(other).Create(framework.Ctx(t),
		framework.NewMigration("owner", "vmi", framework.WithTerm(term)), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != permissionDenial(framework.VMOwnerUser, other) {
		t.Fatalf("vm-owner in a namespace without the grant: err = %v, want %q", err, permissionDenial(framework.VMOwnerUser, other))
	}
}

// Invalid terms are denied (422) with the field path of every cause; the
// API server forwards the webhook's message.
func TestWebhookInvalidTermDenied(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	// A VMI virt-api admits migrations of: otherwise both webhooks deny, and which
	// denial the API server reports is a race.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")
	cases := []struct {
		name, term string
		want       []string // substrings of the API server's error
	}{
		{"matchFields key", `{"matchFields":[{"key":"metadata.labels","operator":"In","values":["x"]}]}`,
			[]string{framework.FieldPath + `.matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key`}},
		{"malformed JSON", `{"matchExpressions":`, []string{framework.FieldPath}},
		{"empty term", `{}`, []string{framework.FieldPath}},
		{"unknown member", `{"matchLabels":{"a":"b"}}`, []string{framework.FieldPath, "matchLabels"}},
		{"In without values", `{"matchExpressions":[{"key":"zone","operator":"In","values":[]}]}`,
			[]string{framework.FieldPath + ".matchExpressions[0].values"}},
		{"Gt with two values", `{"matchExpressions":[{"key":"n","operator":"Gt","values":["1","2"]}]}`,
			[]string{framework.FieldPath + ".matchExpressions[0].values"}},
		{"matchFields two values", `{"matchFields":[{"key":"metadata.name","operator":"In","values":["a","b"]}]}`,
			[]string{framework.FieldPath + ".matchFields[0].values"}},
	}
	for i, tc := range cases {
		_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
			framework.NewMigration(fmt.Sprintf("bad-%d", i), "vmi", framework.WithTerm(tc.term)), metav1.CreateOptions{})
		if err == nil {
			t.Errorf("%s: %s admitted, want denied", tc.name, tc.term)
			continue
		}
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: err = %v (reason %s), want Invalid (422)", tc.name, err, apierrors.ReasonForError(err))
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("admission webhook %q denied the request", framework.VMIMWebhookName)) {
			t.Errorf("%s: error %q not from the webhook", tc.name, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, msg, w)
			}
		}
	}
	list, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(framework.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d denied VMIMs exist", len(list.Items))
	}
}

// After creation the annotation can be neither changed, removed, nor added,
// not even by the admin.
func TestWebhookUpdateOfTermDenied(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	// virt-controller deletes VMIMs of absent VMIs, so run a VMI that cannot
	// migrate (its own affinity allows only its node): the VMIMs stay.
	source := f.Nodes[1]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", "", framework.WithRequiredNodeAffinity(framework.HostnameTerm(source))), source)
	// virt-api admits one migration in flight per VMI: the second VMIM needs a VMI of its own.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi2", "", framework.WithRequiredNodeAffinity(framework.HostnameTerm(source))), source)
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("with", "vmi", framework.WithTerm(framework.NodeNameTerm(f.Nodes[2]))))
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("without", "vmi2"))

	patch := func(name, p string) error {
		_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Patch(framework.Ctx(t), name,
			types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	anno := framework.AddedTermAnnotation
	cases := []struct{ what, name, patch string }{
		{"changed", "with", fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, anno, framework.NodeNameTerm(f.Nodes[0]))},
		{"removed", "with", fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, anno)},
		{"added", "without", fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, anno, framework.NodeNameTerm(f.Nodes[2]))},
	}
	for _, tc := range cases {
		err := patch(tc.name, tc.patch)
		want := fmt.Sprintf("%s: Forbidden: may not be %s after the VirtualMachineInstanceMigration is created; create a new migration instead", framework.FieldPath, tc.what)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("annotation %s: err = %v, want Invalid containing %q", tc.what, err, want)
		}
	}
	if got := f.GetMigration(t, ns, "with").Annotations[anno]; got != framework.NodeNameTerm(f.Nodes[2]) {
		t.Errorf("annotation after denied updates = %q", got)
	}
	// Other metadata may still change.
	if err := patch("with", `{"metadata":{"labels":{"team":"a"}}}`); err != nil {
		t.Errorf("label update denied: %v", err)
	}
}

// `kubectl apply --dry-run=server` gives the same answers: denied for the VM
// owner with the permission message, admitted for the admin, nothing created.
func TestWebhookServerDryRun(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.OwnerNamespace(t)
	manifest := fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: dry
  namespace: %s
  annotations:
    %s: '%s'
spec:
  vmiName: vmi
`, ns, framework.AddedTermAnnotation, framework.NodeNameTerm(f.Nodes[2]))
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")

	r := framework.KubectlAs(t, framework.VMOwnerUser, manifest, "apply", "--dry-run=server", "-f", "-")
	if r.Code == 0 || !strings.Contains(r.Stderr, permissionDenial(framework.VMOwnerUser, ns)) {
		t.Errorf("vm-owner dry run: %s\nwant a failure carrying %q", r, permissionDenial(framework.VMOwnerUser, ns))
	}
	r = framework.KubectlAs(t, framework.AdminUser, manifest, "apply", "--dry-run=server", "-f", "-")
	if r.Code != 0 || !strings.Contains(r.Stdout, "virtualmachineinstancemigration.kubevirt.io/dry created (server dry run)") {
		t.Errorf("admin dry run: %s", r)
	}
	bad := strings.Replace(manifest, `metadata.name`, `metadata.uid`, 1)
	r = framework.KubectlAs(t, framework.AdminUser, bad, "apply", "--dry-run=server", "-f", "-")
	if r.Code == 0 || !strings.Contains(r.Stderr, framework.FieldPath+".matchFields[0].key") {
		t.Errorf("admin dry run of an invalid term: %s", r)
	}
	if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(framework.Ctx(t), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry run created the VMIM: get err = %v", err)
	}
}

// KubeVirt's own spec.addedNodeSelector needs the same permission (flag on by
// default); the admitted requests carry the webhook's placement warnings.
func TestWebhookAddedNodeSelectorAndWarnings(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.OwnerNamespace(t)
	source := f.Nodes[1]
	// Pinned to its node. The creates below are server-side dry runs (the webhooks run,
	// nothing is stored): virt-api admits one migration in flight per VMI.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", "", framework.WithRequiredNodeAffinity(framework.HostnameTerm(source))), source)

	t.Run("AddedNodeSelector", func(t *testing.T) {
		f.RequireMigrationAddedNodeSelector(t)
		_, err := f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
			framework.NewMigration("sel", "vmi", framework.WithAddedNodeSelector(map[string]string{k8sv1.LabelHostname: f.Nodes[2]})), metav1.CreateOptions{})
		want := fmt.Sprintf(`admission webhook %q denied the request: user %q may not set spec.addedNodeSelector: requires "use" on addednodeselectorterms.migration-target.kubevirt.io in namespace %q`,
			framework.VMIMWebhookName, framework.VMOwnerUser, ns)
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("vm-owner's spec.addedNodeSelector: err = %v, want Forbidden %q", err, want)
		}
	})

	w := &warnings{}
	cfg := rest.CopyConfig(f.Admin.Config)
	cfg.WarningHandler = w
	virt, err := kubecli.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, term, warning string }{
		{"nowhere", framework.NodeNameTerm("no-such-node"),
			"no node matches the added node selector term now; the target pod will stay Pending until one does"},
		{"source", framework.NodeNameTerm(source),
			fmt.Sprintf(`the added node selector term matches only node %q, where VMI "vmi" runs now; the migration cannot be scheduled`, source)},
		{"fine", framework.NodeNameTerm(f.Nodes[2]), ""},
	}
	for _, tc := range cases {
		w.msgs = nil
		if _, err := virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
			framework.NewMigration(tc.name, "vmi", framework.WithTerm(tc.term)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s: admin create: %v", tc.name, err)
			continue
		}
		switch {
		case tc.warning == "" && len(w.msgs) != 0:
			t.Errorf("%s: warnings %q, want none", tc.name, w.msgs)
		case tc.warning != "" && (len(w.msgs) != 1 || w.msgs[0] != tc.warning):
			t.Errorf("%s: warnings %q, want [%q]", tc.name, w.msgs, tc.warning)
		}
	}
}
