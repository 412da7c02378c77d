package framework

import (
	"os"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What the cluster's KubeVirt and Kubernetes have, read from the cluster itself, for the
// few scenarios of the compatibility matrix (e2e/matrix.sh, hack/versions.env) that need
// an API a pair lacks. Such a scenario calls SkipWithout, which names the reason.

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// MigrationSpecHas reports whether the served VirtualMachineInstanceMigration v1 schema
// (the CRD KubeVirt's generator made for this pair) has spec.<field>.
func (f *Framework) MigrationSpecHas(t testing.TB, field string) bool {
	t.Helper()
	crd, err := f.Admin.Dynamic.Resource(crdResource).Get(Ctx(t), "virtualmachineinstancemigrations.kubevirt.io", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the VirtualMachineInstanceMigration CRD: %v", err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok || vm["name"] != "v1" {
			continue
		}
		_, found, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema", "properties", "spec", "properties", field)
		return found
	}
	t.Fatalf("the VirtualMachineInstanceMigration CRD serves no v1")
	return false
}

// KubeVirtVersion is the KubeVirt release the cluster runs (e2e/cluster.sh env).
func KubeVirtVersion() string { return os.Getenv("KMT_E2E_KUBEVIRT_VERSION") }

// KubeVirtAtLeast reports whether the cluster's KubeVirt is release major.minor or newer,
// for what a cluster cannot be asked (an annotation virt-api writes, not a schema field).
func KubeVirtAtLeast(t testing.TB, major, minor int) bool {
	t.Helper()
	v := strings.TrimPrefix(KubeVirtVersion(), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("KMT_E2E_KUBEVIRT_VERSION %q is not vMAJOR.MINOR.PATCH (e2e/cluster.sh env sets it)", KubeVirtVersion())
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("KMT_E2E_KUBEVIRT_VERSION %q is not vMAJOR.MINOR.PATCH", KubeVirtVersion())
	}
	return ma > major || (ma == major && mi >= minor)
}

// RequireEvictionSource skips a scenario that tells the descheduler's evictions from other
// evacuations where virt-api does not mark them (kubevirt.io/eviction-source, v1.7+).
func RequireEvictionSource(t testing.TB) {
	t.Helper()
	SkipWithout(t, KubeVirtAtLeast(t, 1, 7),
		"KubeVirt "+KubeVirtVersion()+"'s virt-api does not mark the descheduler's evictions with kubevirt.io/eviction-source (added in v1.7), so origin Descheduler cannot be told from Evacuation")
}

// SkipWithout skips the test when ok is false, with "<test> skipped: <reason>", the form
// e2e/matrix.sh copies into e2e/COMPATIBILITY.md.
func SkipWithout(t testing.TB, ok bool, reason string) {
	t.Helper()
	if !ok {
		t.Skipf("%s skipped: %s", t.Name(), reason)
	}
}

// RequireMigrationAddedNodeSelector skips a scenario that sets KubeVirt's own
// spec.addedNodeSelector on a VirtualMachineInstanceMigration where this KubeVirt has
// none (before v1.6); without it the field would be pruned and the scenario test nothing.
func (f *Framework) RequireMigrationAddedNodeSelector(t testing.TB) {
	t.Helper()
	SkipWithout(t, f.MigrationSpecHas(t, "addedNodeSelector"),
		"KubeVirt "+KubeVirtVersion()+" has no spec.addedNodeSelector on VirtualMachineInstanceMigrations (added in v1.6)")
}
