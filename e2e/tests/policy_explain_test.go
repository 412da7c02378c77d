package tests

// `kubectl migrate policy explain NODE` against the real cluster: before a drain, the
// plugin names the MigrationTargetPolicy the operator's webhook will attach to each VM's
// evacuation and where each VM may then go; the drain then sends them there.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"kmt.local/e2e/framework"
)

// explainBlocks splits the text output of `policy explain` into its per-VMI blocks, keyed
// by "namespace/name" (the header line and the drain's summary block are left out).
func explainBlocks(t *testing.T, out string) map[string]string {
	t.Helper()
	blocks := map[string]string{}
	parts := strings.Split(strings.TrimRight(out, "\n"), "\n\n")
	for _, b := range parts[1:] {
		if strings.HasPrefix(b, "Drain of ") {
			continue
		}
		key, _, ok := strings.Cut(b, ": ")
		if !ok {
			t.Fatalf("policy explain block without a VMI: %q\n%s", b, out)
		}
		blocks[key] = b
	}
	return blocks
}

// A rack-a node holding two VMs, a policy "rack a → rack b" that leaves out tier=db: the
// plugin says the web VM goes by the policy to the rack-b nodes only (the rack-c node is out
// because the term does not match) and the db VM has no policy (rack b and c both allowed);
// -o json says the same; --origin Descheduler finds no policy for either (this one is for
// drains); kubectl's completion offers the subcommand, the node and --origin's
// choices; after `kubectl drain`, each VM runs where the plugin said it could.
func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	pool := "kmt-pex-" + framework.RandomSuffix()
	nodes := poolWithRacks(t, f, pool, 85, "a", "b", "b", "c")
	src, b1, b2, c3 := nodes[0], nodes[1], nodes[2], nodes[3]
	policy := pool + "-rack-a-to-b"
	if err := createPolicy(t, f, f.Admin, policy, fmt.Sprintf(`{
		"match": {"origin": "Evacuation",
		          "sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q, "rack": "a"}},
		          "vmiSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
		"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}}`, pool)); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	for _, vm := range []struct{ name, tier string }{{"vm-web", "web"}, {"vm-db", "db"}} {
		vmi := framework.NewVMI(vm.name, src, inPool(pool), framework.LiveMigrateOnEviction)
		vmi.Labels = map[string]string{"tier": vm.tier}
		f.StartVMI(t, f.Admin, ns, vmi, src)
	}

	r := framework.Plugin(t, framework.AdminUser, time.Minute, "policy", "explain", src)
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("policy explain %s: %s", src, r)
	}
	if !strings.HasPrefix(r.Stdout, "Node "+src+", origin Evacuation: 2 VMIs, ") {
		t.Errorf("policy explain header: want node %s, origin Evacuation, 2 VMIs:\n%s", src, r.Stdout)
	}
	t.Logf("kubectl migrate policy explain %s:\n%s", src, r.Stdout)
	blocks := explainBlocks(t, r.Stdout)
	row := func(node, verdict string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(node) + ` {3,}` + regexp.QuoteMeta(verdict) + `$`)
	}
	web, db := blocks[ns+"/vm-web"], blocks[ns+"/vm-db"]
	for _, c := range []struct {
		block, want string
		re          *regexp.Regexp
	}{
		{web, "the policy and its term", regexp.MustCompile(`^` + regexp.QuoteMeta(ns+"/vm-web: policy "+policy+" (rack In [b])") + "\n")},
		{web, b1 + " fits", row(b1, "fits")},
		{web, b2 + " fits", row(b2, "fits")},
		{web, c3 + " out: the term does not match", row(c3, "term of policy "+policy+" does not match (`rack In [b]`)")},
		{web, "summary: the two rack-b nodes", regexp.MustCompile(`(?m)^  2 of \d+ nodes allowed: ` + regexp.QuoteMeta(b1+", "+b2) + `$`)},
		{db, "no policy", regexp.MustCompile(`^` + regexp.QuoteMeta(ns+"/vm-db: no policy: the scheduler alone decides") + "\n")},
		{db, c3 + " fits without a policy", row(c3, "fits")},
		{db, "summary: rack b and c", regexp.MustCompile(`(?m)^  3 of \d+ nodes allowed: ` + regexp.QuoteMeta(b1+", "+b2+", "+c3) + `$`)},
	} {
		if !c.re.MatchString(c.block) {
			t.Errorf("policy explain: want %s (%s) in\n%s", c.want, c.re, c.block)
		}
	}
	if strings.Contains(r.Stdout, "\n  "+src+" ") {
		t.Errorf("policy explain lists the node being left (%s) as a candidate:\n%s", src, r.Stdout)
	}
	// The drain plan: both VMs can leave (exit 0 above), as the drain below shows.
	if !strings.Contains(r.Stdout, "\nDrain of "+src+": 2 of 2 VMs can leave; 0 would stay; 0 shut down\n") {
		t.Errorf("policy explain: want the drain summary \"2 of 2 VMs can leave\":\n%s", r.Stdout)
	}

	r = framework.Plugin(t, framework.AdminUser, time.Minute, "policy", "explain", src, "-n", ns, "-o", "json")
	var doc struct {
		Node string `json:"node"`
		VMIs []struct {
			Name   string `json:"name"`
			Policy *struct {
				Name string `json:"name"`
			} `json:"policy"`
			AllowedNodes []string `json:"allowedNodes"`
		} `json:"vmis"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || r.Code != 0 {
		t.Fatalf("policy explain -o json: %v\n%s", err, r)
	}
	allowed := map[string][]string{}
	for _, v := range doc.VMIs {
		allowed[v.Name] = v.AllowedNodes
		if got := v.Policy != nil && v.Policy.Name == policy; got != (v.Name == "vm-web") {
			t.Errorf("policy explain -o json: VMI %s policy %+v", v.Name, v.Policy)
		}
	}
	if doc.Node != src || fmt.Sprint(allowed["vm-web"]) != fmt.Sprint([]string{b1, b2}) ||
		fmt.Sprint(allowed["vm-db"]) != fmt.Sprint([]string{b1, b2, c3}) {
		t.Errorf("policy explain -o json: node %q allowed %v, want %s with vm-web [%s %s], vm-db [%s %s %s]", doc.Node, allowed, src, b1, b2, b1, b2, c3)
	}

	// The policy is for drains (origin Evacuation): the descheduler's eviction gets none.
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "policy", "explain", src, "--origin", "Descheduler", "-n", ns)
	if r.Code != 0 {
		t.Fatalf("policy explain %s --origin Descheduler: %s", src, r)
	}
	desched := explainBlocks(t, r.Stdout)
	if len(desched) != 2 {
		t.Errorf("policy explain --origin Descheduler: %d VMIs, want 2:\n%s", len(desched), r.Stdout)
	}
	for vm, b := range desched {
		if !strings.HasPrefix(b, vm+": no policy: the scheduler alone decides\n") {
			t.Errorf("policy explain --origin Descheduler: %s gets a policy meant for drains:\n%s", vm, b)
		}
	}
	if !strings.HasPrefix(r.Stdout, "Node "+src+", origin Descheduler: 2 VMIs, ") {
		t.Errorf("policy explain --origin Descheduler header:\n%s", r.Stdout)
	}

	// kubectl's completion reaches the plugin's: the subcommand, the node, --origin's choices.
	path := completionPath(t)
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{"policy", ""}, []string{"explain"}},
		{[]string{"policy", "explain", pool + "-a"}, []string{src}},
		{[]string{"policy", "explain", src, "--origin", ""}, []string{"Evacuation", "Descheduler"}},
		{[]string{"policy", "explain", src, "-o", ""}, []string{"json", "text", "yaml"}},
	} {
		if got, dir := kubectlComplete(t, path, "__completeNoDesc", c.words...); !equal(got, c.want) || dir != ":4" {
			t.Errorf("kubectl __completeNoDesc migrate %q: %q %s, want %q :4", c.words, got, dir, c.want)
		}
	}

	// The drain: each VM lands where the plugin said it could.
	if r := drain(t, src, "120s"); r.Code != 0 {
		t.Fatalf("kubectl drain %s: %s", src, r)
	}
	for vm, nodes := range allowed {
		vmi := f.WaitVMIRunning(t, ns, vm, "")
		if !contains(nodes, vmi.Status.NodeName) {
			t.Errorf("VMI %s on %s after the drain, want one of the nodes policy explain allowed %v", vm, vmi.Status.NodeName, nodes)
		}
	}
	evac := evacuationVMIMs(t, f, ns)
	if len(evac) < 2 {
		t.Fatalf("evacuation VMIMs after the drain: %d, want one per VM", len(evac))
	}
	for _, m := range evac {
		want := ""
		if m.Spec.VMIName == "vm-web" {
			want = policy
		}
		if got := m.Annotations[framework.PolicyAnnotation]; got != want {
			t.Errorf("evacuation VMIM %s of %s: policy annotation %q, want %q", m.Name, m.Spec.VMIName, got, want)
		}
	}
}
