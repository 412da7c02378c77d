package tests

// The plugin's operating commands against the real cluster: `kubectl migrate list` and
// `cancel` (the plugin, KMT_CLI_BIN else bazel-bin/cli/kubectl-migrate, as in cli_test.go),
// and shell completion through the real kubectl (`kubectl __complete migrate ...`) with
// kubectl-migrate and kubectl_complete-migrate on PATH, laid out as a user installs them.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// createdName is the VMIM name in the plugin's "<resource>/<name> created" line.
func createdName(t *testing.T, r framework.Result) string {
	t.Helper()
	m := regexp.MustCompile(`virtualmachineinstancemigration\.kubevirt\.io/(\S+) created`).FindStringSubmatch(r.Stdout)
	if r.Code != 0 || m == nil {
		t.Fatalf("kubectl-migrate did not create a migration: %s", r)
	}
	return m[1]
}

// tableRows reads kubectl's table layout (columns padded with at least three spaces;
// cells hold single spaces at most) into one map per row, keyed by the header.
func tableRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	sep := regexp.MustCompile(` {3,}`)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil
	}
	header := sep.Split(lines[0], -1)
	var rows []map[string]string
	for _, l := range lines[1:] {
		cells := sep.Split(l, -1)
		if len(cells) != len(header) {
			t.Fatalf("row %q has %d cells, header %q has %d", l, len(cells), lines[0], len(header))
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = cells[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// stuckMigration starts VMI vmi on f.Nodes[0] and creates a placed migration of it to a
// cordoned extra node: the operator reports targetPodUnschedulable=True and the migration
// stays in flight. create makes the VMIM and returns its name. Returns it and the node.
func stuckMigration(t *testing.T, f *framework.Framework, ns, vmi, ip string, create func(node string) string) (string, string) {
	t.Helper()
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI(vmi, source), source)
	cordoned := "p-" + framework.RandomSuffix() + "-cordoned"
	f.ExtraNode(t, cordoned, ip, func(n *k8sv1.Node) { n.Spec.Unschedulable = true })
	name := create(cordoned)
	f.WaitMigrationCondition(t, ns, name, framework.ConditionTargetUnsched, "True", framework.ReasonUnschedulable, 90*time.Second)
	return name, cordoned
}

// list shows the placed migration (and not a plain one) with KubeVirt's phase, the term,
// both conditions and its age; -A -o wide adds the namespace and why it is held; -o json is
// a List of exactly the placed VMIMs. cancel --dry-run=server deletes nothing; cancel --vmi
// deletes the in-flight VMIM, virt-controller aborts it (deletes the pending target pod and
// releases its finalizer) and the VM stays on its source; cancelling again, or cancelling a
// migration that already ended, exits 1 with the reason. The VMIM is the plugin's own, as
// virt-api's mutating webhook leaves it (KubeVirt's finalizer and kubevirt.io/vmi-name label),
// so the cancel goes the whole way it goes in a cluster.
func TestPluginListAndCancel(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	name, cordoned := stuckMigration(t, f, ns, "vmi", "192.168.72.1", func(node string) string {
		return createdName(t, framework.Plugin(t, framework.AdminUser, time.Minute, "vmi", "-n", ns, "--node", node))
	})
	if m := f.GetMigration(t, ns, name); !contains(m.Finalizers, virtv1.VirtualMachineInstanceMigrationFinalizer) ||
		m.Labels[virtv1.MigrationSelectorLabel] != "vmi" {
		t.Fatalf("VMIM %s lacks virt-api's finalizer or label: finalizers %v labels %v", name, m.Finalizers, m.Labels)
	}

	// A plain migration of another VMI in the same namespace: not a placed one.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("plain-vmi", f.Nodes[1]), f.Nodes[1])
	f.CreateMigration(t, f.Admin, ns, framework.NewMigration("plain", "plain-vmi"))
	f.WaitMigrationPhase(t, ns, "plain", virtv1.MigrationSucceeded, 90*time.Second)

	r := framework.Plugin(t, framework.AdminUser, time.Minute, "list", "-n", ns)
	if r.Code != 0 {
		t.Fatalf("list: %s", r)
	}
	rows := tableRows(t, r.Stdout)
	m := f.GetMigration(t, ns, name)
	if len(rows) != 1 {
		t.Fatalf("list shows %d rows, want only the placed migration %s:\n%s", len(rows), name, r.Stdout)
	}
	want := map[string]string{
		"NAME": name, "VMI": "vmi", "PHASE": string(m.Status.Phase),
		"TERM": "metadata.name In [" + cordoned + "]", "NODE": "<none>",
		"APPLIED": "True", "UNSCHEDULABLE": "True",
	}
	for col, v := range want {
		if rows[0][col] != v {
			t.Errorf("list column %s = %q, want %q\n%s", col, rows[0][col], v, r.Stdout)
		}
	}
	if !regexp.MustCompile(`^\d+(s|m\d*s?)$`).MatchString(rows[0]["AGE"]) {
		t.Errorf("list AGE = %q, want kubectl's short age", rows[0]["AGE"])
	}

	r = framework.Plugin(t, framework.AdminUser, time.Minute, "list", "-A", "-o", "wide")
	var wide map[string]string
	for _, row := range tableRows(t, r.Stdout) {
		if row["NAMESPACE"] == ns {
			wide = row
		}
	}
	if r.Code != 0 || wide == nil || wide["NAME"] != name || wide["SOURCE"] != f.Nodes[0] ||
		!strings.Contains(wide["MESSAGE"], cordoned+": cordoned") {
		t.Errorf("list -A -o wide: no row of %s/%s with source %s and the reason %q: %s", ns, name, f.Nodes[0], cordoned+": cordoned", r)
	}

	r = framework.Plugin(t, framework.AdminUser, time.Minute, "list", "-n", ns, "-o", "json")
	var list struct {
		Kind  string                                   `json:"kind"`
		Items []virtv1.VirtualMachineInstanceMigration `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || r.Code != 0 {
		t.Fatalf("list -o json: %v\n%s", err, r)
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Name != name ||
		list.Items[0].Annotations[framework.AddedTermAnnotation] != framework.NodeNameTerm(cordoned) {
		t.Errorf("list -o json = kind %q with %d items, want a List of %s carrying its term:\n%s", list.Kind, len(list.Items), name, r.Stdout)
	}

	// A dry run deletes nothing.
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "cancel", "--vmi", "vmi", "-n", ns, "--dry-run=server")
	if r.Code != 0 || r.Stdout != "virtualmachineinstancemigration.kubevirt.io/"+name+" cancelled (server dry run)\n" {
		t.Errorf("cancel --dry-run=server: %s", r)
	}
	if m := f.GetMigration(t, ns, name); m.DeletionTimestamp != nil {
		t.Fatalf("the server dry run deleted %s", name)
	}

	// The real cancel: the in-flight migration of the VMI, found as virtctl finds it.
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "cancel", "--vmi", "vmi", "-n", ns)
	if r.Code != 0 || r.Stdout != "virtualmachineinstancemigration.kubevirt.io/"+name+" cancelled\n" {
		t.Fatalf("cancel --vmi vmi: %s", r)
	}
	framework.Eventually(t, 90*time.Second, "virt-controller aborts and releases VMIM "+name, func() (bool, string) {
		m, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(framework.Ctx(t), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "still there: phase " + string(m.Status.Phase) + " finalizers " + strings.Join(m.Finalizers, ",")
	})
	framework.Eventually(t, 60*time.Second, "the cancelled migration's target pods are gone", func() (bool, string) {
		pods, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: virtv1.MigrationJobLabel + "=" + string(m.UID)})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, "target pods: " + framework.ToJSON(pods.Items)
	})
	f.WaitVMIRunning(t, ns, "vmi", f.Nodes[0])

	// Nothing left to cancel: exit 1, the reason on stderr, nothing on stdout.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "--vmi", "vmi", "-n", ns}, `error: found no migration to cancel for virtualmachineinstance "vmi" in namespace "` + ns + `"` + "\n"},
		{[]string{"cancel", name, "-n", ns}, `Error from server (NotFound): virtualmachineinstancemigrations.kubevirt.io "` + name + `" not found` + "\n"},
		{[]string{"cancel", "plain", "-n", ns}, "error: migration plain has already Succeeded; there is nothing to cancel\n"},
	} {
		r := framework.Plugin(t, framework.AdminUser, time.Minute, c.args...)
		if r.Code != 1 || r.Stderr != c.want || r.Stdout != "" {
			t.Errorf("kubectl-migrate %s: %s\nwant exit 1 and stderr %q", strings.Join(c.args, " "), r, c.want)
		}
	}
	if m := f.GetMigration(t, ns, "plain"); m.DeletionTimestamp != nil {
		t.Errorf("cancel of the ended migration deleted it")
	}
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "list", "-n", ns)
	if r.Code != 0 || r.Stdout != "" || r.Stderr != "No placed migrations found in "+ns+" namespace.\n" {
		t.Errorf("list after the cancel: %s", r)
	}
	r = framework.Plugin(t, framework.AdminUser, time.Minute, "cancel", "-n", ns)
	if r.Code != 2 || !strings.HasPrefix(r.Stderr, "error: cancel needs a MIGRATION or --vmi VMI") {
		t.Errorf("cancel without a target: %s\nwant exit 2", r)
	}
}

// completionPath is a directory laid out as the README installs the plugin: kubectl-migrate
// and a copy of kubectl_complete-migrate side by side, first on PATH.
func completionPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(framework.CLIBin(t), filepath.Join(dir, "kubectl-migrate")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), "cli", "kubectl_complete-migrate.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-migrate"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// kubectlComplete runs the real kubectl's `__complete migrate WORDS...` (or
// `__completeNoDesc`) as the admin and returns the candidates and the directive line.
func kubectlComplete(t *testing.T, path, request string, words ...string) ([]string, string) {
	t.Helper()
	env := []string{"PATH=" + path, "KUBECONFIG=" + framework.KubeconfigOf(framework.AdminUser)}
	r := framework.Run(t, 30*time.Second, env, framework.Kubectl(), append([]string{request, "migrate"}, words...)...)
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if r.Code != 0 || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("kubectl %s migrate %q: %s", request, words, r)
	}
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func firstFields(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.SplitN(l, "\t", 2)[0])
	}
	return out
}

// kubectl's own completion reaches the plugin's: subcommands with descriptions, the
// namespace's VMIs, only in-flight migrations for cancel, node names for --node in both
// spellings, node label keys and values for --selector, flags per command, and files for
// --term-file (directive 0), each with cobra's directive line.
func TestPluginCompletion(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	name, cordoned := stuckMigration(t, f, ns, "db-1", "192.168.73.1", func(node string) string {
		return createdName(t, framework.Plugin(t, framework.AdminUser, time.Minute, "db-1", "-n", ns, "--node", node))
	})
	path := completionPath(t)

	got, dir := kubectlComplete(t, path, "__complete", "-n", ns, "")
	if dir != ":4" || !contains(got, "cancel\tCancel a migration (delete its VMIM, as virtctl does)") ||
		!contains(firstFields(got), "list") || !contains(got, "db-1") {
		t.Errorf("kubectl __complete migrate -n %s '': %q %s, want the subcommands with descriptions and VMI db-1, :4", ns, got, dir)
	}
	if got, dir := kubectlComplete(t, path, "__completeNoDesc", "l"); !equal(got, []string{"list"}) || dir != ":4" {
		t.Errorf("kubectl __completeNoDesc migrate l: %q %s, want [list] :4", got, dir)
	}
	if got, _ := kubectlComplete(t, path, "__complete", "explain", "-n", ns, "db"); !equal(got, []string{"db-1"}) {
		t.Errorf("explain -n %s db: %q, want [db-1]", ns, got)
	}
	if got, _ := kubectlComplete(t, path, "__complete", "cancel", "-n", ns, ""); !equal(got, []string{name}) {
		t.Errorf("cancel -n %s '': %q, want the in-flight migration [%s]", ns, got, name)
	}
	if got, _ := kubectlComplete(t, path, "__complete", "cancel", "-n", ns, "--vmi", ""); !equal(got, []string{"db-1"}) {
		t.Errorf("cancel --vmi '': %q, want [db-1]", got)
	}

	// Nodes: every node the agent plays and the extra one; the prefix narrows to exactly it.
	got, dir = kubectlComplete(t, path, "__complete", "db-1", "-n", ns, "--node", "")
	for _, n := range append([]string{cordoned}, f.Nodes...) {
		if !contains(got, n) {
			t.Errorf("--node '': %q lacks node %s", got, n)
		}
	}
	if dir != ":4" {
		t.Errorf("--node '': directive %s, want :4", dir)
	}
	prefix := cordoned[:len(cordoned)-3]
	if got, _ := kubectlComplete(t, path, "__complete", "db-1", "--node="+prefix); !equal(got, []string{cordoned}) {
		t.Errorf("--node=%s: %q, want [%s] (the value alone, as cobra completes --flag=)", prefix, got, cordoned)
	}
	if got, _ := kubectlComplete(t, path, "__complete", "db-1", "--node", cordoned, "--exclude-node", prefix); len(got) != 1 || got[0] != cordoned {
		t.Errorf("--exclude-node %s: %q, want [%s]", prefix, got, cordoned)
	}

	// --selector: the nodes' label keys (no space after one), then a key's values.
	got, dir = kubectlComplete(t, path, "__complete", "db-1", "--selector", "kmt-e2e/extra")
	if !equal(got, []string{"kmt-e2e/extra-node"}) || dir != ":6" {
		t.Errorf("--selector kmt-e2e/extra: %q %s, want [kmt-e2e/extra-node] :6", got, dir)
	}
	got, _ = kubectlComplete(t, path, "__complete", "db-1", "-l", "kmt-e2e/extra-node=true,"+k8sv1.LabelHostname+"="+prefix)
	if !equal(got, []string{"kmt-e2e/extra-node=true," + k8sv1.LabelHostname + "=" + cordoned}) {
		t.Errorf("-l ...,hostname=%s: %q", prefix, got)
	}

	// Flags of the command being typed, with their usage; a given flag is not offered again.
	got, _ = kubectlComplete(t, path, "__complete", "list", "-")
	for _, want := range []string{"--all-namespaces\tList the migrations of every namespace.", "-A\tList the migrations of every namespace.", "--output\tOutput format: name, yaml, json (list: also wide; policy explain: text, json, yaml).", "-n\tThe namespace (default: the context's namespace)."} {
		if !contains(got, want) {
			t.Errorf("list -: %q lacks %q", got, want)
		}
	}
	if contains(firstFields(got), "--node") || contains(firstFields(got), "--vmi") {
		t.Errorf("list -: %q offers flags list does not accept", got)
	}
	if got, _ := kubectlComplete(t, path, "__complete", "db-1", "--node", cordoned, "--no"); len(got) != 0 {
		t.Errorf("--node given, --no: %q, want nothing", got)
	}
	if got, _ := kubectlComplete(t, path, "__complete", "list", "-o", ""); !equal(got, []string{"json", "name", "wide", "yaml"}) {
		t.Errorf("list -o '': %q", got)
	}
	if got, dir := kubectlComplete(t, path, "__complete", "db-1", "--term-file", ""); len(got) != 0 || dir != ":0" {
		t.Errorf("--term-file '': %q %s, want no candidates and :0 (the shell completes files)", got, dir)
	}
}

func equal(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
