// Package virttemplate is a stand-in for the template.kubevirt.io clientset,
// limited to what KubeVirt's virt-controller calls. See e2e/third_party/README.md.
package virttemplate

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"kubevirt.io/virt-template-api/core/v1beta1"
)

// TemplateV1beta1Client reaches the template.kubevirt.io/v1beta1 API.
type TemplateV1beta1Client struct{ client rest.Interface }

// RESTClient returns the REST client of the group version.
func (c *TemplateV1beta1Client) RESTClient() rest.Interface { return c.client }

// Clientset bundles the group clients.
type Clientset struct{ v1beta1 *TemplateV1beta1Client }

// TemplateV1beta1 returns the v1beta1 client.
func (c *Clientset) TemplateV1beta1() *TemplateV1beta1Client { return c.v1beta1 }

// NewForConfig builds a clientset from a REST config.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	config := *c
	gv := v1beta1.SchemeGroupVersion
	config.GroupVersion = &gv
	config.APIPath = "/apis"
	config.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(&config)
	if err != nil {
		return nil, err
	}
	return &Clientset{v1beta1: &TemplateV1beta1Client{client: client}}, nil
}
