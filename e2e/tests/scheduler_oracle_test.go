package tests

// Issue 18 §3: `kubectl migrate explain` against the real kube-scheduler. Random clusters
// of fake nodes (labels, topology labels, taints, cordons, Ready/NotReady/Unknown,
// allocatable cpu, memory, pods and ephemeral storage, pods already bound there) and a VMI
// with random required and preferred node affinity, nodeSelector, tolerations and
// requests run on one of them; a random added term is asked about. For every node of the
// cluster the explainer's verdict ("fits" or not) must be the scheduler's: a probe pod
// identical to KubeVirt's own target pod (captured as it was created, before the operator
// changed it) with the term ANDed into every required term and pinned to the node, either
// bound or marked Unschedulable by kube-scheduler.
//
// Beyond the per-node filters, a cluster may use (KMT_ORACLE_FEATURES):
//   - interpod: the VMI's labels and required podAffinity/podAntiAffinity terms (hostname
//     or zone topology keys; the pod's own namespace, a list, a namespaceSelector, {});
//     anchors bound before the VMI starts so the source meets its affinity; pods with
//     labels, some with required anti-affinity toward the VMI, in its namespace and another.
//   - spread: the VMI's topology spread constraints (maxSkew, minDomains, both node
//     inclusion policies, DoNotSchedule and ScheduleAnyway).
//   - volumes: ReadWriteMany PVCs bound to PVs with required node affinity and zone/region
//     labels; now and then a claim deleted, recreated unbound, or its PV deleted.
// Probes go where and how the filters stay exact (probePlan): per-node filters only, in a
// scratch namespace all at once; volumes, in the VMI's namespace all at once; inter-pod
// affinity or spreading, in the VMI's namespace one at a time, and with spreading pinned by
// pod affinity to a pin pod rather than by matchFields.
//
// KMT_ORACLE_SEED replays a run (with the same KMT_ORACLE_FEATURES); KMT_ORACLE_NODES
// (default 200) is the least number of nodes compared, over clusters of 20–60 nodes;
// KMT_ORACLE_FEATURES is all (default), basic (the per-node filters only, as before the
// features existed: replays such seeds) or a comma-separated subset of interpod, spread,
// volumes.

import (
	"context"
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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

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
	fillerLabel       = "kmt-e2e/filler" // value: the pool; on every pod the test binds itself
	probeLabel        = "kmt-e2e/probe"
	pinLabel          = "kmt-orc-pin/node" // on the pin pods: value the node's name
	bindCompletedAnn  = "pv.kubernetes.io/bind-completed"
	oracleProbeWait   = 2 * time.Minute
	oracleOneProbe    = time.Minute // one probe of a sequential run, from create to gone
	oracleClusterMin  = 20
	oracleClusterSpan = 41 // sizes 20..60
	// After a bound probe is deleted, before the next one is created: kube-scheduler removes
	// a deleted pod from its cache in one informer handler and queues a new pod in another;
	// the pause keeps the next probe from being scheduled against the previous one.
	oracleSettle = 100 * time.Millisecond
)

// oracleFeatures are the filters beyond the per-node ones the generator may exercise
// (KMT_ORACLE_FEATURES).
type oracleFeatures struct {
	interPod bool // required pod (anti-)affinity: the VMI's and existing pods'
	spread   bool // the VMI's topology spread constraints
	volumes  bool // PVC volumes: PV node affinity, PV zone labels, missing or unbound claims
}

func (o oracleFeatures) any() bool { return o.interPod || o.spread || o.volumes }

func (o oracleFeatures) String() string {
	var on []string
	if o.interPod {
		on = append(on, "interpod")
	}
	if o.spread {
		on = append(on, "spread")
	}
	if o.volumes {
		on = append(on, "volumes")
	}
	if len(on) == 0 {
		return "basic"
	}
	return strings.Join(on, ",")
}

// oracleFeatureSet reads KMT_ORACLE_FEATURES: all (the default), basic (the per-node filters
// only; replays seeds of the generator before the features existed) or a comma-separated
// list of interpod, spread, volumes.
func oracleFeatureSet(t *testing.T) oracleFeatures {
	s := strings.TrimSpace(os.Getenv("KMT_ORACLE_FEATURES"))
	switch s {
	case "", "all":
		return oracleFeatures{interPod: true, spread: true, volumes: true}
	case "basic":
		return oracleFeatures{}
	}
	var o oracleFeatures
	for _, w := range strings.Split(s, ",") {
		switch strings.TrimSpace(w) {
		case "interpod":
			o.interPod = true
		case "spread":
			o.spread = true
		case "volumes":
			o.volumes = true
		default:
			t.Fatalf("KMT_ORACLE_FEATURES=%q: want all, basic or a comma-separated list of interpod, spread, volumes", s)
		}
	}
	return o
}

func TestExplainAgreesWithScheduler(t *testing.T) {
	f := fw(t)
	seed := framework.EnvSeed(t, "KMT_ORACLE_SEED")
	want := framework.EnvInt(t, "KMT_ORACLE_NODES", 200)
	feats := oracleFeatureSet(t)
	t.Logf("seed %d (replay with KMT_ORACLE_SEED=%d), features %s", seed, seed, feats)
	r := rand.New(rand.NewSource(seed))
	compared, disagreements, fits := 0, 0, 0
	start := time.Now()
	for c := 0; compared < want; c++ {
		size := oracleClusterMin + r.Intn(oracleClusterSpan)
		if left := want - compared; left < size && left >= oracleClusterMin {
			size = left
		}
		cs := rand.New(rand.NewSource(r.Int63()))
		n := 0
		t.Run(fmt.Sprintf("cluster-%d", c), func(t *testing.T) {
			var d, fit int
			n, d, fit = runOracleCluster(t, f, feats, cs, c, size)
			compared += n
			disagreements += d
			fits += fit
		})
		if n == 0 {
			break // a setup failure, not a verdict: do not pile up more clusters
		}
	}
	t.Logf("explainer vs kube-scheduler: %d nodes compared, %d fit, %d disagreements in %s (seed %d, features %s)",
		compared, fits, disagreements, time.Since(start).Round(time.Second), seed, feats)
	if disagreements > 0 {
		t.Errorf("%d disagreements between explain and kube-scheduler (seed %d, features %s)", disagreements, seed, feats)
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
	// placed: every pod the test binds to the node itself (anchors, tags, pins, and the
	// fillers once sized), in the order they are created.
	placed []*oraclePod
}

// oraclePod is a pod the test binds to a node directly (as a kubelet's static or a
// DaemonSet's pod would be): the scheduler and the explainer both count it.
type oraclePod struct {
	kind     string // "anchor" (before the VMI starts), "filler", "tag", "pin" (probes' target)
	name, ns string
	host     *oracleNode
	requests k8sv1.ResourceList
	labels   map[string]string
	anti     []k8sv1.PodAffinityTerm // required pod anti-affinity
	created  bool
}

func (p *oraclePod) String() string {
	s := fmt.Sprintf("%s %s/%s labels %v", p.kind, p.ns, p.name, p.labels)
	if len(p.requests) > 0 {
		s += fmt.Sprintf(" requests %v", framework.ToJSON(p.requests))
	}
	if len(p.anti) > 0 {
		s += " podAntiAffinity " + framework.ToJSON(p.anti)
	}
	return s
}

// oracleCluster: one generated cluster and the features it uses.
type oracleCluster struct {
	pool, ns, other, scratch string
	interPod, spread         bool
	volumes                  bool
	// nsLabels: the labels of the namespaces pods of the cluster live in (namespaceSelector).
	nsLabels map[string]map[string]string
}

// plan draws which of the enabled features this cluster uses; a few use none.
func (c *oracleCluster) plan(r *rand.Rand, feats oracleFeatures) {
	c.interPod = feats.interPod && r.Intn(4) > 0
	c.spread = feats.spread && r.Intn(2) == 0
	c.volumes = feats.volumes && r.Intn(2) == 0
}

// labelled: the cluster's pods carry labels that terms or constraints select.
func (c *oracleCluster) labelled() bool { return c.interPod || c.spread }

func (c *oracleCluster) String() string {
	var on []string
	if c.interPod {
		on = append(on, "interpod")
	}
	if c.spread {
		on = append(on, "spread")
	}
	if c.volumes {
		on = append(on, "volumes")
	}
	if len(on) == 0 {
		return "basic"
	}
	return strings.Join(on, ",")
}

// probePlan: where probes go and how. Probes in a scratch namespace, all at once, are only
// exact for per-node filters. Inter-pod affinity and spreading read the pod's namespace
// and the pods already bound, so those clusters probe in the VMI's namespace one at a
// time (create, bound or Unschedulable, delete, gone). Claims are looked up in the pod's
// namespace: clusters with volumes only probe in the VMI's namespace, all at once (each
// probe is pinned to its own node; the claims are ReadWriteMany). With spread constraints a
// `metadata.name In [node]` pin would change the verdict (nodeAffinityPolicy Honor counts
// only the domains of nodes the pod's node affinity allows), so those probes are pinned by
// a required podAffinity term (hostname) toward the node's pin pod instead; that term
// changes nothing else (see probePod) as long as the VMI has no required podAffinity of its
// own, which spread clusters therefore never generate (genVMIPodAffinity).
type probePlan struct {
	ns         string
	sequential bool
	pinByPod   bool
	pinNS      string // the pin pods' namespace
}

func (c *oracleCluster) probePlan() probePlan {
	if c.labelled() {
		return probePlan{ns: c.ns, sequential: true, pinByPod: c.spread, pinNS: c.scratch}
	}
	if c.volumes {
		return probePlan{ns: c.ns}
	}
	return probePlan{ns: c.scratch}
}

func runOracleCluster(t *testing.T, f *framework.Framework, feats oracleFeatures, r *rand.Rand, index, size int) (compared, disagreements, fitting int) {
	c := &oracleCluster{
		ns:      f.Namespace(t),
		scratch: f.BareNamespace(t),
		pool:    fmt.Sprintf("orc-%s-%d", framework.RandomSuffix(), index),
	}
	ns, pool := c.ns, c.pool
	octet := 90 + index%60

	nodes := make([]*oracleNode, size)
	for i := range nodes {
		nodes[i] = genOracleNode(r, feats, fmt.Sprintf("%s-%d", pool, i), i == 0)
	}
	source := nodes[0]
	vmi := genOracleVMI(r, pool, source, nodes)
	if feats.any() {
		c.plan(r, feats)
	}
	if c.labelled() {
		c.other = f.BareNamespace(t)
		labelOracleNamespaces(t, f, r, c)
	}
	anchors := genOracleExtras(r, c, vmi, source, nodes)
	var vols []*oracleVolume
	if c.volumes {
		vols = genOracleVolumes(r, c, vmi, source, nodes)
	}
	plan := c.probePlan()
	t.Logf("cluster %s: %d nodes, features %s, probes in %s%s", pool, size, c, plan.ns,
		map[bool]string{true: " one at a time", false: " all at once"}[plan.sequential])

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
	for _, v := range vols {
		createOracleVolume(t, f, ns, v)
	}
	// Anchors: the pods the VMI's required pod affinity needs in the source's domain, bound
	// and seen before the VMI is scheduled.
	if len(anchors) > 0 {
		createPlaced(t, f, pool, nodes)
		waitPlacedRunning(t, f, pool, nodes)
	}
	running := f.StartVMI(t, f.Admin, ns, vmi, source.name)

	target := captureTargetPod(t, f, ns, running, source.name)
	req := podRequests(target)
	t.Logf("target pod requests: %v", req)
	// Claims go missing or unbound only now (the VMI had to start), seconds before the probes.
	for _, v := range vols {
		breakOracleVolume(t, f, ns, v)
	}

	// Labelled pods (some with anti-affinity toward the VMI) and pins, after the VMI
	// started: they may forbid the source itself.
	genPlacedPods(r, c, vmi, nodes)
	// Allocatable and the pods already there, around the target pod's requests: some nodes
	// have exactly the room it needs, some one unit less.
	for _, n := range nodes[1:] {
		sizeOracleNode(r, n, req)
		setAllocatable(t, f, n)
	}
	placeFillers(r, c, vmi, nodes)
	createPlaced(t, f, pool, nodes)
	waitPlacedRunning(t, f, pool, nodes)

	term := genAddedTerm(r, pool, nodes)
	verdicts, out := explainVerdicts(t, ns, running.Name, term)

	var oracle map[string]probeResult
	if plan.sequential {
		oracle = map[string]probeResult{}
		for _, n := range nodes {
			oracle[n.name] = probeOnce(t, f, probePod(target, ns, plan, n.name, term), n.name)
		}
	} else {
		probes := make(map[string]*k8sv1.Pod, len(nodes))
		for _, n := range nodes {
			p := probePod(target, ns, plan, n.name, term)
			created, err := f.Admin.Kube.CoreV1().Pods(plan.ns).Create(framework.Ctx(t), p, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create probe for %s: %v\n%s", n.name, err, framework.ToJSON(p))
			}
			probes[n.name] = created
		}
		oracle = waitProbes(t, f, plan.ns, probes)
	}

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
		t.Errorf("node %s: explain says %q, kube-scheduler %s\n  node: %s\n  pods there:%s\n  term: %s\n  scheduler: %s",
			n.name, verdicts[n.name], o.verdict(), describeOracleNode(n), describePlaced(n), framework.ToJSON(term), o.message)
	}
	if disagreements > 0 {
		t.Logf("to reproduce (seed above; cluster %s, features %s, probes in %s, sequential %t):\n%s\ntarget pod spec: %s\nexplain output:\n%s",
			pool, c, plan.ns, plan.sequential, describeOracleCluster(c, vmi, nodes, vols), framework.ToJSON(target.Spec), out)
	}
	if c.labelled() {
		// Namespace selectors of the next cluster may reach these namespaces: leave no pod.
		wipePods(t, f, c.ns, c.other, c.scratch)
	} else {
		deleteAll(t, f, plan.ns, probeLabel+"=true")
	}
	return compared, disagreements, fitting
}

// --- generation ---

var (
	oracleZones   = []string{"a", "b", "c"}
	oracleRegions = map[string]string{"a": "r1", "b": "r1", "c": "r2"}
	oracleTiers   = []string{"gold", "silver"}
	oracleTeams   = []string{"red", "blue"}
	// oraclePodLabels: the labels the VMI and the pods around it carry, and that pod
	// (anti-)affinity terms and spread constraints select.
	oraclePodLabels = []struct {
		key    string
		values []string
	}{
		{orcLabel + "app", []string{"web", "db", "cache"}},
		{orcLabel + "team", oracleTeams},
	}
)

func genOracleNode(r *rand.Rand, feats oracleFeatures, name string, source bool) *oracleNode {
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
	if feats.any() {
		// The well-known topology labels (topology keys, VolumeZone), as cloud nodes carry
		// them; a few nodes lack one. The source has both.
		zone := n.labels[orcLabel+"zone"]
		if source || r.Intn(8) > 0 {
			n.labels[k8sv1.LabelTopologyZone] = zone
		}
		if source || r.Intn(8) > 0 {
			n.labels[k8sv1.LabelTopologyRegion] = oracleRegions[zone]
		}
	}
	if source {
		return n // clean: the VMI must start there
	}
	// A third of the nodes are clean too (schedulable, Ready, untainted), so that enough
	// nodes fit for the "fits" verdicts to be checked, not only the reasons against.
	if r.Intn(3) == 0 {
		return n
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
	// The pods bound before the fillers (anchors, tags, the pin) take pod slots too.
	placed := int64(len(n.placed))
	n.pods = placed + int64(fillers) + 1 + int64(r.Intn(3)) // room for the probe, the VMI's pod stays on the source
	if r.Intn(8) == 0 {
		n.pods = placed + int64(fillers) // full
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
	if r.Intn(2) == 0 { // required node affinity for half the VMIs
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

// genAddedTerm: the admin's request, kept inside the pool; half the time the pool alone
// (the other filters then decide), so that enough nodes fit.
func genAddedTerm(r *rand.Rand, pool string, nodes []*oracleNode) k8sv1.NodeSelectorTerm {
	term := k8sv1.NodeSelectorTerm{}
	if r.Intn(2) > 0 {
		term = genTerm(r, nil, nodes, 1+r.Intn(2))
	}
	term.MatchExpressions = append(term.MatchExpressions, k8sv1.NodeSelectorRequirement{
		Key: "kmt-e2e/pool", Operator: k8sv1.NodeSelectorOpIn, Values: []string{pool}})
	return term
}

// --- generation: inter-pod affinity, spreading ---

// genOracleExtras adds to the VMI what the cluster's features ask for (labels, required pod
// affinity and anti-affinity, spread constraints) and returns the anchors: pods bound
// before the VMI starts so that the source meets its required pod affinity.
func genOracleExtras(r *rand.Rand, c *oracleCluster, vmi *virtv1.VirtualMachineInstance, source *oracleNode, nodes []*oracleNode) []*oraclePod {
	if !c.labelled() {
		return nil
	}
	vmi.Labels = genPodLabels(r)
	var anchors []*oraclePod
	if c.interPod {
		anchors = genVMIPodAffinity(r, c, vmi, source, nodes)
	}
	if c.spread {
		genVMISpread(r, c, vmi, source, anchors)
	}
	for i, a := range anchors {
		a.name = fmt.Sprintf("anchor-%d", i)
		a.host.placed = append(a.host.placed, a)
	}
	return anchors
}

// labelOracleNamespaces gives the VMI's and the other namespace a team (namespaceSelector).
func labelOracleNamespaces(t *testing.T, f *framework.Framework, r *rand.Rand, c *oracleCluster) {
	t.Helper()
	c.nsLabels = map[string]map[string]string{}
	for _, ns := range []string{c.ns, c.other, c.scratch} {
		l := map[string]string{orcLabel + "pool": c.pool}
		if ns != c.scratch {
			l[orcLabel+"team"] = oracleTeams[r.Intn(len(oracleTeams))]
		}
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": l}})
		got, err := f.Admin.Kube.CoreV1().Namespaces().Patch(framework.Ctx(t), ns, types.MergePatchType, b, metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("label namespace %s: %v", ns, err)
		}
		c.nsLabels[ns] = got.Labels
	}
}

func genPodLabels(r *rand.Rand) map[string]string {
	l := map[string]string{}
	if r.Intn(5) > 0 {
		k := oraclePodLabels[0]
		l[k.key] = k.values[r.Intn(len(k.values))]
	}
	if r.Intn(2) == 0 {
		k := oraclePodLabels[1]
		l[k.key] = k.values[r.Intn(len(k.values))]
	}
	return l
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// someOf: a random non-empty subset of values, in their order.
func someOf(r *rand.Rand, values []string) []string {
	var out []string
	for _, v := range values {
		if r.Intn(2) == 0 {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = []string{values[r.Intn(len(values))]}
	}
	return out
}

// genPodSelector: a label selector over oraclePodLabels (matchLabels, In, NotIn, Exists,
// DoesNotExist); when want is set it selects those labels. allowEmpty lets it be {} (every
// pod) now and then.
func genPodSelector(r *rand.Rand, want map[string]string, allowEmpty bool) *metav1.LabelSelector {
	if want == nil && allowEmpty && r.Intn(10) == 0 {
		return &metav1.LabelSelector{}
	}
	for try := 0; try < 50; try++ {
		sel := &metav1.LabelSelector{}
		for i := 1 + r.Intn(2); i > 0; i-- {
			k := oraclePodLabels[r.Intn(len(oraclePodLabels))]
			req := metav1.LabelSelectorRequirement{Key: k.key}
			switch r.Intn(6) {
			case 0, 1:
				if sel.MatchLabels == nil {
					sel.MatchLabels = map[string]string{}
				}
				sel.MatchLabels[k.key] = k.values[r.Intn(len(k.values))]
				continue
			case 2:
				req.Operator, req.Values = metav1.LabelSelectorOpIn, someOf(r, k.values)
			case 3:
				req.Operator, req.Values = metav1.LabelSelectorOpNotIn, someOf(r, k.values)
			case 4:
				req.Operator = metav1.LabelSelectorOpExists
			default:
				req.Operator = metav1.LabelSelectorOpDoesNotExist
			}
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
		if want == nil || selectorMatches(sel, want) {
			return sel
		}
	}
	if len(want) == 0 {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: oraclePodLabels[0].key, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	}
	return &metav1.LabelSelector{MatchLabels: copyLabels(want)}
}

// selectorMatches decides only for the generator, with apimachinery's own selector.
func selectorMatches(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(l))
}

// genNamespaces: a pod affinity term's namespaces: none (the pod's own), a list, a team
// selector, both, or {} (every namespace).
func genNamespaces(r *rand.Rand, c *oracleCluster) ([]string, *metav1.LabelSelector) {
	team := func() *metav1.LabelSelector {
		if r.Intn(2) == 0 {
			return &metav1.LabelSelector{MatchLabels: map[string]string{orcLabel + "team": oracleTeams[r.Intn(len(oracleTeams))]}}
		}
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: orcLabel + "team", Operator: metav1.LabelSelectorOpIn, Values: someOf(r, oracleTeams)}}}
	}
	switch r.Intn(10) {
	case 0, 1, 2, 3, 4:
		return nil, nil
	case 5, 6:
		names := [][]string{{c.ns}, {c.other}, {c.ns, c.other}}[r.Intn(3)]
		if r.Intn(4) == 0 {
			return names, team()
		}
		return names, nil
	case 7, 8:
		return nil, team()
	default:
		return nil, &metav1.LabelSelector{}
	}
}

// covers: whether a term of a pod in owner with these namespaces reaches namespace ns.
func (c *oracleCluster) covers(owner string, names []string, sel *metav1.LabelSelector, ns string) bool {
	if len(names) == 0 && sel == nil {
		return ns == owner
	}
	for _, n := range names {
		if n == ns {
			return true
		}
	}
	return sel != nil && selectorMatches(sel, c.nsLabels[ns])
}

// genTopologyKey: the hostname, the generator's zone label or the well-known zone label
// (absent on a few nodes).
func genTopologyKey(r *rand.Rand) string {
	switch r.Intn(5) {
	case 0, 1:
		return k8sv1.LabelHostname
	case 2, 3:
		return orcLabel + "zone"
	default:
		return k8sv1.LabelTopologyZone
	}
}

// sameDomain: both nodes have the topology key, with the same value.
func sameDomain(key string, a, b *oracleNode) bool {
	va, oka := a.labels[key]
	vb, okb := b.labels[key]
	return oka && okb && va == vb
}

// blocksSource: one of pods (already bound when the VMI is scheduled) would fail the
// VMI's required anti-affinity term on the source.
func blocksSource(c *oracleCluster, term k8sv1.PodAffinityTerm, source *oracleNode, pods []*oraclePod) bool {
	for _, p := range pods {
		if sameDomain(term.TopologyKey, p.host, source) && c.covers(c.ns, term.Namespaces, term.NamespaceSelector, p.ns) &&
			selectorMatches(term.LabelSelector, p.labels) {
			return true
		}
	}
	return false
}

// genVMIPodAffinity: 0–2 required podAffinity terms, each with an anchor in the source's
// domain (the VMI's own labels or others; the pod's own, listed or selected namespaces;
// any topology key), 0–2 required podAntiAffinity terms no anchor violates on the source,
// and now and then a preferred term (scoring only, which the oracle ignores; it matches no
// anchor so it cannot pull the VMI off the source).
func genVMIPodAffinity(r *rand.Rand, c *oracleCluster, vmi *virtv1.VirtualMachineInstance, source *oracleNode, nodes []*oracleNode) []*oraclePod {
	var anchors []*oraclePod
	aff, anti := &k8sv1.PodAffinity{}, &k8sv1.PodAntiAffinity{}
	affinityTerms := r.Intn(3)
	if c.spread {
		// Spread probes are pinned by a required podAffinity term (probePlan), and the
		// scheduler counts an existing pod toward the affinity terms only when it matches
		// every one of them (interpodaffinity updateWithAffinityTerms): with the pin among
		// them no pod would count, and the VMI's own terms would change verdict.
		affinityTerms = 0
	}
	// The scheduler counts an existing pod toward the VMI's affinity only when it matches
	// every required term (interpodaffinity updateWithAffinityTerms), so the anchors all
	// carry one label set every term selects, in a namespace every term covers.
	want := vmi.Labels
	if r.Intn(3) > 0 {
		want = genPodLabels(r)
	}
	var terms []k8sv1.PodAffinityTerm
	for i := affinityTerms; i > 0; i-- {
		terms = append(terms, k8sv1.PodAffinityTerm{LabelSelector: genPodSelector(r, want, false), TopologyKey: genTopologyKey(r)})
	}
	var reach []string // the namespaces every term covers
	for try := 0; len(terms) > 0 && len(reach) == 0; try++ {
		for i := range terms {
			terms[i].Namespaces, terms[i].NamespaceSelector = nil, nil
			if try < 50 {
				terms[i].Namespaces, terms[i].NamespaceSelector = genNamespaces(r, c)
			}
		}
		for _, ns := range []string{c.ns, c.other} {
			all := true
			for _, term := range terms {
				all = all && c.covers(c.ns, term.Namespaces, term.NamespaceSelector, ns)
			}
			if all {
				reach = append(reach, ns)
			}
		}
	}
	for _, term := range terms {
		var hosts []*oracleNode // the source's domain; the source has every topology key
		for _, n := range nodes {
			if sameDomain(term.TopologyKey, n, source) {
				hosts = append(hosts, n)
			}
		}
		anchors = append(anchors, &oraclePod{kind: "anchor", ns: reach[r.Intn(len(reach))],
			host: hosts[r.Intn(len(hosts))], labels: copyLabels(want)})
		aff.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.RequiredDuringSchedulingIgnoredDuringExecution, term)
	}
	for i := r.Intn(3); i > 0; i-- {
		var want map[string]string
		if r.Intn(2) == 0 {
			want = vmi.Labels
		}
		term := k8sv1.PodAffinityTerm{TopologyKey: genTopologyKey(r)}
		term.Namespaces, term.NamespaceSelector = genNamespaces(r, c)
		term.LabelSelector = genPodSelector(r, want, term.NamespaceSelector == nil)
		if blocksSource(c, term, source, anchors) {
			continue
		}
		anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, term)
	}
	if r.Intn(4) == 0 {
		sel := genPodSelector(r, nil, false)
		matches := false
		for _, a := range anchors {
			matches = matches || selectorMatches(sel, a.labels)
		}
		if !matches {
			w := k8sv1.WeightedPodAffinityTerm{Weight: int32(1 + r.Intn(100)),
				PodAffinityTerm: k8sv1.PodAffinityTerm{LabelSelector: sel, TopologyKey: genTopologyKey(r)}}
			if r.Intn(2) == 0 {
				aff.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.PreferredDuringSchedulingIgnoredDuringExecution, w)
			} else {
				anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution, w)
			}
		}
	}
	if len(aff.RequiredDuringSchedulingIgnoredDuringExecution)+len(aff.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		ensureAffinity(vmi).PodAffinity = aff
	}
	if len(anti.RequiredDuringSchedulingIgnoredDuringExecution)+len(anti.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		ensureAffinity(vmi).PodAntiAffinity = anti
	}
	return anchors
}

// genVMISpread: 1–2 topology spread constraints: DoNotSchedule (now and then
// ScheduleAnyway, which filters nothing), maxSkew 1–2, any topology key, a selector mostly
// of the VMI's own labels, sometimes minDomains, each inclusion policy unset, Honor or
// Ignore. One the source would fail (anchors counted) is dropped.
func genVMISpread(r *rand.Rand, c *oracleCluster, vmi *virtv1.VirtualMachineInstance, source *oracleNode, anchors []*oraclePod) {
	policy := func() *k8sv1.NodeInclusionPolicy {
		switch r.Intn(3) {
		case 0:
			return nil
		case 1:
			return ptrTo(k8sv1.NodeInclusionPolicyHonor)
		default:
			return ptrTo(k8sv1.NodeInclusionPolicyIgnore)
		}
	}
	seen := map[string]bool{} // (topologyKey, whenUnsatisfiable) is unique
	for i := 1 + r.Intn(2); i > 0; i-- {
		when := k8sv1.DoNotSchedule
		if r.Intn(5) == 0 {
			when = k8sv1.ScheduleAnyway
		}
		var want map[string]string
		if r.Intn(4) > 0 {
			want = vmi.Labels
		}
		tsc := k8sv1.TopologySpreadConstraint{MaxSkew: int32(1 + r.Intn(2)), TopologyKey: genTopologyKey(r),
			WhenUnsatisfiable: when, LabelSelector: genPodSelector(r, want, false)}
		if when == k8sv1.DoNotSchedule && r.Intn(3) == 0 {
			tsc.MinDomains = ptrTo(int32(1 + r.Intn(5)))
		}
		tsc.NodeAffinityPolicy, tsc.NodeTaintsPolicy = policy(), policy()
		key := tsc.TopologyKey + "/" + string(when)
		if seen[key] || !spreadAllowsSource(c, tsc, vmi, source, anchors) {
			continue
		}
		seen[key] = true
		vmi.Spec.TopologySpreadConstraints = append(vmi.Spec.TopologySpreadConstraints, tsc)
	}
}

// spreadAllowsSource: with the anchors the only pods bound in the VMI's namespace when the
// VMI is scheduled, the source's skew (its domain's count, plus one when the VMI matches,
// minus a minimum that is at least 0) stays within maxSkew. A ScheduleAnyway constraint
// only scores; it may select no anchor, so that it cannot pull the VMI off the source.
func spreadAllowsSource(c *oracleCluster, tsc k8sv1.TopologySpreadConstraint, vmi *virtv1.VirtualMachineInstance, source *oracleNode, anchors []*oraclePod) bool {
	count := 0
	for _, a := range anchors {
		if a.ns == c.ns && selectorMatches(tsc.LabelSelector, a.labels) &&
			(tsc.WhenUnsatisfiable == k8sv1.ScheduleAnyway || sameDomain(tsc.TopologyKey, a.host, source)) {
			count++
		}
	}
	if tsc.WhenUnsatisfiable == k8sv1.ScheduleAnyway {
		return count == 0
	}
	if selectorMatches(tsc.LabelSelector, vmi.Labels) {
		count++
	}
	return count <= int(tsc.MaxSkew)
}

func ensureAffinity(vmi *virtv1.VirtualMachineInstance) *k8sv1.Affinity {
	if vmi.Spec.Affinity == nil {
		vmi.Spec.Affinity = &k8sv1.Affinity{}
	}
	return vmi.Spec.Affinity
}

// genPlacedPods, after the VMI started: 0–2 tags per node (labels the VMI's terms and
// constraints select or others, in the VMI's namespace or the other one; with inter-pod
// features about three per cluster with a required anti-affinity term, mostly toward the
// VMI's labels), and with spread constraints a pin per node (probePlan).
func genPlacedPods(r *rand.Rand, c *oracleCluster, vmi *virtv1.VirtualMachineInstance, nodes []*oracleNode) {
	if !c.labelled() {
		return
	}
	for _, n := range nodes {
		if c.spread {
			n.placed = append(n.placed, &oraclePod{kind: "pin", name: "pin-" + n.name, ns: c.scratch, host: n,
				labels: map[string]string{pinLabel: n.name}})
		}
		for j := r.Intn(3); j > 0; j-- {
			p := &oraclePod{kind: "tag", name: fmt.Sprintf("tag-%s-%d", n.name, j), ns: c.ns, host: n}
			if r.Intn(4) == 0 {
				p.ns = c.other
			}
			if r.Intn(2) == 0 {
				p.labels = copyLabels(vmi.Labels)
			} else {
				p.labels = genPodLabels(r)
			}
			// About three per cluster: each one toward the VMI with a zone key rules out a
			// whole zone, and a third of all tags left no node to fit in most clusters.
			if c.interPod && r.Intn(len(nodes)) < 3 {
				var want map[string]string
				if r.Intn(5) < 3 {
					want = vmi.Labels
				}
				term := k8sv1.PodAffinityTerm{TopologyKey: genTopologyKey(r)}
				term.Namespaces, term.NamespaceSelector = genNamespaces(r, c)
				term.LabelSelector = genPodSelector(r, want, term.NamespaceSelector == nil)
				p.anti = []k8sv1.PodAffinityTerm{term}
			}
			n.placed = append(n.placed, p)
		}
	}
}

// placeFillers turns the sized fillers into placed pods; in labelled clusters some get
// labels and some live in the other namespace.
func placeFillers(r *rand.Rand, c *oracleCluster, vmi *virtv1.VirtualMachineInstance, nodes []*oracleNode) {
	for _, n := range nodes {
		for j, rl := range n.fillers {
			p := &oraclePod{kind: "filler", name: fmt.Sprintf("fill-%s-%d", n.name, j), ns: c.ns, host: n, requests: rl}
			if c.labelled() {
				switch r.Intn(4) {
				case 0:
					p.labels = copyLabels(vmi.Labels)
				case 1:
					p.labels = genPodLabels(r)
				}
				if r.Intn(4) == 0 {
					p.ns = c.other
				}
			}
			n.placed = append(n.placed, p)
		}
	}
}

// --- generation: volumes ---

// oracleVolume: a ReadWriteMany claim of the VMI, bound both ways to its PV (what the PV
// controller would write: claimRef, volumeName, bind-completed, phases Bound; there is no
// kube-controller-manager PV controller here), and what breaks it once the VMI runs.
type oracleVolume struct {
	pvc   *k8sv1.PersistentVolumeClaim
	pv    *k8sv1.PersistentVolume
	fault string // "", "claim-missing", "claim-unbound" (recreated without a volume), "pv-missing"
}

func (v *oracleVolume) describeFault() string {
	if v.fault == "" {
		return "bound"
	}
	return v.fault
}

// genOracleVolumes: 1–2 PVC volumes (a virtio disk each). Each PV has, mostly, a required
// node affinity (zone In, hostname In, both ORed or ANDed with a hostname NotIn) and
// sometimes zone/region labels (VolumeZone; the beta zone label too), all of which the
// source meets. One claim in ten breaks after the VMI started.
func genOracleVolumes(r *rand.Rand, c *oracleCluster, vmi *virtv1.VirtualMachineInstance, source *oracleNode, nodes []*oracleNode) []*oracleVolume {
	var vols []*oracleVolume
	size := resource.MustParse("1Gi")
	for i, n := 0, 1+r.Intn(2); i < n; i++ {
		claim, pvName := fmt.Sprintf("data-%d", i), fmt.Sprintf("%s-pv-%d", c.pool, i)
		rwx := []k8sv1.PersistentVolumeAccessMode{k8sv1.ReadWriteMany}
		v := &oracleVolume{
			pvc: &k8sv1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claim, Annotations: map[string]string{bindCompletedAnn: "yes"}},
				Spec: k8sv1.PersistentVolumeClaimSpec{
					AccessModes:      rwx,
					Resources:        k8sv1.VolumeResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceStorage: size}},
					StorageClassName: ptrTo(""),
					VolumeName:       pvName,
					VolumeMode:       ptrTo(k8sv1.PersistentVolumeFilesystem),
				},
			},
			pv: &k8sv1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{"kmt-e2e/pool": c.pool}},
				Spec: k8sv1.PersistentVolumeSpec{
					Capacity:                      k8sv1.ResourceList{k8sv1.ResourceStorage: size},
					AccessModes:                   rwx,
					PersistentVolumeReclaimPolicy: k8sv1.PersistentVolumeReclaimRetain,
					StorageClassName:              "",
					VolumeMode:                    ptrTo(k8sv1.PersistentVolumeFilesystem),
					PersistentVolumeSource: k8sv1.PersistentVolumeSource{NFS: &k8sv1.NFSVolumeSource{
						Server: "192.0.2.1", Path: "/export/" + pvName}}, // never mounted: no kubelet
					ClaimRef:     &k8sv1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.ns, Name: claim},
					NodeAffinity: genPVNodeAffinity(r, source, nodes),
				},
			},
		}
		addPVZoneLabels(r, v.pv, source)
		if r.Intn(10) == 0 {
			v.fault = []string{"claim-missing", "claim-unbound", "pv-missing"}[r.Intn(3)]
		}
		vols = append(vols, v)
		disk := fmt.Sprintf("data%d", i)
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: disk,
			DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: disk, VolumeSource: virtv1.VolumeSource{
			PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}})
	}
	return vols
}

// genPVNodeAffinity: nil, or terms of which one holds on the source.
func genPVNodeAffinity(r *rand.Rand, source *oracleNode, nodes []*oracleNode) *k8sv1.VolumeNodeAffinity {
	zoneIn := func(holds bool) k8sv1.NodeSelectorRequirement {
		key := []string{orcLabel + "zone", k8sv1.LabelTopologyZone}[r.Intn(2)]
		var values []string
		for _, z := range oracleZones {
			if (holds && z == source.labels[key]) || r.Intn(2) == 0 {
				values = append(values, z)
			}
		}
		if len(values) == 0 {
			values = []string{oracleZones[r.Intn(len(oracleZones))]}
		}
		return k8sv1.NodeSelectorRequirement{Key: key, Operator: k8sv1.NodeSelectorOpIn, Values: values}
	}
	hostnames := func(withSource bool) []string {
		var names []string
		for _, n := range nodes {
			if (withSource && n == source) || (n != source && r.Intn(3) == 0) {
				names = append(names, n.name)
			}
		}
		return names
	}
	var terms []k8sv1.NodeSelectorTerm
	switch r.Intn(7) {
	case 0:
		return nil
	case 1, 2:
		terms = []k8sv1.NodeSelectorTerm{{MatchExpressions: []k8sv1.NodeSelectorRequirement{zoneIn(true)}}}
	case 3, 4:
		terms = []k8sv1.NodeSelectorTerm{framework.HostnameTerm(hostnames(true)...)}
	case 5: // ORed: the hostname term holds on the source
		terms = []k8sv1.NodeSelectorTerm{{MatchExpressions: []k8sv1.NodeSelectorRequirement{zoneIn(false)}},
			framework.HostnameTerm(hostnames(true)...)}
	default: // ANDed
		t := k8sv1.NodeSelectorTerm{MatchExpressions: []k8sv1.NodeSelectorRequirement{zoneIn(true)}}
		if others := hostnames(false); len(others) > 0 {
			t.MatchExpressions = append(t.MatchExpressions, k8sv1.NodeSelectorRequirement{
				Key: k8sv1.LabelHostname, Operator: k8sv1.NodeSelectorOpNotIn, Values: others})
		}
		terms = []k8sv1.NodeSelectorTerm{t}
	}
	return &k8sv1.VolumeNodeAffinity{Required: &k8sv1.NodeSelector{NodeSelectorTerms: terms}}
}

// addPVZoneLabels: sometimes the zone label (a set "a__c" now and then, as multi-zone
// volumes carry it), the beta zone label, or zone and region; always with the source's
// values among them.
func addPVZoneLabels(r *rand.Rand, pv *k8sv1.PersistentVolume, source *oracleNode) {
	zones := func() string {
		var set []string
		for _, z := range oracleZones {
			if z == source.labels[k8sv1.LabelTopologyZone] || r.Intn(3) == 0 {
				set = append(set, z)
			}
		}
		return strings.Join(set, "__")
	}
	switch r.Intn(6) {
	case 0, 1:
		pv.Labels[k8sv1.LabelTopologyZone] = zones()
	case 2:
		pv.Labels[k8sv1.LabelFailureDomainBetaZone] = zones()
	case 3:
		pv.Labels[k8sv1.LabelTopologyZone] = zones()
		pv.Labels[k8sv1.LabelTopologyRegion] = source.labels[k8sv1.LabelTopologyRegion]
	}
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
		if strings.HasPrefix(k, orcLabel) || strings.HasPrefix(k, "topology.kubernetes.io/") || k == schedulableLabel {
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

// describePlaced: the pods the test bound to the node, one a line.
func describePlaced(n *oracleNode) string {
	if len(n.placed) == 0 {
		return " none"
	}
	var b strings.Builder
	for _, p := range n.placed {
		b.WriteString("\n    " + p.String())
	}
	return b.String()
}

// describeOracleCluster: everything a replay needs to read beside the seed: the VMI, the
// namespaces' labels, every node with its pods.
func describeOracleCluster(c *oracleCluster, vmi *virtv1.VirtualMachineInstance, nodes []*oracleNode, vols []*oracleVolume) string {
	var b strings.Builder
	for _, v := range vols {
		fmt.Fprintf(&b, "claim %s (%s): %s\nPV %s: labels %v spec %s status %s\n", v.pvc.Name, v.describeFault(),
			framework.ToJSON(map[string]any{"annotations": v.pvc.Annotations, "spec": v.pvc.Spec, "status": v.pvc.Status}),
			v.pv.Name, v.pv.Labels, framework.ToJSON(v.pv.Spec), framework.ToJSON(v.pv.Status))
	}
	fmt.Fprintf(&b, "VMI %s/%s labels %v spec: %s\n", c.ns, vmi.Name, vmi.Labels, framework.ToJSON(vmi.Spec))
	fmt.Fprintf(&b, "namespaces: VMI %s, other %q, scratch %s (pins %t); labels %v\n", c.ns, c.other, c.scratch, c.spread, c.nsLabels)
	for _, n := range nodes {
		fmt.Fprintf(&b, "node %s: %s; pods:%s\n", n.name, describeOracleNode(n), describePlaced(n))
	}
	return b.String()
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

// createPlaced creates every placed pod not created yet, bound to its node.
func createPlaced(t *testing.T, f *framework.Framework, pool string, nodes []*oracleNode) {
	t.Helper()
	for _, n := range nodes {
		for _, p := range n.placed {
			if p.created {
				continue
			}
			l := copyLabels(p.labels)
			l[fillerLabel] = pool
			pod := &k8sv1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: l},
				Spec: k8sv1.PodSpec{
					NodeName:                      n.name,
					TerminationGracePeriodSeconds: ptrTo(int64(0)),
					Containers: []k8sv1.Container{{Name: "filler", Image: "kmt-e2e/filler:none",
						Resources: k8sv1.ResourceRequirements{Requests: p.requests}}},
				},
			}
			if len(p.anti) > 0 {
				pod.Spec.Affinity = &k8sv1.Affinity{PodAntiAffinity: &k8sv1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: p.anti}}
			}
			if _, err := f.Admin.Kube.CoreV1().Pods(p.ns).Create(framework.Ctx(t), pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s on %s: %v", p, n.name, err)
			}
			p.created = true
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// waitPlacedRunning waits until every pod created by createPlaced runs (the fake kubelet
// saw it, so kube-scheduler's cache has it too).
func waitPlacedRunning(t *testing.T, f *framework.Framework, pool string, nodes []*oracleNode) {
	t.Helper()
	want := 0
	for _, n := range nodes {
		for _, p := range n.placed {
			if p.created {
				want++
			}
		}
	}
	framework.Eventually(t, time.Minute, "placed pods Running", func() (bool, string) {
		list, err := f.Admin.Kube.CoreV1().Pods(k8sv1.NamespaceAll).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: fillerLabel + "=" + pool})
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

// createOracleVolume creates the claim and its PV bound both ways, with the statuses the
// PV controller would write. The admission plugin StorageObjectInUseProtection adds
// finalizers nothing here removes: the cleanups drop them before deleting.
func createOracleVolume(t *testing.T, f *framework.Framework, ns string, v *oracleVolume) {
	t.Helper()
	ctx := framework.Ctx(t)
	core := f.Admin.Kube.CoreV1()
	pvc, err := core.PersistentVolumeClaims(ns).Create(ctx, v.pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create claim %s: %v", v.pvc.Name, err)
	}
	name := pvc.Name
	t.Cleanup(func() {
		if err := removeObject[*k8sv1.PersistentVolumeClaim](t, core.PersistentVolumeClaims(ns), name); err != nil {
			t.Logf("cleanup: claim %v", err)
		}
	})
	pvc.Status = k8sv1.PersistentVolumeClaimStatus{Phase: k8sv1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: k8sv1.ResourceList{k8sv1.ResourceStorage: pvc.Spec.Resources.Requests[k8sv1.ResourceStorage]}}
	if v.pvc, err = core.PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("bind claim %s: %v", name, err)
	}
	v.pv.Spec.ClaimRef.UID = v.pvc.UID
	pv, err := core.PersistentVolumes().Create(ctx, v.pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PV %s: %v", v.pv.Name, err)
	}
	pvName := pv.Name
	t.Cleanup(func() {
		if err := removeObject[*k8sv1.PersistentVolume](t, core.PersistentVolumes(), pvName); err != nil {
			t.Logf("cleanup: PV %v", err)
		}
	})
	pv.Status.Phase = k8sv1.VolumeBound
	if v.pv, err = core.PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("bind PV %s: %v", pvName, err)
	}
}

// breakOracleVolume applies the volume's fault: the claim deleted, the claim recreated
// unbound (no volumeName, phase Pending), or the PV deleted.
func breakOracleVolume(t *testing.T, f *framework.Framework, ns string, v *oracleVolume) {
	t.Helper()
	core := f.Admin.Kube.CoreV1()
	var err error
	switch v.fault {
	case "claim-missing":
		err = removeObject[*k8sv1.PersistentVolumeClaim](t, core.PersistentVolumeClaims(ns), v.pvc.Name)
	case "pv-missing":
		err = removeObject[*k8sv1.PersistentVolume](t, core.PersistentVolumes(), v.pv.Name)
	case "claim-unbound":
		if err = removeObject[*k8sv1.PersistentVolumeClaim](t, core.PersistentVolumeClaims(ns), v.pvc.Name); err != nil {
			break
		}
		pvc := &k8sv1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: v.pvc.Name}, Spec: *v.pvc.Spec.DeepCopy()}
		pvc.Spec.VolumeName = ""
		created, err := core.PersistentVolumeClaims(ns).Create(framework.Ctx(t), pvc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("recreate claim %s unbound: %v", pvc.Name, err)
		}
		v.pvc = created
	}
	if err != nil {
		t.Fatalf("break volume (%s): %v", v.fault, err)
	}
}

// removable: the typed clients of PVCs and PVs, as removeObject uses them.
type removable[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// removeObject drops the object's finalizers (no controller here would), deletes it and
// waits until it is gone; absent already is fine.
func removeObject[T any](t *testing.T, c removable[T], name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop finalizers of %s: %w", name, err)
	}
	if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	for {
		_, err := c.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s still there: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// probePod: the target pod, pinned to one node, in plan.ns. Only what cannot change a
// filter's verdict is changed: name, namespace, owner, KubeVirt's labels (so neither
// virt-controller, the operator's webhook nor the fake agent take it for a VM's pod; no
// generated selector reads a kubevirt.io label), the gates; in another namespace than the
// VMI's, pod (anti-)affinity terms that named no namespace get the VMI's. The VMI's labels
// stay: the pods' terms and the VMI's own select them.
//
// plan.pinByPod pins with a required podAffinity term toward the node's pin pod instead
// of matchFields. It changes no other verdict: spreading ignores pod affinity; the pins
// carry no label a generated term selects beside NotIn/DoesNotExist ones, which see them as
// what they are, bound pods; and the escape for a pod that is the first of its kind
// (satisfyPodAffinity: no pod matches any term, the pod matches all its own) never applies
// to the target pod anyway, since the source's launcher pod carries the same labels in the
// same namespace on a node with every topology key.
func probePod(target *k8sv1.Pod, vmiNS string, plan probePlan, node string, term k8sv1.NodeSelectorTerm) *k8sv1.Pod {
	spec := target.Spec.DeepCopy()
	spec.NodeName = ""
	spec.SchedulingGates = nil
	if spec.Affinity == nil {
		spec.Affinity = &k8sv1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &k8sv1.NodeAffinity{}
	}
	req := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		req = &k8sv1.NodeSelector{NodeSelectorTerms: []k8sv1.NodeSelectorTerm{{}}}
	}
	pin := k8sv1.NodeSelectorRequirement{Key: "metadata.name", Operator: k8sv1.NodeSelectorOpIn, Values: []string{node}}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, term.MatchExpressions...)
		t.MatchFields = append(t.MatchFields, term.MatchFields...)
		if !plan.pinByPod {
			t.MatchFields = append(t.MatchFields, pin)
		}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = req
	if plan.pinByPod {
		if spec.Affinity.PodAffinity == nil {
			spec.Affinity.PodAffinity = &k8sv1.PodAffinity{}
		}
		pa := spec.Affinity.PodAffinity
		pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution,
			k8sv1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{pinLabel: node}},
				Namespaces:    []string{plan.pinNS},
				TopologyKey:   k8sv1.LabelHostname,
			})
	}
	if plan.ns != vmiNS {
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
	}
	labels := map[string]string{probeLabel: "true"}
	for k, v := range target.Labels {
		if !strings.HasPrefix(k, "kubevirt.io") {
			labels[k] = v
		}
	}
	return &k8sv1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + node, Namespace: plan.ns, Labels: labels}, Spec: *spec}
}

type probeResult struct {
	fits    bool
	boundTo string
	message string
}

func (p probeResult) verdict() string {
	if p.fits {
		return "binds the probe there"
	}
	return "finds it unschedulable"
}

// probeDecided: bound, or PodScheduled=False as kube-scheduler writes it after a failed
// attempt (Unschedulable; SchedulerError when a plugin failed, kept in the message).
func probeDecided(p *k8sv1.Pod) (probeResult, bool) {
	if p.Spec.NodeName != "" {
		return probeResult{fits: true, boundTo: p.Spec.NodeName}, true
	}
	c := framework.PodCondition(p, k8sv1.PodScheduled)
	if c != nil && c.Status == k8sv1.ConditionFalse &&
		(c.Reason == k8sv1.PodReasonUnschedulable || c.Reason == k8sv1.PodReasonSchedulerError) {
		msg := c.Message
		if c.Reason != k8sv1.PodReasonUnschedulable {
			msg = c.Reason + ": " + msg
		}
		return probeResult{message: msg}, true
	}
	return probeResult{}, false
}

// waitProbes waits until every probe is bound or marked Unschedulable.
func waitProbes(t *testing.T, f *framework.Framework, ns string, probes map[string]*k8sv1.Pod) map[string]probeResult {
	t.Helper()
	out := map[string]probeResult{}
	framework.Eventually(t, oracleProbeWait, "every probe bound or Unschedulable", func() (bool, string) {
		list, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{LabelSelector: probeLabel + "=true"})
		if err != nil {
			return false, err.Error()
		}
		var pending []string
		for i := range list.Items {
			p := &list.Items[i]
			node := strings.TrimPrefix(p.Name, "probe-")
			res, ok := probeDecided(p)
			if !ok {
				pending = append(pending, p.Name)
				continue
			}
			if res.fits && res.boundTo != node {
				t.Fatalf("probe %s bound to %s, not its node", p.Name, res.boundTo)
			}
			out[node] = res
		}
		return len(pending) == 0 && len(out) == len(probes), fmt.Sprintf("undecided: %v", pending)
	})
	return out
}

// probeOnce creates the probe, waits (watching it) until it is bound or Unschedulable,
// deletes it and waits until it is gone: the next probe is scheduled as if it had never
// been there.
func probeOnce(t *testing.T, f *framework.Framework, p *k8sv1.Pod, node string) probeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), oracleOneProbe)
	defer cancel()
	pods := f.Admin.Kube.CoreV1().Pods(p.Namespace)
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create probe for %s: %v\n%s", node, err, framework.ToJSON(p))
	}
	res, err := awaitProbe(ctx, pods, created)
	if err != nil {
		t.Fatalf("probe %s/%s: %v", p.Namespace, p.Name, err)
	}
	if res.fits && res.boundTo != node {
		t.Fatalf("probe %s bound to %s, not its node", p.Name, res.boundTo)
	}
	err = pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0)),
		Preconditions: &metav1.Preconditions{UID: &created.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete probe %s/%s: %v", p.Namespace, p.Name, err)
	}
	framework.Eventually(t, 30*time.Second, "probe "+p.Name+" gone", func() (bool, string) {
		_, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "still there"
	})
	if res.fits {
		time.Sleep(oracleSettle)
	}
	return res
}

// awaitProbe watches the probe from its creation until probeDecided; a watch that ends
// early is picked up again from a fresh read.
func awaitProbe(ctx context.Context, pods corev1client.PodInterface, created *k8sv1.Pod) (probeResult, error) {
	p := created
	for {
		if res, ok := probeDecided(p); ok {
			return res, nil
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", p.Name).String(),
			ResourceVersion: p.ResourceVersion,
		})
		if err != nil {
			return probeResult{}, err
		}
		for ev := range w.ResultChan() {
			if q, ok := ev.Object.(*k8sv1.Pod); ok && ev.Type != watch.Deleted {
				if res, ok := probeDecided(q); ok {
					w.Stop()
					return res, nil
				}
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return probeResult{}, fmt.Errorf("neither bound nor Unschedulable within %s: %w", oracleOneProbe, err)
		}
		if p, err = pods.Get(ctx, created.Name, metav1.GetOptions{}); err != nil {
			return probeResult{}, err
		}
	}
}

// deleteAll deletes the pods in ns that the label selector selects.
func deleteAll(t *testing.T, f *framework.Framework, ns, selector string) {
	t.Helper()
	err := f.Admin.Kube.CoreV1().Pods(ns).DeleteCollection(framework.Ctx(t),
		metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Logf("delete pods %q in %s: %v", selector, ns, err)
	}
}

// wipePods deletes every pod in the namespaces (the VMI's launcher pod too) and waits until
// they are gone.
func wipePods(t *testing.T, f *framework.Framework, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		deleteAll(t, f, ns, "")
	}
	framework.Eventually(t, time.Minute, "pods of the cluster gone", func() (bool, string) {
		var left []string
		for _, ns := range namespaces {
			list, err := f.Admin.Kube.CoreV1().Pods(ns).List(framework.Ctx(t), metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range list.Items {
				left = append(left, ns+"/"+p.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
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
