package tests

// A tenant's labels cannot grow the operator (issue 38 §3). The leader caches every bound
// pod of the cluster for the explainer, and how many labels a pod carries is the tenant's
// choice. Against the real operator process (replica "0", the leader) and the real API
// server: 100 pods, each bound to a node and carrying ~1.4 MB of labels (11,000 labels, as
// much as etcd takes for one object), are created in a tenant's namespace. Once the
// operator's gauge kmt_cached_bound_pods_labels_cut counts all 100 (the cache holds them,
// cut to 8 KiB of labels each), its resident set must be (within a minute) less than
// 8 MiB above where it started; it would hold ~150 MB with the labels whole. The figures
// are printed with t.Logf. The test does not call t.Parallel: nothing else runs while the
// resident set is read.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kmt.local/e2e/framework"
)

const (
	heavyPods      = 100
	labelsPerPod   = 11000
	tenantRSSBound = 8 * mib
)

// heavyLabels returns n labels of a 40-character name under a tenant's prefix, each with
// a 63-character value (the longest a label value may be): ~130 bytes of JSON a label.
func heavyLabels(n int) map[string]string {
	labels := make(map[string]string, n)
	value := strings.Repeat("v", 63)
	for i := 0; i < n; i++ {
		labels[fmt.Sprintf("tenant.example.com/label-%05d-%s", i, strings.Repeat("x", 29))] = value
	}
	return labels
}

func TestTenantLabelsDoNotGrowTheOperator(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	pid := framework.OperatorPID(t, "0")
	cut := func() float64 {
		v, _ := f.MetricValue(t, 0, "kmt_cached_bound_pods_labels_cut")
		return v
	}
	if c := cut(); c != 0 {
		t.Fatalf("kmt_cached_bound_pods_labels_cut is %v before any heavy pod", c)
	}
	start := framework.VmRSSBytes(t, pid)

	labels := heavyLabels(labelsPerPod)
	pod := func(i int) *k8sv1.Pod {
		return &k8sv1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("heavy-%03d", i), Labels: labels},
			Spec: k8sv1.PodSpec{
				NodeName:   f.Nodes[i%len(f.Nodes)],
				Containers: []k8sv1.Container{{Name: "c", Image: "busybox"}},
			},
		}
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, heavyPods)
	work := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := f.Admin.Kube.CoreV1().Pods(ns).Create(framework.Ctx(t), pod(i), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create heavy-%03d: %w", i, err)
				}
			}
		}()
	}
	for i := 0; i < heavyPods; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	one, err := f.Admin.Kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "heavy-000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Labels) != labelsPerPod {
		t.Fatalf("heavy-000 has %d labels as stored, want %d", len(one.Labels), labelsPerPod)
	}
	t.Logf("%d pods with %d labels each created in %s", heavyPods, labelsPerPod, time.Since(began).Round(time.Millisecond))

	framework.Eventually(t, 2*time.Minute, "the operator's cache holds every heavy pod, labels cut", func() (bool, string) {
		c := cut()
		return c >= heavyPods, fmt.Sprintf("kmt_cached_bound_pods_labels_cut %v", c)
	})
	// Sampled every 5 s until it is within the bound: freed parse buffers may take a moment
	// to leave (the informer trims the heap after a list, not after each event).
	var after int64
	var series []string
	settled := time.Now()
	framework.Eventually(t, time.Minute, fmt.Sprintf("the operator's VmRSS within %d MiB of its start", tenantRSSBound/mib), func() (bool, string) {
		after = framework.VmRSSBytes(t, pid)
		series = append(series, fmt.Sprintf("%.1f", float64(after)/mib))
		if after-start >= tenantRSSBound {
			time.Sleep(5 * time.Second)
		}
		return after-start < tenantRSSBound, fmt.Sprintf("VmRSS %.1f MiB, %.1f MiB at the start (MiB every 5 s: %s)", float64(after)/mib, float64(start)/mib, strings.Join(series, " "))
	})
	t.Logf("operator VmRSS %.1f MiB before, %.1f MiB with %d pods of ~%.1f MB of labels cached (%+.1f MiB), %s after the cache held them (MiB every 5 s: %s)",
		float64(start)/mib, float64(after)/mib, heavyPods, float64(labelsPerPod*130)/1e6, float64(after-start)/mib,
		time.Since(settled).Round(time.Second), strings.Join(series, " "))
}
