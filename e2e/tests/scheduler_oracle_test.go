package tests

// Issue 18 §3: `kubectl migrate explain` against the real kube-scheduler. Random clusters
// of fake nodes (labels, taints, cordons, Ready/NotReady/Unknown, allocatable cpu, memory,
// pods and ephemeral storage, pods already bound there) and a VMI with random required and
// preferred node affinity, nodeSelector, tolerations and requests run on one of them; a
// random added term is asked about. For every node of the cluster the explainer's verdict
// ("fits" or not) must be the scheduler's: a probe pod identical to KubeVirt's own target
// pod (captured as it was created, before the operator changed it) with the term and
// `matchFields metadata.name In [node]` ANDed into every required term, created in a
// scratch namespace and either bound or marked Unschedulable by kube-scheduler.
//
// KMT_ORACLE_SEED replays a run; KMT_ORACLE_NODES (default 200) is the least number of
// nodes compared, over clusters of 20–60 nodes.

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	virtv1 "kubevirt.io/api/core/v1"

	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"kmt.local/e2e/framework"
)

const (
	orcLabel          = "kmt-orc/"
	notReadyTaintKey  = "node.kubernetes.io/not-ready"
	unreachableTaint  = "node.kubernetes.io/unreachable"
	unschedulableKey  = "node.kubernetes.io/unschedulable"
	schedulableLabel  = "kubevirt.io/schedulable"
	oracleProbeWait   = 2 * time.Minute
	oracleClusterMin  = 20
	oracleClusterSpan = 41 // sizes 20..60
)

func TestExplainAgreesWithScheduler(t *testing.T) {
	f := fw(t)
	seed := framework.EnvSeed(t, "KMT_ORACLE_SEED")
	want := framework.EnvInt(t, "KMT_ORACLE_NODES", 200)
	t.Logf("seed %d (replay with KMT_ORACLE_SEED=%d)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	compared, disagreements, fits := 0, 0, 0
	for c := 0; compared < want; c++ {
		size := oracleClusterMin + r.Intn(oracleClusterSpan)
		if left := want - compared; left < size && left >= oracleClusterMin {
			size = left
		}
		cs := rand.New(rand.NewSource(r.Int63()))
		n := 0
		t.Run(fmt.Sprintf("cluster-%d", c), func(t *testing.T) {
			var d, fit int
			n, d, fit = runOracleCluster(t, f, cs, c, size)
			compared += n
			disagreements += d
			fits += fit
		})
		if n == 0 {
			break // a setup failure, not a verdict: do not pile up more clusters
		}
	}
	t.Logf("explainer vs kube-scheduler: %d nodes compared, %d fit, %d disagreements (seed %d)",
		compared, fits, disagreements, seed)
	if disagreements > 0 {
		t.Errorf("%d disagreements between explain and kube-scheduler (seed %d)", disagreements, seed)
	}
}

// oracleNode is what the generator decided about one node.
type oracleNode struct {
	name    string
	labels  map[string]string
	taints  []k8sv1.Taint
	cordon  bool
	ready   k8sv1.ConditionStatus
	cpu     int64 // millicores allocatable
	mem     int64 // bytes allocatable
	pods    int64
	storage int64 // ephemeral-storage allocatable, 0: the base node's
	fillers []k8sv1.ResourceList
}

func runOracleCluster(t *testing.T, f *framework.Framework, r *rand.Rand, index, size int) (compared, disagreements, fitting int) {
	ns := f.Namespace(t)
	scratch := f.BareNamespace(t)
	pool := fmt.Sprintf("orc-%s-%d", framework.RandomSuffix(), index)
	octet := 90 + index%60

	nodes := make([]*oracleNode, size)
	for i := range nodes {
		nodes[i] = genOracleNode(r, fmt.Sprintf("%s-%d", pool, i), i == 0)
	}
	source := nodes[0]
	vmi := genOracleVMI(r, pool, source, nodes)

	// Nodes first (the VMI must run on the source), allocatable generous until the target
	// pod's requests are known: the fillers are sized from them.
	for i, n := range nodes {
		n := n
		f.ExtraNode(t, n.name, fmt.Sprintf("192.168.%d.%d", octet, i+1), func(node *k8sv1.Node) {
			for k, v := range n.labels {
				node.Labels[k] = v
			}
			if n.labels[schedulableLabel] == "" {
				delete(node.Labels, schedulableLabel)
			}
			node.Labels["kmt-e2e/pool"] = pool
			node.Spec.Taints = append([]k8sv1.Taint{poolTaint(pool)}, n.taints...)
			node.Spec.Unschedulable = n.cordon
			for j := range node.Status.Conditions {
				if node.Status.Conditions[j].Type == k8sv1.NodeReady {
					node.Status.Conditions[j].Status = n.ready
					if n.ready != k8sv1.ConditionTrue {
						node.Status.Conditions[j].Reason = "KubeletNotReady"
					}
				}
			}
		})
	}
	running := f.StartVMI(t, f.Admin, ns, vmi, source.name)

	target := captureTargetPod(t, f, ns, running, source.name)
	req := podRequests(target)
	t.Logf("target pod requests: %v", req)

	// Allocatable and the pods already there, around the target pod's requests: some nodes
	// have exactly the room it needs, some one unit less.
	for _, n := range nodes[1:] {
		sizeOracleNode(r, n, req)
		setAllocatable(t, f, n)
	}
	for _, n := range nodes {
		for j, rl := range n.fillers {
			createFiller(t, f, ns, fmt.Sprintf("fill-%s-%d", n.name, j), n.name, rl)
		}
	}
	waitFillersRunning(t, f, ns, nodes)

	term := genAddedTerm(r, pool, nodes)
	verdicts, out := explainVerdicts(t, ns, running.Name, term)

	probes := make(map[string]*k8sv1.Pod, len(nodes))
	for _, n := range nodes {
		p := probePod(target, ns, scratch, n.name, term)
		created, err := f.Admin.Kube.CoreV1().Pods(scratch).Create(framework.Ctx(t), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create probe for %s: %v\n%s", n.name, err, framework.ToJSON(p))
		}
		probes[n.name] = created
	}
	oracle := waitProbes(t, f, scratch, probes)

	for _, n := range nodes {
		compared++
		got, o := verdicts[n.name] == "fits", oracle[n.name]
		if o.fits {
			fitting++
		}
		if got == o.fits {
			continue
		}
		disagreements++
		t.Errorf("node %s: explain says %q, kube-scheduler %s\n  node: %s\n  fillers: %v\n  term: %s\n  scheduler: %s",
			n.name, verdicts[n.name], o.verdict(), describeOracleNode(n), n.fillers, framework.ToJSON(term), o.message)
	}
	if disagreements > 0 {
		t.Logf("VMI spec: %s\ntarget pod spec: %s\nexplain output:\n%s",
			framework.ToJSON(vmi.Spec), framework.ToJSON(target.Spec), out)
	}
	deleteAll(t, f, scratch)
	return compared, disagreements, fitting
}

// --- generation ---

var (
	oracleZones = []string{"a", "b", "c"}
	oracleTiers = []string{"gold", "silver"}
)

func genOracleNode(r *rand.Rand, name string, source bool) *oracleNode {
	n := &oracleNode{name: name, ready: k8sv1.ConditionTrue, labels: map[string]string{
		orcLabel + "zone":   oracleZones[r.Intn(len(oracleZones))],
		schedulableLabel:    "true",
		k8sv1.LabelHostname: name,
	}}
	if r.Intn(3) > 0 {
		n.labels[orcLabel+"tier"] = oracleTiers[r.Intn(len(oracleTiers))]
	}
	switch r.Intn(6) {
	case 0: // absent
	case 1:
		n.labels[orcLabel+"gen"] = "v" + fmt.Sprint(r.Intn(9)) // not an integer: Gt/Lt never match
	default:
		n.labels[orcLabel+"gen"] = fmt.Sprint(1 + r.Intn(9))
	}
	if r.Intn(4) == 0 {
		n.labels[orcLabel+"gpu"] = "true"
	}
	// Generous until sized from the target pod's requests.
	n.cpu, n.mem, n.pods = 64000, 256<<30, 110
	if source {
		return n // clean: the VMI must start there
	}
	if r.Intn(10) == 0 {
		n.labels[schedulableLabel] = "" // virt-handler not there: KubeVirt's nodeSelector fails
	}
	if r.Intn(10) == 0 {
		n.cordon = true
	}
	switch r.Intn(12) {
	case 0, 1: // NotReady, tainted as the node lifecycle controller does
		n.ready = k8sv1.ConditionFalse
		n.taints = append(n.taints, k8sv1.Taint{Key: notReadyTaintKey, Effect: k8sv1.TaintEffectNoSchedule},
			k8sv1.Taint{Key: notReadyTaintKey, Effect: k8sv1.TaintEffectNoExecute})
	case 2:
		n.ready = k8sv1.ConditionUnknown
		n.taints = append(n.taints, k8sv1.Taint{Key: unreachableTaint, Effect: k8sv1.TaintEffectNoSchedule},
			k8sv1.Taint{Key: unreachableTaint, Effect: k8sv1.TaintEffectNoExecute})
	}
	if n.cordon && r.Intn(2) == 0 {
		n.taints = append(n.taints, k8sv1.Taint{Key: unschedulableKey, Effect: k8sv1.TaintEffectNoSchedule})
	}
	// Taints are unique by key and effect: one dedicated taint at most.
	switch r.Intn(7) {
	case 0:
		n.taints = append(n.taints, k8sv1.Taint{Key: orcLabel + "dedicated", Value: "db", Effect: k8sv1.TaintEffectNoSchedule})
	case 1:
		n.taints = append(n.taints, k8sv1.Taint{Key: orcLabel + "dedicated", Value: "web", Effect: k8sv1.TaintEffectNoSchedule})
	}
	for _, t := range []k8sv1.Taint{
		{Key: orcLabel + "maint", Effect: k8sv1.TaintEffectNoExecute},
		{Key: orcLabel + "soft", Effect: k8sv1.TaintEffectPreferNoSchedule},
	} {
		if r.Intn(7) == 0 {
			n.taints = append(n.taints, t)
		}
	}
	return n
}

// sizeOracleNode sets allocatable and the pods already bound there: usually roomy, often
// exactly the room the target pod needs, sometimes one unit (a millicore, a byte, a pod)
// less.
func sizeOracleNode(r *rand.Rand, n *oracleNode, req map[k8sv1.ResourceName]int64) {
	cpu, mem := req[k8sv1.ResourceCPU], req[k8sv1.ResourceMemory]
	n.cpu, n.mem, n.pods = 8000, 16<<30, 110
	fillers := r.Intn(4)
	n.pods = int64(fillers) + 1 + int64(r.Intn(3)) // room for the probe, the VMI's pod stays on the source
	if r.Intn(8) == 0 {
		n.pods = int64(fillers) // full
	}
	spareCPU, spareMem := int64(r.Intn(4000)), int64(r.Intn(8<<10))<<20
	switch r.Intn(6) {
	case 0:
		spareCPU = 0 // exactly enough cpu
	case 1:
		spareCPU = -1 // one millicore short
	case 2:
		spareMem = 0
	case 3:
		spareMem = -1 // one byte short
	}
	// Fillers take allocatable − (request + spare), split among them.
	usedCPU, usedMem := n.cpu-(cpu+spareCPU), n.mem-(mem+spareMem)
	if fillers == 0 {
		n.cpu, n.mem = cpu+spareCPU, mem+spareMem
		if n.cpu < 0 {
			n.cpu = 0
		}
		return
	}
	for i := 0; i < fillers; i++ {
		c, m := usedCPU/int64(fillers), usedMem/int64(fillers)
		if i == 0 {
			c += usedCPU % int64(fillers)
			m += usedMem % int64(fillers)
		}
		n.fillers = append(n.fillers, k8sv1.ResourceList{
			k8sv1.ResourceCPU:    *resource.NewMilliQuantity(c, resource.DecimalSI),
			k8sv1.ResourceMemory: *resource.NewQuantity(m, resource.BinarySI),
		})
	}
	if st := req[k8sv1.ResourceEphemeralStorage]; st > 0 && r.Intn(10) == 0 {
		n.storage = st - 1 // too little ephemeral storage
	}
}

// genOracleVMI: a VMI in the pool, with random own constraints the source node meets.
func genOracleVMI(r *rand.Rand, pool string, source *oracleNode, nodes []*oracleNode) *virtv1.VirtualMachineInstance {
	vmi := framework.NewVMI("vm", source.name, inPool(pool))
	mems := []string{"64Mi", "128Mi", "256Mi", "512Mi"}
	vmi.Spec.Domain.Resources.Requests[k8sv1.ResourceMemory] = resource.MustParse(mems[r.Intn(len(mems))])
	if r.Intn(2) == 0 {
		cpus := []string{"100m", "250m", "1"}
		vmi.Spec.Domain.Resources.Requests[k8sv1.ResourceCPU] = resource.MustParse(cpus[r.Intn(len(cpus))])
	}
	if r.Intn(3) == 0 {
		framework.WithNodeSelector(map[string]string{orcLabel + "zone": source.labels[orcLabel+"zone"]})(vmi)
	}
	for _, tol := range []k8sv1.Toleration{
		{Key: orcLabel + "dedicated", Operator: k8sv1.TolerationOpEqual, Value: "db", Effect: k8sv1.TaintEffectNoSchedule},
		{Key: orcLabel + "maint", Operator: k8sv1.TolerationOpExists, Effect: k8sv1.TaintEffectNoExecute},
		{Key: orcLabel + "dedicated", Operator: k8sv1.TolerationOpExists},
		{Key: notReadyTaintKey, Operator: k8sv1.TolerationOpExists, Effect: k8sv1.TaintEffectNoSchedule},
		{Key: unreachableTaint, Operator: k8sv1.TolerationOpExists},
		{Key: unschedulableKey, Operator: k8sv1.TolerationOpExists, Effect: k8sv1.TaintEffectNoSchedule},
	} {
		if r.Intn(5) == 0 {
			framework.WithToleration(tol)(vmi)
		}
	}
	if r.Intn(4) > 0 {
		// Term 0 holds on the source; the others are random.
		terms := []k8sv1.NodeSelectorTerm{genTerm(r, source, nodes, 1+r.Intn(3))}
		for i := r.Intn(3); i > 0; i-- {
			terms = append(terms, genTerm(r, nil, nodes, 1+r.Intn(3)))
		}
		aff := framework.EnsureNodeAffinity(vmi)
		aff.RequiredDuringSchedulingIgnoredDuringExecution = &k8sv1.NodeSelector{NodeSelectorTerms: terms}
	}
	if r.Intn(2) == 0 {
		aff := framework.EnsureNodeAffinity(vmi)
		aff.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.PreferredDuringSchedulingIgnoredDuringExecution,
			k8sv1.PreferredSchedulingTerm{Weight: 1 + int32(r.Intn(50)), Preference: genTerm(r, nil, nodes, 1)})
	}
	return vmi
}

// genAddedTerm: the admin's request, kept inside the pool.
func genAddedTerm(r *rand.Rand, pool string, nodes []*oracleNode) k8sv1.NodeSelectorTerm {
	term := k8sv1.NodeSelectorTerm{}
	if r.Intn(5) > 0 {
		term = genTerm(r, nil, nodes, 1+r.Intn(2))
	}
	term.MatchExpressions = append(term.MatchExpressions, k8sv1.NodeSelectorRequirement{
		Key: "kmt-e2e/pool", Operator: k8sv1.NodeSelectorOpIn, Values: []string{pool}})
	return term
}

// genTerm: n requirements; when `holds` is set each one is true on that node.
func genTerm(r *rand.Rand, holds *oracleNode, nodes []*oracleNode, n int) k8sv1.NodeSelectorTerm {
	var term k8sv1.NodeSelectorTerm
	for i := 0; i < n; i++ {
		if r.Intn(6) == 0 {
			term.MatchFields = append(term.MatchFields, genNameRequirement(r, holds, nodes))
			continue
		}
		term.MatchExpressions = append(term.MatchExpressions, genLabelRequirement(r, holds))
	}
	return term
}

func genNameRequirement(r *rand.Rand, holds *oracleNode, nodes []*oracleNode) k8sv1.NodeSelectorRequirement {
	var names []string
	for _, n := range nodes {
		if r.Intn(3) == 0 && (holds == nil || n != holds) {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		names = []string{"kmt-orc-nowhere"}
	}
	op := k8sv1.NodeSelectorOpIn
	if holds != nil || r.Intn(2) == 0 {
		op = k8sv1.NodeSelectorOpNotIn // names never include `holds`
	}
	// Kubernetes takes exactly one value per matchFields requirement.
	return k8sv1.NodeSelectorRequirement{Key: "metadata.name", Operator: op, Values: names[r.Intn(len(names)):][:1]}
}

func genLabelRequirement(r *rand.Rand, holds *oracleNode) k8sv1.NodeSelectorRequirement {
	keys := []string{"zone", "tier", "gen", "gpu"}
	key := orcLabel + keys[r.Intn(len(keys))]
	universe := map[string][]string{
		orcLabel + "zone": oracleZones, orcLabel + "tier": oracleTiers,
		orcLabel + "gen": {"1", "3", "5", "7", "9"}, orcLabel + "gpu": {"true", "false"},
	}[key]
	ops := []k8sv1.NodeSelectorOperator{k8sv1.NodeSelectorOpIn, k8sv1.NodeSelectorOpNotIn,
		k8sv1.NodeSelectorOpExists, k8sv1.NodeSelectorOpDoesNotExist}
	if key == orcLabel+"gen" {
		ops = append(ops, k8sv1.NodeSelectorOpGt, k8sv1.NodeSelectorOpLt)
	}
	for {
		op := ops[r.Intn(len(ops))]
		req := k8sv1.NodeSelectorRequirement{Key: key, Operator: op}
		switch op {
		case k8sv1.NodeSelectorOpIn, k8sv1.NodeSelectorOpNotIn:
			for _, v := range universe {
				if r.Intn(2) == 0 {
					req.Values = append(req.Values, v)
				}
			}
			if len(req.Values) == 0 {
				req.Values = []string{universe[r.Intn(len(universe))]}
			}
		case k8sv1.NodeSelectorOpGt, k8sv1.NodeSelectorOpLt:
			req.Values = []string{fmt.Sprint(r.Intn(10))}
		}
		if holds == nil || labelRequirementHolds(req, holds.labels) {
			return req
		}
	}
}

// labelRequirementHolds decides only for the generator (which terms the source meets), with
// Kubernetes' own matcher; the verdicts compared come from the explainer and kube-scheduler.
func labelRequirementHolds(req k8sv1.NodeSelectorRequirement, labels map[string]string) bool {
	node := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	ok, err := corev1helpers.MatchNodeSelectorTerms(node, &k8sv1.NodeSelector{
		NodeSelectorTerms: []k8sv1.NodeSelectorTerm{{MatchExpressions: []k8sv1.NodeSelectorRequirement{req}}}})
	return err == nil && ok
}

func describeOracleNode(n *oracleNode) string {
	keys := make([]string, 0, len(n.labels))
	for k, v := range n.labels {
		if strings.HasPrefix(k, orcLabel) || k == schedulableLabel {
			keys = append(keys, k+"="+v)
		}
	}
	sort.Strings(keys)
	var taints []string
	for _, t := range n.taints {
		taints = append(taints, t.ToString())
	}
	return fmt.Sprintf("labels %v taints %v cordoned %t Ready %s allocatable cpu %dm memory %d pods %d ephemeral-storage %d",
		keys, taints, n.cordon, n.ready, n.cpu, n.mem, n.pods, n.storage)
}

// --- cluster writes ---

func setAllocatable(t *testing.T, f *framework.Framework, n *oracleNode) {
	t.Helper()
	ctx := framework.Ctx(t)
	node, err := f.Admin.Kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", n.name, err)
	}
	set := func(name k8sv1.ResourceName, q resource.Quantity) {
		node.Status.Allocatable[name] = q
		node.Status.Capacity[name] = q
	}
	set(k8sv1.ResourceCPU, *resource.NewMilliQuantity(n.cpu, resource.DecimalSI))
	set(k8sv1.ResourceMemory, *resource.NewQuantity(n.mem, resource.BinarySI))
	set(k8sv1.ResourcePods, *resource.NewQuantity(n.pods, resource.DecimalSI))
	if n.storage > 0 {
		set(k8sv1.ResourceEphemeralStorage, *resource.NewQuantity(n.storage, resource.BinarySI))
	} else {
		q := node.Status.Allocatable[k8sv1.ResourceEphemeralStorage]
		n.storage = q.Value()
	}
	if _, err := f.Admin.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update allocatable of node %s: %v", n.name, err)
	}
}

// createFiller binds a pod to the node directly (as a kubelet's static or a DaemonSet's
// pod would be): the scheduler and the explainer both count it.
func createFiller(t *testing.T, f *framework.Framework, ns, name, node string, requests k8sv1.ResourceList) {
	t.Helper()
	p := &k8sv1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kmt-e2e/filler": "true"}},
		Spec: k8sv1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptrTo(int64(0)),
			Containers: []k8sv1.Container{{Name: "filler", Image: "kmt-e2e/filler:none",
				Resources: k8sv1.ResourceRequirements{Requests: requests}}},
		},
	}
	if _, err := f.Admin.Kube.CoreV1().Pods(ns).Create(framework.Ctx(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create filler %s on %s: %v", name, node, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func waitFillersRunning(t *testing.T, f *framework.Framework, ns string, nodes []*oracleNode) {
	t.Helper()
	want := 0
	for _, n := range nodes {
		want += len(n.fillers)
	}
	framework.Eventually(t, time.Minute, "fillers Running", func() (bool, string) {
		list, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: "kmt-e2e/filler=true"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == k8sv1.PodRunning {
				running++
			}
		}
		return running == want, fmt.Sprintf("%d of %d Running", running, want)
	})
}

// captureTargetPod creates a placed VMIM whose term allows only the source node (so the
// target pod can never be scheduled) and returns KubeVirt's target pod as it was created
// (the watch's ADDED object: after the mutating webhooks, before the operator's AND), then
// deletes the VMIM and waits for the target pod to go.
func captureTargetPod(t *testing.T, f *framework.Framework, ns string, vmi *virtv1.VirtualMachineInstance, source string) *k8sv1.Pod {
	t.Helper()
	ctx := framework.Ctx(t)
	w, err := f.Admin.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io/migrationJobUID"})
	if err != nil {
		t.Fatalf("watch target pods: %v", err)
	}
	defer w.Stop()
	m := f.CreateMigration(t, f.Admin, ns, framework.NewMigration("capture", vmi.Name, framework.WithTerm(framework.NodeNameTerm(source))))
	var target *k8sv1.Pod
	timeout := time.After(time.Minute)
	for target == nil {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch of target pods ended before migration %s's target pod was created", m.Name)
			}
			if p, isPod := ev.Object.(*k8sv1.Pod); isPod && ev.Type == watch.Added &&
				p.Labels["kubevirt.io/migrationJobUID"] == string(m.UID) {
				target = p.DeepCopy()
			}
		case <-timeout:
			t.Fatalf("no target pod for migration %s within a minute", m.Name)
		}
	}
	if err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete migration %s: %v", m.Name, err)
	}
	framework.Eventually(t, time.Minute, "capture target pod deleted", func() (bool, string) {
		_, err := f.Admin.Kube.CoreV1().Pods(ns).Get(ctx, target.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		// KubeVirt deletes it once the migration is gone; hurry it.
		_ = f.Admin.Kube.CoreV1().Pods(ns).Delete(ctx, target.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))})
		return false, "still there"
	})
	return target
}

// podRequests is the pod's effective requests as the scheduler counts them
// (k8s.io/component-helpers/resource.PodRequests: containers, sidecar and init containers,
// overhead), in milli-units for cpu and units for the rest.
func podRequests(p *k8sv1.Pod) map[k8sv1.ResourceName]int64 {
	out := map[k8sv1.ResourceName]int64{}
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		if name == k8sv1.ResourceCPU {
			out[name] = q.MilliValue()
		} else {
			out[name] = q.Value()
		}
	}
	return out
}

// probePod: the target pod, pinned to one node, in the scratch namespace. Only what cannot
// change a filter's verdict is changed: name, namespace, owner, KubeVirt's labels (so
// neither virt-controller, the operator's webhook nor the fake agent take it for a VM's
// pod), the gates; pod (anti-)affinity terms that named no namespace get the VMI's.
func probePod(target *k8sv1.Pod, vmiNS, scratch, node string, term k8sv1.NodeSelectorTerm) *k8sv1.Pod {
	spec := target.Spec.DeepCopy()
	spec.NodeName = ""
	spec.SchedulingGates = nil
	if spec.Affinity == nil {
		spec.Affinity = &k8sv1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &k8sv1.NodeAffinity{}
	}
	pin := k8sv1.NodeSelectorRequirement{Key: "metadata.name", Operator: k8sv1.NodeSelectorOpIn, Values: []string{node}}
	req := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		req = &k8sv1.NodeSelector{NodeSelectorTerms: []k8sv1.NodeSelectorTerm{{}}}
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, term.MatchExpressions...)
		t.MatchFields = append(append(t.MatchFields, term.MatchFields...), pin)
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = req
	fill := func(terms []k8sv1.PodAffinityTerm) {
		for i := range terms {
			if len(terms[i].Namespaces) == 0 && terms[i].NamespaceSelector == nil {
				terms[i].Namespaces = []string{vmiNS}
			}
		}
	}
	if a := spec.Affinity.PodAntiAffinity; a != nil {
		fill(a.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	if a := spec.Affinity.PodAffinity; a != nil {
		fill(a.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	labels := map[string]string{"kmt-e2e/probe": "true"}
	for k, v := range target.Labels {
		if !strings.HasPrefix(k, "kubevirt.io") {
			labels[k] = v
		}
	}
	return &k8sv1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + node, Namespace: scratch, Labels: labels}, Spec: *spec}
}

type probeResult struct {
	fits    bool
	message string
}

func (p probeResult) verdict() string {
	if p.fits {
		return "binds the probe there"
	}
	return "finds it unschedulable"
}

// waitProbes waits until every probe is bound or marked Unschedulable.
func waitProbes(t *testing.T, f *framework.Framework, scratch string, probes map[string]*k8sv1.Pod) map[string]probeResult {
	t.Helper()
	out := map[string]probeResult{}
	framework.Eventually(t, oracleProbeWait, "every probe bound or Unschedulable", func() (bool, string) {
		list, err := f.Admin.Kube.CoreV1().Pods(scratch).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: "kmt-e2e/probe=true"})
		if err != nil {
			return false, err.Error()
		}
		var pending []string
		for i := range list.Items {
			p := &list.Items[i]
			node := strings.TrimPrefix(p.Name, "probe-")
			switch {
			case p.Spec.NodeName != "":
				if p.Spec.NodeName != node {
					t.Fatalf("probe %s bound to %s, not its node", p.Name, p.Spec.NodeName)
				}
				out[node] = probeResult{fits: true}
			case framework.IsUnschedulable(p):
				c := framework.PodCondition(p, k8sv1.PodScheduled)
				out[node] = probeResult{message: c.Message}
			default:
				pending = append(pending, p.Name)
			}
		}
		return len(pending) == 0 && len(out) == len(probes), fmt.Sprintf("undecided: %v", pending)
	})
	return out
}

func deleteAll(t *testing.T, f *framework.Framework, ns string) {
	t.Helper()
	err := f.Admin.Kube.CoreV1().Pods(ns).DeleteCollection(framework.Ctx(t),
		metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}, metav1.ListOptions{})
	if err != nil {
		t.Logf("delete probes in %s: %v", ns, err)
	}
}

// explainVerdicts runs `kubectl migrate explain` with the term and returns each listed
// node's verdict text ("fits" or its reasons); nodes the term excludes are not listed.
func explainVerdicts(t *testing.T, ns, vmi string, term k8sv1.NodeSelectorTerm) (map[string]string, string) {
	t.Helper()
	b, err := json.Marshal(term)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "term.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := framework.Plugin(t, framework.AdminUser, time.Minute, "explain", vmi, "-n", ns, "--term-file", file)
	out := map[string]string{}
	if strings.HasPrefix(r.Stdout, "No node matches the request") {
		return out, r.Stdout
	}
	lines := strings.Split(r.Stdout, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "NODE ") || (r.Code != 0 && r.Code != 1) {
		t.Fatalf("explain: %s", r)
	}
	for _, l := range lines[1:] {
		fs := strings.Fields(l)
		if len(fs) < 2 || strings.Contains(l, " would take virtualmachineinstance ") {
			continue
		}
		out[fs[0]] = strings.TrimSpace(strings.TrimPrefix(l, fs[0]))
	}
	return out, r.Stdout
}
