package tests

// The in-cluster tier's memory scenario (see incluster_test.go): the memory benchmark's objects
// cached by the installed operator, its memory read from the container's cgroup.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"kmt.local/e2e/framework"
)

// parallel runs do(i) for i in [0, n) on workers goroutines and returns the first error.
func parallel(n, workers int, do func(i int) error) error {
	var mu sync.Mutex
	var first error
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// stopVirtController freezes virt-controller (its process group) until the test ends, as the
// memory benchmark stops it: it would start the VMIs and fail their VMIMs.
func stopVirtController(t *testing.T, cleanupFirst func()) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(os.Getenv("KMT_E2E_DIR"), "pids", "virt-controller.pid"))
	if err != nil {
		t.Fatalf("virt-controller's pid: %v", err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 {
		t.Fatalf("virt-controller's pid file: %q", b)
	}
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP virt-controller: %v", err)
	}
	t.Cleanup(func() {
		cleanupFirst()
		if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
			t.Errorf("SIGCONT virt-controller: %v", err)
		}
	})
}

// containerMemory reads the memory cgroup (v1) of a pod's operator container on the node.
func containerMemory(t *testing.T, node framework.RealNode, pod *k8sv1.Pod) map[string]uint64 {
	t.Helper()
	pid := containerPID(t, node, pod)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var rel string
	for _, l := range strings.Split(string(b), "\n") {
		// hierarchy-id:controllers:path
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "memory") {
			rel = f[2]
		}
	}
	if rel == "" {
		t.Fatalf("pod %s: no memory cgroup in /proc/%d/cgroup:\n%s", pod.Name, pid, b)
	}
	out := map[string]uint64{}
	for _, k := range []string{"memory.limit_in_bytes", "memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.failcnt"} {
		v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", rel, k))
		if err != nil {
			t.Fatalf("pod %s: %v", pod.Name, err)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(v)), 10, 64)
		if err != nil {
			t.Fatalf("pod %s: %s: %v", pod.Name, k, err)
		}
		out[k] = n
	}
	return out
}

// (6) The operator's memory under the manifest's limit with the memory benchmark's objects
// cached: NODES fake nodes (tainted, nothing runs there), VMIMS VMIMs (each with its VMI;
// virt-controller frozen as bench/memory_benchmark.cc stops it) and PODS target pods, then both
// replicas restarted (`kubectl rollout restart`) so the new leader's first LIST holds all of
// them: its "Synced caches" line (read with `kubectl logs` as the admin) counts them, and each
// container's memory cgroup (read on the node: the limit the kubelet set, the peak usage, the
// failure count) stays under the limit. The benchmark's counts (5,000 / 10,000 / 10,000) are
// KMT_INCLUSTER_MEMORY_NODES/VMIMS/PODS; the tier's default is a tenth of each (its time budget).
func TestInClusterMemoryUnderLimit(t *testing.T) {
	f, node := requireInCluster(t)
	nNodes := framework.EnvInt(t, "KMT_INCLUSTER_MEMORY_NODES", 500)
	nVMIMs := framework.EnvInt(t, "KMT_INCLUSTER_MEMORY_VMIMS", 1000)
	nPods := framework.EnvInt(t, "KMT_INCLUSTER_MEMORY_PODS", 1000)
	before := waitOperatorReady(t, f, node, 3*time.Minute)
	d, err := f.Admin.Kube.AppsV1().Deployments(framework.OperatorNamespace).Get(framework.Ctx(t), operatorDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limit := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().Value()
	if limit <= 0 {
		t.Fatalf("the Deployment sets no memory limit")
	}

	ns := f.BareNamespace(t)
	prefix := "kmt-mem-" + framework.RandomSuffix()
	ctx := context.Background()
	stopVirtController(t, func() {
		// Delete before virt-controller runs again, so that it starts none of these VMIs.
		_ = f.Admin.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		_ = f.Admin.Kube.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "kmt-e2e/memory=" + prefix})
	})
	start := time.Now()
	if err := parallel(nNodes, 16, func(i int) error {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		n := &k8sv1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kmt-e2e/memory": prefix,
				k8sv1.LabelHostname: name, k8sv1.LabelOSStable: "linux", k8sv1.LabelArchStable: "amd64",
				"kubevirt.io/schedulable": "true", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)}},
			Spec: k8sv1.NodeSpec{Taints: []k8sv1.Taint{{Key: "kmt-e2e/memory", Value: prefix, Effect: k8sv1.TaintEffectNoSchedule}}},
		}
		_, err := f.Admin.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("create nodes: %v", err)
	}
	uids := make([]string, nVMIMs)
	if err := parallel(nVMIMs, 16, func(i int) error {
		vmi := framework.NewVMI(fmt.Sprintf("vm-%d", i), "")
		if _, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
			return err
		}
		m, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(ctx, framework.NewMigration(fmt.Sprintf("mig-%d", i), vmi.Name), metav1.CreateOptions{})
		if err == nil {
			uids[i] = string(m.UID)
		}
		return err
	}); err != nil {
		t.Fatalf("create VMIs and VMIMs: %v", err)
	}
	if err := parallel(nPods, 16, func(i int) error {
		j := i % nVMIMs
		p := &k8sv1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("virt-launcher-vm-%d-target-%d", j, i),
				Labels: map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": fmt.Sprintf("vmi-uid-%d", j),
					"vm.kubevirt.io/name": fmt.Sprintf("vm-%d", j), virtv1.MigrationJobLabel: uids[j]},
				Annotations: map[string]string{virtv1.MigrationJobNameAnnotation: fmt.Sprintf("mig-%d", j),
					"kubevirt.io/domain": fmt.Sprintf("vm-%d", j), "kubectl.kubernetes.io/default-container": "compute"}},
			Spec: k8sv1.PodSpec{
				// Held by a gate of our own: the scheduler leaves them alone.
				SchedulingGates: []k8sv1.PodSchedulingGate{{Name: "kmt.local/memory-benchmark"}},
				NodeSelector:    map[string]string{"kmt-e2e/memory": prefix},
				Tolerations:     []k8sv1.Toleration{{Key: "kmt-e2e/memory", Operator: k8sv1.TolerationOpExists}},
				Containers: []k8sv1.Container{{Name: "compute", Image: "kmt.local/virt-launcher:v1",
					Command:   []string{"/usr/bin/virt-launcher-monitor", "--qemu-timeout", "250s", "--name", fmt.Sprintf("vm-%d", j)},
					Resources: k8sv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("300Mi")}}}},
			},
		}
		_, err := f.Admin.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("create target pods: %v", err)
	}
	t.Logf("created %d nodes, %d VMIs + VMIMs, %d target pods in %s", nNodes, nVMIMs, nPods, time.Since(start).Round(time.Second))

	// Both replicas restarted: the new ones list everything at start.
	if r := kubectlAdmin(t, 60*time.Second, "-n", framework.OperatorNamespace, "rollout", "restart", "deployment/"+operatorDeployment); r.Code != 0 {
		t.Fatalf("kubectl rollout restart: %s", r)
	}
	old := map[string]bool{}
	for _, p := range before {
		old[p.Name] = true
	}
	var pods []k8sv1.Pod
	framework.Eventually(t, 5*time.Minute, "both replicas replaced and Ready", func() (bool, string) {
		pods = waitOperatorReady(t, f, node, 5*time.Minute)
		for _, p := range pods {
			if old[p.Name] {
				return false, "old pod " + p.Name + " still there"
			}
		}
		return true, ""
	})
	_, leaderPod := leaderIdentity(t, f, pods)
	var synced map[string]string
	framework.Eventually(t, 3*time.Minute, "the leader synced its caches", func() (bool, string) {
		recs := logRecords(t, podLogs(t, leaderPod), "Synced caches")
		if len(recs) == 0 {
			return false, "no \"Synced caches\" yet"
		}
		synced = recs[len(recs)-1]
		return true, ""
	})
	for k, want := range map[string]int{"nodes": nNodes, "vmims": nVMIMs, "targetPods": nPods} {
		var got int
		if _, err := fmt.Sscan(synced[k], &got); err != nil || got < want {
			t.Errorf("the leader's \"Synced caches\" %v: %s < %d", synced, k, want)
		}
	}
	for i := range pods {
		p := &pods[i]
		m := containerMemory(t, node, p)
		t.Logf("pod %s (leader %t): cgroup limit %d MiB, usage %.1f MiB, peak %.1f MiB, failcnt %d", p.Name, p.Name == leaderPod,
			m["memory.limit_in_bytes"]>>20, float64(m["memory.usage_in_bytes"])/(1<<20), float64(m["memory.max_usage_in_bytes"])/(1<<20), m["memory.failcnt"])
		if int64(m["memory.limit_in_bytes"]) != limit {
			t.Errorf("pod %s: the cgroup's limit is %d bytes, the manifest's %d", p.Name, m["memory.limit_in_bytes"], limit)
		}
		if int64(m["memory.max_usage_in_bytes"]) >= limit || m["memory.failcnt"] != 0 {
			t.Errorf("pod %s: peak %d bytes, %d failures against the limit %d", p.Name, m["memory.max_usage_in_bytes"], m["memory.failcnt"], limit)
		}
		if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 {
			t.Errorf("pod %s restarted %d times", p.Name, rc)
		}
	}
}
