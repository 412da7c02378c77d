package tests

// The install's scenarios: the default install applies cleanly (server-side dry
// run, through every admission plugin of the e2e API server), the operator's
// ServiceAccount can do what the binary needs and nothing more of what an
// attacker would want (e2e/operator.sh installed exactly manifests/default's RBAC
// objects), and the rendered NetworkPolicy and metrics objects fit the Deployment.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	k8sv1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"kmt.local/e2e/framework"
)

func TestManifestsDefaultApplyServerDryRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(framework.RepoRoot(t), "manifests", "default")
	r := framework.KubectlAs(t, framework.AdminUser, "", "apply", "-k", dir, "--dry-run=server")
	if r.Code != 0 {
		t.Fatalf("kubectl apply -k manifests/default --dry-run=server: %s", r)
	}
	for _, want := range []string{
		"namespace/kubevirt-migration-target",
		"serviceaccount/migration-target-operator",
		"clusterrole.rbac.authorization.k8s.io/migration-target-operator",
		"clusterrole.rbac.authorization.k8s.io/migration-target-requester",
		"deployment.apps/migration-target-operator",
		"poddisruptionbudget.policy/",
		"service/migration-target-webhook",
		"service/migration-target-metrics",
		"clusterrole.rbac.authorization.k8s.io/migration-target-metrics-reader",
		"networkpolicy.networking.k8s.io/migration-target-operator",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/migration-target",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/migration-target",
		"clusterrole.rbac.authorization.k8s.io/migration-target-gate-releaser",
		"clusterrolebinding.rbac.authorization.k8s.io/migration-target-gate-releaser",
		"validatingadmissionpolicy.admissionregistration.k8s.io/migration-target-scheduling-gate",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/migration-target-scheduling-gate",
		"validatingadmissionpolicy.admissionregistration.k8s.io/migration-target-operator-writes",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/migration-target-operator-writes",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Count(r.Stdout, "(server dry run)") != strings.Count(strings.TrimSpace(r.Stdout), "\n")+1 {
		t.Errorf("not every line is a server dry run:\n%s", r.Stdout)
	}
}

func TestManifestsOperatorServiceAccountLeastPrivilege(t *testing.T) {
	t.Parallel()
	ns := framework.OperatorNamespace
	cases := []struct {
		want bool
		args []string
	}{
		{true, []string{"patch", "pods", "-A"}},
		{true, []string{"delete", "pods", "-A"}},
		{true, []string{"watch", "pods", "-A"}},
		{true, []string{"list", "nodes"}},
		{true, []string{"watch", "virtualmachineinstancemigrations.kubevirt.io", "-A"}},
		{true, []string{"patch", "virtualmachineinstancemigrations.kubevirt.io", "--subresource=status", "-A"}},
		{true, []string{"get", "virtualmachineinstances.kubevirt.io", "-A"}},
		{true, []string{"create", "subjectaccessreviews.authorization.k8s.io"}},
		{true, []string{"create", "tokenreviews.authentication.k8s.io"}},
		{true, []string{"create", "events", "-A"}},
		{true, []string{"update", "leases.coordination.k8s.io", "-n", ns}},
		{true, []string{"get", "persistentvolumeclaims", "-A"}},
		{true, []string{"get", "persistentvolumes"}},
		{true, []string{"get", "storageclasses.storage.k8s.io"}},

		{false, []string{"update", "virtualmachineinstances.kubevirt.io", "-A"}},
		{false, []string{"patch", "virtualmachineinstances.kubevirt.io", "-A"}},
		{false, []string{"update", "virtualmachines.kubevirt.io", "-A"}},
		{false, []string{"patch", "virtualmachineinstancemigrations.kubevirt.io", "-A"}},
		{false, []string{"update", "pods", "-A"}},
		{false, []string{"create", "pods", "-A"}},
		{false, []string{"patch", "nodes"}},
		{false, []string{"list", "persistentvolumeclaims", "-A"}},
		{false, []string{"watch", "persistentvolumes"}},
		{false, []string{"get", "secrets", "-n", "kube-system"}},
		{false, []string{"list", "secrets", "-A"}},
		{false, []string{"get", "secrets/some-other-secret", "-n", ns}},
		{false, []string{"update", "leases.coordination.k8s.io", "-n", "kube-system"}},
		{false, []string{"create", "clusterrolebindings.rbac.authorization.k8s.io"}},
	}
	for _, tc := range cases {
		args := append([]string{"auth", "can-i", "--as=" + framework.OperatorServiceAccount}, tc.args...)
		r := framework.KubectlAs(t, framework.AdminUser, "", args...)
		got := strings.TrimSpace(r.Stdout)
		want, code := "no", 1
		if tc.want {
			want, code = "yes", 0
		}
		if got != want || r.Code != code {
			t.Errorf("kubectl %s: %s\nwant %q (exit %d)", strings.Join(args, " "), r, want, code)
		}
	}
}

// rendered is manifests/default as `kubectl kustomize` renders it, one object per kind/name.
func rendered(t *testing.T) map[string][]byte {
	t.Helper()
	return renderedDir(t, filepath.Join(framework.RepoRoot(t), "manifests", "default"))
}

// renderedDir is the kustomization in dir as `kubectl kustomize` renders it.
func renderedDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	r := framework.KubectlAs(t, framework.AdminUser, "", "kustomize", dir)
	if r.Code != 0 {
		t.Fatalf("kubectl kustomize %s: %s", dir, r)
	}
	out := map[string][]byte{}
	for _, doc := range strings.Split(r.Stdout, "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered manifest: %v\n%s", err, doc)
		}
		if meta.Kind != "" {
			out[meta.Kind+"/"+meta.Metadata.Name] = []byte(doc)
		}
	}
	return out
}

func decode[T any](t *testing.T, objs map[string][]byte, key string) *T {
	t.Helper()
	doc, ok := objs[key]
	if !ok {
		t.Fatalf("manifests/default renders no %s", key)
	}
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return &v
}

// The NetworkPolicy selects the operator's pods and opens exactly their three ports: the
// webhook and probe ports to every source (the API server's source varies, docs/operating.md "Network
// policy"), the metrics port only to namespaces labelled metrics=enabled; and the metrics
// Service and reader role fit the Deployment.
func TestManifestsNetworkPolicyAndMetricsObjects(t *testing.T) {
	t.Parallel()
	objs := rendered(t)
	dep := decode[appsv1.Deployment](t, objs, "Deployment/migration-target-operator")
	np := decode[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy/migration-target-operator")
	podLabels := labels.Set(dep.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || !sel.Matches(podLabels) {
		t.Errorf("the NetworkPolicy's podSelector %v does not select the operator's pods %v (%v)", np.Spec.PodSelector, podLabels, err)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes %v, want [Ingress]", np.Spec.PolicyTypes)
	}
	ports := map[string]int32{}
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	opened := map[string]networkingv1.NetworkPolicyIngressRule{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil || p.Port.StrVal == "" {
				t.Errorf("the NetworkPolicy opens a port by number, not by the container port's name: %v", p.Port)
				continue
			}
			if _, ok := ports[p.Port.StrVal]; !ok {
				t.Errorf("the NetworkPolicy opens %q, which the operator's container does not name (%v)", p.Port.StrVal, ports)
			}
			if p.Protocol == nil || *p.Protocol != k8sv1.ProtocolTCP {
				t.Errorf("port %s: protocol %v, want TCP", p.Port.StrVal, p.Protocol)
			}
			opened[p.Port.StrVal] = rule
		}
	}
	if len(opened) != len(ports) {
		t.Errorf("the NetworkPolicy opens %d ports, the container has %d (%v)", len(opened), len(ports), ports)
	}
	for _, name := range []string{"webhook", "probes"} {
		// Every source: the API server's (and the kubelet's) address cannot be named portably,
		// and a policy that drops the API server blocks every migration (fail-closed webhooks).
		if rule := opened[name]; len(rule.From) != 0 {
			t.Errorf("port %s admits only %v; it must admit every source (docs/operating.md, \"Network policy\")", name, rule.From)
		}
	}
	metricsRule := opened["metrics"]
	if len(metricsRule.From) != 1 || metricsRule.From[0].NamespaceSelector == nil ||
		metricsRule.From[0].NamespaceSelector.MatchLabels["metrics"] != "enabled" || metricsRule.From[0].IPBlock != nil {
		t.Errorf("the metrics port admits %v; want only namespaces labelled metrics=enabled", metricsRule.From)
	}

	svc := decode[k8sv1.Service](t, objs, "Service/migration-target-metrics")
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("the metrics Service selects %v, not the operator's pods %v", svc.Spec.Selector, podLabels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" || ports["metrics"] != 8443 {
		t.Errorf("the metrics Service's port %v should target the container port metrics (8443, got %d)", svc.Spec.Ports, ports["metrics"])
	}
	var bind string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
			bind = v
		}
		if strings.HasPrefix(a, "--metrics-secure=false") {
			t.Errorf("the Deployment serves plain-HTTP metrics (%s)", a)
		}
	}
	if bind != ":8443" {
		t.Errorf("--metrics-bind-address=%q, want :8443", bind)
	}
	reader := decode[rbacv1.ClusterRole](t, objs, "ClusterRole/migration-target-metrics-reader")
	if len(reader.Rules) != 1 || strings.Join(reader.Rules[0].NonResourceURLs, ",") != "/metrics" ||
		strings.Join(reader.Rules[0].Verbs, ",") != "get" || len(reader.Rules[0].Resources) != 0 {
		t.Errorf("the metrics-reader role grants %v; want exactly get on /metrics", reader.Rules)
	}
}

// The admission policies (issue 45): fail closed, bound with Deny; the gate's on pod UPDATE
// (and pods/status, which may change labels), the operator's writes on pod UPDATE and DELETE; the operator named by a ServiceAccount name and a
// permission only the releaser ClusterRoleBinding grants, so that no policy names the
// operator's namespace: an overlay that moves the operator moves the binding's subject and
// the policies stay right.
func TestManifestsAdmissionPolicies(t *testing.T) {
	t.Parallel()
	objs := rendered(t)
	policies := map[string][]string{
		"migration-target-scheduling-gate": {"pods UPDATE", "pods/status UPDATE"},
		"migration-target-operator-writes": {"pods UPDATE", "pods DELETE", "pods/* UPDATE", "pods/* DELETE"},
	}
	for name, want := range policies {
		p := decode[admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy/"+name)
		b := decode[admissionv1.ValidatingAdmissionPolicyBinding](t, objs, "ValidatingAdmissionPolicyBinding/"+name)
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionv1.Fail {
			t.Errorf("%s: failurePolicy %v, want Fail", name, p.Spec.FailurePolicy)
		}
		if b.Spec.PolicyName != name || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionv1.Deny ||
			b.Spec.ParamRef != nil || b.Spec.MatchResources != nil {
			t.Errorf("binding %s: %s; want policyName %s, validationActions [Deny], every request the policy matches", name, framework.ToJSON(b.Spec), name)
		}
		if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
			t.Fatalf("%s: no matchConstraints", name)
		}
		covers := map[string]bool{}
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			if strings.Join(r.APIGroups, ",") != "" || strings.Join(r.APIVersions, ",") != "v1" {
				t.Errorf("%s: rule %s is not core/v1", name, framework.ToJSON(r))
			}
			for _, res := range r.Resources {
				for _, op := range r.Operations {
					covers[res+" "+string(op)] = true
				}
			}
		}
		for _, w := range want {
			if !covers[w] {
				t.Errorf("%s covers %v; want %v", name, covers, want)
			}
		}
		// (The project shares its name with the namespace, so messages may say it.)
		text := specOf(t, objs["ValidatingAdmissionPolicy/"+name])
		for _, literal := range []string{"serviceaccount:" + framework.OperatorNamespace, "'" + framework.OperatorNamespace + "'"} {
			if strings.Contains(text, literal) {
				t.Errorf("%s names the operator's namespace (%s); an overlay that changes it would break the policy", name, literal)
			}
		}
		if !strings.Contains(text, "authorizer.group('migration-target.kubevirt.io').resource('schedulinggates')") {
			t.Errorf("%s does not ask the authorizer for the releaser permission", name)
		}
	}
	role := decode[rbacv1.ClusterRole](t, objs, "ClusterRole/migration-target-gate-releaser")
	if len(role.Rules) != 1 || framework.ToJSON(role.Rules[0]) != framework.ToJSON(rbacv1.PolicyRule{
		APIGroups: []string{"migration-target.kubevirt.io"}, Resources: []string{"schedulinggates"},
		ResourceNames: []string{"added-node-selector-term"}, Verbs: []string{"release"}}) {
		t.Errorf("the releaser role grants %s", framework.ToJSON(role.Rules))
	}

	// An overlay in another namespace: the releaser binding follows the operator there.
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(framework.RepoRoot(t), "manifests", "default"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := "namespace: kmt-e2e-elsewhere\nresources:\n  - " + rel + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	moved := renderedDir(t, dir)
	for _, key := range []string{"ClusterRoleBinding/migration-target-gate-releaser", "ClusterRoleBinding/migration-target-operator"} {
		crb := decode[rbacv1.ClusterRoleBinding](t, moved, key)
		if len(crb.Subjects) != 1 || crb.Subjects[0].Kind != rbacv1.ServiceAccountKind ||
			crb.Subjects[0].Name != "migration-target-operator" || crb.Subjects[0].Namespace != "kmt-e2e-elsewhere" {
			t.Errorf("overlay in kmt-e2e-elsewhere: %s subjects %s", key, framework.ToJSON(crb.Subjects))
		}
	}
	for _, key := range []string{"ValidatingAdmissionPolicy/migration-target-scheduling-gate", "ValidatingAdmissionPolicy/migration-target-operator-writes"} {
		if specOf(t, moved[key]) != specOf(t, objs[key]) {
			t.Errorf("the overlay in another namespace changed the spec of %s", key)
		}
	}
}

// specOf is the text of a rendered object from its spec on (kustomize adds a namespace to the
// metadata of kinds it does not know as cluster-scoped; the API server drops it).
func specOf(t *testing.T, doc []byte) string {
	t.Helper()
	i := strings.Index(string(doc), "\nspec:")
	if i < 0 {
		t.Fatalf("no spec in %s", doc)
	}
	return string(doc[i:])
}
