//go:build kubevirt_v1_5

package main

import (
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// KubeVirt v1.5 (the old pair of the e2e matrix): no backup or plugin CRDs yet, and
// virt-controller's RBAC generator takes only the namespace.

var releaseCRDs = []func() (*extv1.CustomResourceDefinition, error){}

func controllerRBAC(namespace string) []runtime.Object {
	return rbac.GetAllController(namespace)
}
