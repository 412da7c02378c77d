// Package api holds the names of the template.kubevirt.io API group, as far as
// KubeVirt's virt-controller refers to them. Stand-in; see e2e/third_party/README.md.
package api

const (
	GroupName            = "template.kubevirt.io"
	SingularResourceName = "virtualmachinetemplate"
	PluralResourceName   = SingularResourceName + "s"
)
