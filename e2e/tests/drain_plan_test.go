package tests

// Issue 39 §3: the drain plan (`kubectl migrate policy explain NODE`) against a real drain.
// Random clusters: a source node holding VMs of a few classes, each class with its own rack
// of fake nodes (random allocatable cpu, memory and pod count, filler pods bound there,
// cordons, taints the VMs do not tolerate), an evictionStrategy (LiveMigrate,
// LiveMigrateIfPossible, None, None under a PodDisruptionBudget that allows no
// disruption), and often a MigrationTargetPolicy whose term leaves out some of the rack
// and may set maxInboundPerNode. The plugin's plan is read (-o json), then the source node
// is drained for real with `kubectl drain`: virt-api turns the evictions of migratable VMs
// into evacuation migrations, the operator attaches the policies, kube-scheduler places
// the target pods, KubeVirt's virt-controller migrates. Every VM's fate is then read from
// the cluster — left (running on another node), stayed (still on the source: its
// evacuation's target pod Unschedulable, or its eviction refused by the PDB) or shut down
// (the VMI final) — and compared with the plan's.
//
// What is compared, and why per class: the VMs of one class are identical (same requests,
// labels, policy) and no other class can use their rack (a node label the class's VMIs
// select), and KubeVirt creates a node's evacuations concurrently (its order is not
// deterministic; the plan's order is by name). When a rack takes only some of a class, which
// ones go is the race's, not a verdict: so the plan and the drain must agree, per class, on
// how many VMs leave, stay (by reason) and are shut down, and every VM that left must be on a
// node the plan found fitting for its class. With identical VMs and disjoint racks the number
// that fit does not depend on the node the scheduler picks for each, so this is exact.
//
// KMT_DRAIN_SEED replays a run; KMT_DRAIN_VMS (default 200) is the least number of VMs
// compared, over rounds of up to 100 VMs whose clusters are drained at the same time.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	resourcehelper "k8s.io/component-helpers/resource"

	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

const (
	drainClassLabel = "kmt-drain/class" // on VMIs (and so their pods): the class name
	drainRackLabel  = "kmt-drain/rack-" // + class: "yes" on the source and the class's rack
	drainSlotLabel  = "kmt-drain/slot"  // on rack nodes: the node's index, for policy terms
	drainTaintKey   = "kmt-drain/taint" // a taint no VM tolerates
	drainRoundMax   = 100               // VMs per round at most
	drainSettle     = 4 * time.Minute   // from the drains' start until every VM has a fate
	drainTimeout    = "150s"            // kubectl drain --timeout (killed once all have a fate)
)

type drainStrategy string

const (
	drainLiveMigrate   drainStrategy = "LiveMigrate"
	drainIfPossible    drainStrategy = "LiveMigrateIfPossible"
	drainNone          drainStrategy = "None"
	drainNoneWithPDB   drainStrategy = "None+PDB"
	drainBindCPU                     = "cpu"
	drainBindMemory                  = "memory"
	drainBindPods                    = "pods"
	drainFateLeaves                  = "leaves"
	drainFateShutDown                = "shut down"
	drainReasonNoPlace               = "stays: no node left"
	drainReasonPDB                   = "stays: PodDisruptionBudget"
)

type drainNode struct {
	name    string
	slot    int
	slots   int    // target pods of its class it takes (capacity, before cordon/taint/term)
	bind    string // the resource that runs out: cpu, memory or pods
	cordon  bool
	taint   bool
	fillers []k8sv1.ResourceList
}

type drainClass struct {
	name       string
	strategy   drainStrategy
	vms        []string
	cpu        string // the VMI's cpu request ("" none)
	mem        string
	rack       []*drainNode
	policy     bool
	excluded   []int // slots the policy's term leaves out
	maxInbound int   // 0: none
}

type drainCluster struct {
	pool, ns, source string
	classes          []*drainClass
}

func (c *drainCluster) vmCount() int {
	n := 0
	for _, k := range c.classes {
		n += len(k.vms)
	}
	return n
}

func genDrainCluster(r *rand.Rand, pool string) *drainCluster {
	c := &drainCluster{pool: pool, source: pool + "-src"}
	for i, n := 0, 2+r.Intn(3); i < n; i++ {
		k := &drainClass{name: fmt.Sprintf("c%d", i)}
		switch x := r.Intn(20); {
		case x < 9:
			k.strategy = drainLiveMigrate
		case x < 13:
			k.strategy = drainIfPossible
		case x < 17:
			k.strategy = drainNone
		default:
			k.strategy = drainNoneWithPDB
		}
		for j, m := 0, 2+r.Intn(9); j < m; j++ {
			k.vms = append(k.vms, fmt.Sprintf("vm-%s-%d", k.name, j))
		}
		k.mem = []string{"256Mi", "512Mi", "1Gi"}[r.Intn(3)]
		k.cpu = []string{"", "100m", "500m"}[r.Intn(3)]
		for j, m := 0, 1+r.Intn(3); j < m; j++ {
			d := &drainNode{name: fmt.Sprintf("%s-%s-%d", pool, k.name, j), slot: j, slots: r.Intn(4),
				bind:   []string{drainBindCPU, drainBindMemory, drainBindPods}[r.Intn(3)],
				cordon: r.Intn(10) == 0, taint: r.Intn(10) == 0}
			for f := r.Intn(3); f > 0; f-- {
				d.fillers = append(d.fillers, k8sv1.ResourceList{
					k8sv1.ResourceCPU:    *resource.NewMilliQuantity(int64(100*(1+r.Intn(5))), resource.DecimalSI),
					k8sv1.ResourceMemory: *resource.NewQuantity(int64(64<<20)*int64(1+r.Intn(8)), resource.BinarySI)})
			}
			k.rack = append(k.rack, d)
		}
		if k.strategy == drainLiveMigrate || k.strategy == drainIfPossible {
			k.policy = r.Intn(10) < 7
		}
		if k.policy {
			for _, d := range k.rack {
				if r.Intn(4) == 0 {
					k.excluded = append(k.excluded, d.slot)
				}
			}
			if r.Intn(4) == 0 {
				k.maxInbound = 1
			}
		}
		c.classes = append(c.classes, k)
	}
	return c
}

func (c *drainCluster) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s (namespace %s), source %s:", c.pool, c.ns, c.source)
	for _, k := range c.classes {
		fmt.Fprintf(&b, "\n  class %s: %d VMs, %s, requests cpu %q memory %s", k.name, len(k.vms), k.strategy, k.cpu, k.mem)
		if k.policy {
			fmt.Fprintf(&b, ", policy excluding slots %v", k.excluded)
			if k.maxInbound > 0 {
				fmt.Fprintf(&b, " maxInboundPerNode %d", k.maxInbound)
			}
		}
		for _, d := range k.rack {
			fmt.Fprintf(&b, "\n    %s: %d slots by %s, %d fillers", d.name, d.slots, d.bind, len(d.fillers))
			if d.cordon {
				b.WriteString(", cordoned")
			}
			if d.taint {
				b.WriteString(", tainted")
			}
		}
	}
	return b.String()
}

func TestDrainPlanAgreesWithDrain(t *testing.T) {
	t.Parallel()
	f := fw(t)
	seed := framework.EnvSeed(t, "KMT_DRAIN_SEED")
	want := framework.EnvInt(t, "KMT_DRAIN_VMS", 200)
	t.Logf("seed %d (replay with KMT_DRAIN_SEED=%d), at least %d VMs", seed, seed, want)
	r := rand.New(rand.NewSource(seed))
	compared, disagreements := 0, 0
	start := time.Now()
	for round := 0; compared < want; round++ {
		var clusters []*drainCluster
		for n := 0; n < drainRoundMax && compared+n < want; {
			c := genDrainCluster(rand.New(rand.NewSource(r.Int63())), fmt.Sprintf("drn-%s-%d", framework.RandomSuffix(), len(clusters)))
			clusters = append(clusters, c)
			n += c.vmCount()
		}
		n := 0
		t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			var d int
			n, d = runDrainRound(t, f, clusters, round)
			compared += n
			disagreements += d
		})
		if n == 0 {
			break // a setup failure, not a verdict
		}
	}
	t.Logf("drain plan vs kubectl drain: %d VMs compared, %d disagreements in %s (seed %d)",
		compared, disagreements, time.Since(start).Round(time.Second), seed)
	if disagreements > 0 {
		t.Errorf("%d disagreements between the drain plan and the drain (seed %d)", disagreements, seed)
	}
}

// drainPlanVM is one VMI of `policy explain -o json`.
type drainPlanVM struct {
	Namespace    string   `json:"namespace"`
	Name         string   `json:"name"`
	Fate         string   `json:"fate"`
	StayReason   *string  `json:"stayReason"`
	AllowedNodes []string `json:"allowedNodes"`
	Policy       *struct {
		Name string `json:"name"`
	} `json:"policy"`
}

func (v drainPlanVM) outcome() string {
	if v.Fate == "stays" && v.StayReason != nil {
		return "stays: " + *v.StayReason
	}
	return v.Fate
}

func runDrainRound(t *testing.T, f *framework.Framework, clusters []*drainCluster, round int) (compared, disagreements int) {
	ctx := framework.Ctx(t)
	// Source nodes first, then every VMI at once: only the source carries the class labels
	// until the racks exist, so the VMIs start there.
	for i, c := range clusters {
		c.ns = f.Namespace(t)
		octet := 150 + (round*8+i)%50
		f.ExtraNode(t, c.source, fmt.Sprintf("192.168.%d.1", octet), func(node *k8sv1.Node) {
			node.Labels["kmt-e2e/pool"] = c.pool
			node.Labels["kmt-drain/source"] = "true"
			for _, k := range c.classes {
				node.Labels[drainRackLabel+k.name] = "yes"
			}
			node.Spec.Taints = append(node.Spec.Taints, poolTaint(c.pool))
			set := func(name k8sv1.ResourceName, q resource.Quantity) {
				node.Status.Allocatable[name] = q
				node.Status.Capacity[name] = q
			}
			set(k8sv1.ResourceCPU, resource.MustParse("200"))
			set(k8sv1.ResourceMemory, resource.MustParse("512Gi"))
			set(k8sv1.ResourcePods, resource.MustParse("250"))
		})
		t.Logf("%s", c)
	}
	for _, c := range clusters {
		for _, k := range c.classes {
			for _, name := range k.vms {
				vmi := framework.NewVMI(name, "", inPool(c.pool),
					framework.WithNodeSelector(map[string]string{drainRackLabel + k.name: "yes"}))
				vmi.Labels = map[string]string{drainClassLabel: k.name}
				s := virtv1.EvictionStrategyNone
				switch k.strategy {
				case drainLiveMigrate:
					s = virtv1.EvictionStrategyLiveMigrate
				case drainIfPossible:
					s = virtv1.EvictionStrategyLiveMigrateIfPossible
				}
				vmi.Spec.EvictionStrategy = &s
				req := k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse(k.mem)}
				if k.cpu != "" {
					req[k8sv1.ResourceCPU] = resource.MustParse(k.cpu)
				}
				vmi.Spec.Domain.Resources.Requests = req
				if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(c.ns).Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create VMI %s/%s: %v", c.ns, name, err)
				}
			}
		}
	}
	for _, c := range clusters {
		for _, k := range c.classes {
			for _, name := range k.vms {
				f.WaitVMIRunning(t, c.ns, name, c.source)
			}
		}
	}

	// Racks sized from the launcher pods' requests as kube-scheduler counts them.
	for i, c := range clusters {
		octet := 150 + (round*8+i)%50
		host := 2
		for _, k := range c.classes {
			src := launcherPodOf(t, f, c.ns, k.vms[0], c.source)
			req := resourcehelper.PodRequests(&src, resourcehelper.PodResourcesOptions{})
			for _, d := range k.rack {
				d := d
				f.ExtraNode(t, d.name, fmt.Sprintf("192.168.%d.%d", octet, host), func(node *k8sv1.Node) {
					node.Labels["kmt-e2e/pool"] = c.pool
					node.Labels[drainRackLabel+k.name] = "yes"
					node.Labels[drainSlotLabel] = fmt.Sprint(d.slot)
					node.Spec.Taints = append(node.Spec.Taints, poolTaint(c.pool))
					if d.taint {
						node.Spec.Taints = append(node.Spec.Taints, k8sv1.Taint{Key: drainTaintKey, Value: "x", Effect: k8sv1.TaintEffectNoSchedule})
					}
					node.Spec.Unschedulable = d.cordon
					sizeDrainNode(node, d, req)
				})
				host++
				for j, fr := range d.fillers {
					pod := &k8sv1.Pod{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%s-%d", d.name, j), Labels: map[string]string{fillerLabel: c.pool}},
						Spec: k8sv1.PodSpec{NodeName: d.name, TerminationGracePeriodSeconds: ptrTo(int64(0)),
							Containers: []k8sv1.Container{{Name: "filler", Image: "kmt-e2e/filler:none",
								Resources: k8sv1.ResourceRequirements{Requests: fr}}}},
					}
					if _, err := f.Admin.Kube.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						t.Fatalf("create filler on %s: %v", d.name, err)
					}
				}
			}
			if k.policy {
				createDrainPolicy(t, f, c, k)
			}
			if k.strategy == drainNoneWithPDB {
				createDrainPDB(t, f, c, k)
			}
		}
	}
	// Fillers running (kube-scheduler has them in its cache) and PDBs computed. The parallel
	// scenarios share the admin client's rate limit: one CI run's wait ran out at 1 minute.
	for _, c := range clusters {
		framework.Eventually(t, 3*time.Minute, "fillers of "+c.pool+" running", func() (bool, string) {
			pods, err := f.Admin.Kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: fillerLabel + "=" + c.pool})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range pods.Items {
				if p.Status.Phase != k8sv1.PodRunning {
					return false, p.Name + " " + string(p.Status.Phase)
				}
			}
			return true, ""
		})
		for _, k := range c.classes {
			if k.strategy != drainNoneWithPDB {
				continue
			}
			framework.Eventually(t, time.Minute, "PDB of "+c.pool+"/"+k.name+" computed", func() (bool, string) {
				pdb, err := f.Admin.Kube.PolicyV1().PodDisruptionBudgets(c.ns).Get(ctx, k.name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				ok := pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == int32(len(k.vms)) &&
					pdb.Status.DisruptionsAllowed == 0
				return ok, fmt.Sprintf("%+v", pdb.Status)
			})
		}
	}

	// The plans.
	plans := map[string]map[string]drainPlanVM{} // pool -> VMI name -> plan
	for _, c := range clusters {
		res := framework.Plugin(t, framework.AdminUser, 2*time.Minute, "policy", "explain", c.source, "-o", "json")
		if res.Code != 0 && res.Code != 3 {
			t.Fatalf("policy explain %s: %s", c.source, res)
		}
		var doc struct {
			VMIs  []drainPlanVM `json:"vmis"`
			Drain struct {
				Staying int `json:"staying"`
			} `json:"drain"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
			t.Fatalf("policy explain %s -o json: %v\n%s", c.source, err, res.Stdout)
		}
		if (res.Code == 3) != (doc.Drain.Staying > 0) {
			t.Errorf("policy explain %s: exit code %d with %d VMs staying (want 3 exactly when some stay)", c.source, res.Code, doc.Drain.Staying)
		}
		plans[c.pool] = map[string]drainPlanVM{}
		for _, v := range doc.VMIs {
			if v.Namespace != c.ns {
				t.Fatalf("policy explain %s: VMI %s/%s is not of this cluster", c.source, v.Namespace, v.Name)
			}
			plans[c.pool][v.Name] = v
		}
		if len(plans[c.pool]) != c.vmCount() {
			t.Fatalf("policy explain %s: %d VMIs, want %d:\n%s", c.source, len(plans[c.pool]), c.vmCount(), res.Stdout)
		}
	}

	// The drains, all at once; each killed once its VMs all have a fate.
	type drainRun struct {
		cancel context.CancelFunc
		mu     sync.Mutex
		out    bytes.Buffer
		done   chan error
	}
	runs := map[string]*drainRun{}
	started := time.Now()
	for _, c := range clusters {
		dctx, cancel := context.WithCancel(context.Background())
		run := &drainRun{cancel: cancel, done: make(chan error, 1)}
		cmd := exec.CommandContext(dctx, framework.Kubectl(), "--kubeconfig", framework.KubeconfigOf(framework.AdminUser),
			"drain", c.source, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatalf("kubectl drain %s: %v", c.source, err)
		}
		pw.Close()
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				run.mu.Lock()
				run.out.WriteString(sc.Text() + "\n")
				run.mu.Unlock()
			}
			run.done <- cmd.Wait()
		}()
		runs[c.pool] = run
	}
	defer func() {
		for _, run := range runs {
			run.cancel()
		}
	}()

	// Every VM's fate, from positive evidence only.
	fates := map[string]map[string]string{} // pool -> VMI name -> outcome
	where := map[string]map[string]string{} // pool -> VMI name -> node (left)
	var pending []string
	deadline := time.Now().Add(drainSettle)
	for {
		pending = nil
		for _, c := range clusters {
			run := runs[c.pool]
			run.mu.Lock()
			out := run.out.String()
			run.mu.Unlock()
			fs, ws, ps := drainFates(t, f, c, out)
			fates[c.pool], where[c.pool] = fs, ws
			pending = append(pending, ps...)
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	settled := time.Since(started)
	for _, c := range clusters {
		runs[c.pool].cancel()
		<-runs[c.pool].done
	}
	if len(pending) > 0 {
		sort.Strings(pending)
		t.Fatalf("after %s some VMs have no fate yet (setup or cluster trouble, not a verdict): %s", drainSettle, strings.Join(pending, "; "))
	}

	for _, c := range clusters {
		for _, k := range c.classes {
			planned, real := map[string]int{}, map[string]int{}
			allowed := map[string]bool{}
			for _, vm := range k.vms {
				p := plans[c.pool][vm]
				planned[p.outcome()]++
				for _, n := range p.AllowedNodes {
					allowed[n] = true
				}
				real[fates[c.pool][vm]]++
			}
			compared += len(k.vms)
			if fmt.Sprint(planned) != fmt.Sprint(real) {
				disagreements++
				t.Errorf("%s class %s (%s, %d VMs): plan %v, drain %v\n%s", c.pool, k.name, k.strategy, len(k.vms), planned, real, c)
			}
			for _, vm := range k.vms {
				if n := where[c.pool][vm]; n != "" && !allowed[n] {
					disagreements++
					t.Errorf("%s/%s left to %s, a node the plan did not find fitting for class %s (%v)", c.ns, vm, n, k.name, sortedKeys(allowed))
				}
			}
			t.Logf("%s class %s (%s): %v", c.pool, k.name, k.strategy, real)
		}
	}
	t.Logf("round %d: %d VMs in %d clusters, fates settled %s after the drains started", round, compared, len(clusters), settled.Round(time.Second))
	return compared, disagreements
}

// drainFates reads each VM's fate: left (Running on another node), shut down (final or
// gone), stays with no node left (on the source, its evacuation's target pod marked
// Unschedulable by kube-scheduler), stays under a PDB (on the source, and kubectl drain
// printed the budget's refusal for its pod). pending lists the VMs without one yet.
func drainFates(t *testing.T, f *framework.Framework, c *drainCluster, drainOut string) (fates, where map[string]string, pending []string) {
	t.Helper()
	ctx := framework.Ctx(t)
	fates, where = map[string]string{}, map[string]string{}
	vmis, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, []string{c.pool + ": list VMIs: " + err.Error()}
	}
	pods, err := f.Admin.Kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher"})
	if err != nil {
		return nil, nil, []string{c.pool + ": list pods: " + err.Error()}
	}
	byVMI := map[string]*virtv1.VirtualMachineInstance{}
	for i := range vmis.Items {
		byVMI[vmis.Items[i].Name] = &vmis.Items[i]
	}
	for _, k := range c.classes {
		for _, name := range k.vms {
			vmi := byVMI[name]
			switch {
			case vmi == nil || vmi.IsFinal():
				fates[name] = drainFateShutDown
				continue
			case vmi.Status.Phase == virtv1.Running && vmi.Status.NodeName != c.source && vmi.Status.NodeName != "":
				fates[name] = drainFateLeaves
				where[name] = vmi.Status.NodeName
				continue
			}
			var source *k8sv1.Pod
			unschedulable := false
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Labels[virtv1.CreatedByLabel] != string(vmi.UID) {
					continue
				}
				if p.Spec.NodeName == c.source {
					source = p
				} else if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && framework.IsUnschedulable(p) {
					unschedulable = true
				}
			}
			switch {
			case unschedulable && vmi.Status.NodeName == c.source:
				fates[name] = drainReasonNoPlace
			case source != nil && pdbRefused(drainOut, source.Name, c.ns):
				fates[name] = drainReasonPDB
			default:
				pending = append(pending, fmt.Sprintf("%s/%s phase %s on %s", c.ns, name, vmi.Status.Phase, vmi.Status.NodeName))
			}
		}
	}
	return fates, where, pending
}

// pdbRefused: kubectl drain printed a PodDisruptionBudget's refusal to evict the pod
// ("error when evicting pods/"NAME" -n "NS" (will retry after 5s): Cannot evict pod as it
// would violate the pod's disruption budget.").
func pdbRefused(drainOut, pod, ns string) bool {
	for _, line := range strings.Split(drainOut, "\n") {
		if strings.Contains(line, `pods/"`+pod+`" -n "`+ns+`"`) && strings.Contains(line, "disruption budget") {
			return true
		}
	}
	return false
}

// launcherPodOf returns the VMI's running launcher pod on node.
func launcherPodOf(t *testing.T, f *framework.Framework, ns, name, node string) k8sv1.Pod {
	t.Helper()
	vmi, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Get(framework.Ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get VMI %s/%s: %v", ns, name, err)
	}
	return launcherPod(t, f, ns, vmi, node)
}

// sizeDrainNode sets the node's allocatable so that, after its fillers, exactly d.slots
// pods with requests req fit, the bind resource being the one that runs out first (with
// less than half a pod's worth to spare); the others are ample. A class whose pods request
// no cpu cannot be bound by cpu: memory then.
func sizeDrainNode(node *k8sv1.Node, d *drainNode, req k8sv1.ResourceList) {
	set := func(name k8sv1.ResourceName, q resource.Quantity) {
		node.Status.Allocatable[name] = q
		node.Status.Capacity[name] = q
	}
	cpu, mem := req.Cpu().MilliValue(), req.Memory().Value()
	var fcpu, fmem int64
	for _, fr := range d.fillers {
		fcpu += fr.Cpu().MilliValue()
		fmem += fr.Memory().Value()
	}
	set(k8sv1.ResourceCPU, *resource.NewMilliQuantity(fcpu+64000, resource.DecimalSI))
	set(k8sv1.ResourceMemory, *resource.NewQuantity(fmem+(256<<30), resource.BinarySI))
	set(k8sv1.ResourcePods, *resource.NewQuantity(int64(len(d.fillers))+110, resource.DecimalSI))
	bind := d.bind
	if bind == drainBindCPU && cpu == 0 {
		bind = drainBindMemory
	}
	switch bind {
	case drainBindCPU:
		set(k8sv1.ResourceCPU, *resource.NewMilliQuantity(fcpu+int64(d.slots)*cpu+cpu/3, resource.DecimalSI))
	case drainBindMemory:
		set(k8sv1.ResourceMemory, *resource.NewQuantity(fmem+int64(d.slots)*mem+mem/3, resource.BinarySI))
	case drainBindPods:
		set(k8sv1.ResourcePods, *resource.NewQuantity(int64(len(d.fillers)+d.slots), resource.DecimalSI))
	}
}

func createDrainPolicy(t *testing.T, f *framework.Framework, c *drainCluster, k *drainClass) {
	t.Helper()
	term := fmt.Sprintf(`{"matchExpressions": [{"key": "kmt-e2e/pool", "operator": "In", "values": [%q]}]}`, c.pool)
	if len(k.excluded) > 0 {
		var vals []string
		for _, s := range k.excluded {
			vals = append(vals, fmt.Sprintf("%q", fmt.Sprint(s)))
		}
		term = fmt.Sprintf(`{"matchExpressions": [{"key": %q, "operator": "NotIn", "values": [%s]}]}`, drainSlotLabel, strings.Join(vals, ", "))
	}
	inbound := ""
	if k.maxInbound > 0 {
		inbound = fmt.Sprintf(`, "maxInboundPerNode": %d`, k.maxInbound)
	}
	spec := fmt.Sprintf(`{
		"match": {"origin": "Evacuation",
		          "sourceNodeSelector": {"matchLabels": {"kmt-e2e/pool": %q, "kmt-drain/source": "true"}},
		          "vmiSelector": {"matchLabels": {%q: %q}}},
		"addedNodeSelectorTerm": %s%s}`, c.pool, drainClassLabel, k.name, term, inbound)
	if err := createPolicy(t, f, f.Admin, c.pool+"-"+k.name, spec); err != nil {
		t.Fatalf("create policy for %s/%s: %v", c.pool, k.name, err)
	}
}

// createDrainPDB: a PodDisruptionBudget over the class's launcher pods that allows no
// disruption (minAvailable = all of them).
func createDrainPDB(t *testing.T, f *framework.Framework, c *drainCluster, k *drainClass) {
	t.Helper()
	all := intstr.FromInt32(int32(len(k.vms)))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: k.name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &all,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{drainClassLabel: k.name, "kubevirt.io": "virt-launcher"}}},
	}
	if _, err := f.Admin.Kube.PolicyV1().PodDisruptionBudgets(c.ns).Create(framework.Ctx(t), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PDB %s/%s: %v", c.ns, k.name, err)
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
