// Package v1beta1 is a stand-in for the VirtualMachineTemplate types, limited to
// the fields KubeVirt's VM export controller reads. See e2e/third_party/README.md.
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	templateapi "kubevirt.io/virt-template-api/core"
)

// ConditionReady is the condition type a usable template carries.
const ConditionReady = "Ready"

// SchemeGroupVersion is the group version of these types.
var SchemeGroupVersion = schema.GroupVersion{Group: templateapi.GroupName, Version: "v1beta1"}

// AddToScheme registers the types with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &VirtualMachineTemplate{}, &VirtualMachineTemplateList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// Parameter is one substitutable template parameter.
type Parameter struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// VirtualMachineTemplateSpec holds the embedded VM and its parameters.
type VirtualMachineTemplateSpec struct {
	VirtualMachine *runtime.RawExtension `json:"virtualMachine"`
	Parameters     []Parameter           `json:"parameters,omitempty"`
}

// VirtualMachineTemplateStatus holds the template's conditions.
type VirtualMachineTemplateStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VirtualMachineTemplate is a namespaced VM template.
type VirtualMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualMachineTemplateSpec   `json:"spec"`
	Status            VirtualMachineTemplateStatus `json:"status,omitempty"`
}

// VirtualMachineTemplateList is a list of templates.
type VirtualMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineTemplate `json:"items"`
}

// DeepCopy returns a deep copy of t.
func (t *VirtualMachineTemplate) DeepCopy() *VirtualMachineTemplate {
	if t == nil {
		return nil
	}
	out := &VirtualMachineTemplate{TypeMeta: t.TypeMeta}
	t.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if t.Spec.VirtualMachine != nil {
		out.Spec.VirtualMachine = t.Spec.VirtualMachine.DeepCopy()
	}
	out.Spec.Parameters = append([]Parameter(nil), t.Spec.Parameters...)
	for i := range t.Status.Conditions {
		c := metav1.Condition{}
		t.Status.Conditions[i].DeepCopyInto(&c)
		out.Status.Conditions = append(out.Status.Conditions, c)
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (t *VirtualMachineTemplate) DeepCopyObject() runtime.Object { return t.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *VirtualMachineTemplateList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &VirtualMachineTemplateList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopy())
	}
	return out
}
