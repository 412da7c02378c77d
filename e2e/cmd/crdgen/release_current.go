//go:build !kubevirt_v1_5

package main

import (
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// What KubeVirt's generators differ in between the releases the e2e matrix runs
// (hack/versions.env): this file is the default release's (v1.9); release_v1_5.go,
// built with -tags kubevirt_v1_5, the old pair's.

// releaseCRDs are the CRDs of this release beyond those every release in the matrix has.
var releaseCRDs = []func() (*extv1.CustomResourceDefinition, error){
	components.NewVirtualMachineBackupCrd, components.NewVirtualMachineBackupTrackerCrd, components.NewPluginCrd,
}

// controllerRBAC is virt-controller's ServiceAccount, roles and bindings (no virt-template
// permissions: the e2e KubeVirt CR does not deploy it).
func controllerRBAC(namespace string) []runtime.Object {
	return rbac.GetAllController(namespace, false)
}
