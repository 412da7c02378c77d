package tests

// The webhook survives an attacker on the pod network. Against the real
// operator process (replica "0", started by e2e/hooks/10-operator.sh) and the real API
// server, in this order:
//
//  1. baseline: 100 server-side dry-run VMIM creates carrying a valid term, as the admin
//     (the API server calls the validating webhook, which runs a real SubjectAccessReview);
//  2. a 64 MiB body, announced by Content-Length and then chunked, posted straight to
//     /validate-vmim: 413 within 1 s each, the operator's VmRSS grows by < 8 MiB;
//  3. while 1,000 silent TCP connections, 500 TLS connections with half-sent headers and
//     100 TLS clients trickling a body at 1 byte/s are held open (each re-opened when the
//     server closes it), the same 100 creates: 0 failures, p99 ≤ 2× the baseline's. The
//     webhook runs with mutual TLS (e2e/cluster.sh) and the attacker has no client
//     certificate, so its TLS connections end in the handshake;
//  4. after the flood stops, the webhook's open connections (the operator's
//     kmt_webhook_open_connections gauge, and ss) return to their count before it.
//
// The figures are printed with t.Logf (the closing note quotes them). The test
// does not call t.Parallel: go test runs it before any parallel scenario is released, so
// nothing else shares the webhook while it floods.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kmt.local/e2e/framework"
)

const (
	// Creates per phase, timed one by one. 300 rather than 100: the p99 of 100
	// samples is their second-largest, so one stall of these two shared cores (another
	// process's garbage collection, an etcd compaction) decided the ratio on its own (seen
	// 3.89x with p50 1.1x); of 300 it is the third-largest. A phase takes ~3 s.
	abuseCreates = 300
	// Phases of abuseCreates each way: the median phase is compared. Five, not three: with
	// four creates in flight one stall of the shared cores (a garbage collection, an etcd
	// fsync) slows four samples at once, more than the three above a phase's p99, so one
	// stall decides a phase; the median of five needs three such phases (seen: 2.06x
	// with three phases in a CI run).
	abusePhases      = 5
	abuseConcurrency = 4 // creates in flight; bounds a phase to 75 webhook timeouts (5 s)
	openConnsGauge   = "kmt_webhook_open_connections"
)

// createsResult is one phase of dry-run creates.
type createsResult struct {
	latencies []time.Duration // of the successful creates
	failures  int
	firstErr  string
	elapsed   time.Duration
}

func (r createsResult) p(q float64) time.Duration { return nearestRank(r.latencies, q) }

func (r createsResult) String() string {
	return fmt.Sprintf("%d ok, %d failed, p50 %s, p99 %s, max %s, %s wall",
		len(r.latencies), r.failures, r.p(0.50).Round(10*time.Microsecond),
		r.p(0.99).Round(10*time.Microsecond), r.p(1).Round(10*time.Microsecond),
		r.elapsed.Round(time.Millisecond))
}

// nearestRank is the q-quantile of ds by the nearest-rank method (q = 1: the maximum).
func nearestRank(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(q*float64(len(s))+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(s) {
		rank = len(s) - 1
	}
	return s[rank]
}

// medianPhase is the phase whose p99 is the median of the phases'.
func medianPhase(phases []createsResult) createsResult {
	sorted := append([]createsResult(nil), phases...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].p(0.99) < sorted[j].p(0.99) })
	return sorted[len(sorted)/2]
}

// dryRunCreates sends abuseCreates server-side dry-run creates of VMIMs carrying a node
// term, as the admin, abuseConcurrency at a time, and times each.
func dryRunCreates(t *testing.T, f *framework.Framework, ns, prefix string) createsResult {
	t.Helper()
	var mu sync.Mutex
	var res createsResult
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < abuseConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				m := framework.NewMigration(fmt.Sprintf("%s-%03d", prefix, i), "vmi",
					framework.WithTerm(framework.NodeNameTerm(f.Nodes[2])))
				t0 := time.Now()
				_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(
					framework.Ctx(t), m, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					res.failures++
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
				} else {
					res.latencies = append(res.latencies, d)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < abuseCreates; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// openConnections is the webhook's open-connection count by the operator's gauge and by
// the kernel (established sockets on the webhook port).
type openConnections struct {
	gauge      float64
	gaugeFound bool
	ss         int
}

func readOpenConnections(t *testing.T) openConnections {
	t.Helper()
	v, found := fw(t).MetricValue(t, 0, openConnsGauge)
	return openConnections{gauge: v, gaugeFound: found, ss: framework.EstablishedOnPort(t, framework.WebhookPort(t, 0))}
}

func (o openConnections) String() string {
	g := "absent"
	if o.gaugeFound {
		g = fmt.Sprintf("%.0f", o.gauge)
	}
	return fmt.Sprintf("%s %s, ss established %d", openConnsGauge, g, o.ss)
}

// postHuge posts a body of size bytes to /validate-vmim on a fresh TLS connection
// (Content-Length, or chunked in 64 KiB chunks) while reading the answer, and returns the
// answer's status and the time from the first byte sent to the status line read.
func postHuge(t *testing.T, addr string, size int, chunked bool) (int, time.Duration, error) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, framework.WebhookTLS(t))
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	head := "POST /validate-vmim HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
	if chunked {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		head += fmt.Sprintf("Content-Length: %d\r\n\r\n", size)
	}
	chunk := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` +
		strings.Repeat("x", 64*1024))
	chunk = chunk[:64*1024]
	start := time.Now()
	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		for sent := 0; sent < size; sent += len(chunk) {
			var err error
			if chunked {
				_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
			} else {
				_, err = conn.Write(chunk)
			}
			if err != nil {
				return // the server answered and closed: expected
			}
		}
		if chunked {
			_, _ = io.WriteString(conn, "0\r\n\r\n")
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	took := time.Since(start)
	_ = conn.Close()
	<-writeDone
	if err != nil {
		return 0, took, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, took, nil
}

func TestAbuse(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	addr := fmt.Sprintf("127.0.0.1:%d", framework.WebhookPort(t, 0))
	pid := framework.OperatorPID(t, "0")
	// The dry-run creates need a VMI that virt-api admits migrations of.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")

	// Warm-up: the API server's connection to the webhook and its caches exist before the
	// baseline is timed.
	if r := dryRunCreates(t, f, ns, "warm"); r.failures != 0 {
		t.Fatalf("warm-up creates without any flood: %s; first error: %s", r, r.firstErr)
	}
	// Five phases each way; the ratio is of the median phases' p99s, so one stall of the
	// shared cores in one phase does not decide it alone, while a real slowdown moves all.
	var bases []createsResult
	for i := 0; i < abusePhases; i++ {
		b := dryRunCreates(t, f, ns, fmt.Sprintf("base%d", i))
		t.Logf("baseline %d, no flood: %s", i, b)
		if b.failures != 0 {
			t.Fatalf("baseline creates without any flood failed: %s; first error: %s", b, b.firstErr)
		}
		bases = append(bases, b)
	}
	baseline := medianPhase(bases)

	t.Run("64MiBBody", func(t *testing.T) {
		const size = 64 << 20
		for _, chunked := range []bool{false, true} {
			framing := "Content-Length"
			if chunked {
				framing = "chunked"
			}
			rssBefore := framework.VmRSSBytes(t, pid)
			status, took, err := postHuge(t, addr, size, chunked)
			rssAfter := framework.VmRSSBytes(t, pid)
			growth := rssAfter - rssBefore
			t.Logf("64 MiB body (%s): status %d after %s; operator VmRSS %.1f MiB -> %.1f MiB (%+.1f MiB)",
				framing, status, took.Round(time.Millisecond), float64(rssBefore)/(1<<20), float64(rssAfter)/(1<<20), float64(growth)/(1<<20))
			if err != nil {
				t.Errorf("64 MiB body (%s): no answer: %v (after %s)", framing, err, took)
				continue
			}
			if status != http.StatusRequestEntityTooLarge {
				t.Errorf("64 MiB body (%s): status %d, want 413", framing, status)
			}
			if took > time.Second {
				t.Errorf("64 MiB body (%s): 413 after %s, want within 1 s", framing, took)
			}
			if growth >= 8<<20 {
				t.Errorf("64 MiB body (%s): operator VmRSS grew by %.1f MiB, want < 8 MiB", framing, float64(growth)/(1<<20))
			}
		}
	})

	before := readOpenConnections(t)
	fdsBefore := framework.OpenFDs(t, pid)
	t.Logf("before the flood: %s; operator fds %d", before, fdsBefore)

	t.Run("Flood", func(t *testing.T) {
		// In a process of its own (framework/flood_process.go), so the creates are timed by a
		// process whose Go scheduler is not also running the attacker's goroutines.
		attackerTLS, err := framework.WebhookServerOnlyTLS()
		if err != nil {
			t.Fatal(err)
		}
		flood := framework.StartFloodProcess(t, framework.FloodOptions{
			Addr: addr,
			// The attacker on the pod network holds no certificate of the webhook client CA (the
			// e2e tier runs the webhook with --webhook-client-ca): its TLS connections end in the
			// handshake ("certificate required"), which is what refusing them costs the server here.
			// Half-sent and trickling requests from a holder of a client certificate are
			// TestAbuseBytes's (and http/server_test's).
			TLS: attackerTLS,
			Slots: map[framework.FloodKind]int{
				framework.FloodSilent:   1000,
				framework.FloodHalfSent: 500,
				framework.FloodTrickle:  100,
			},
			MaxOpens: 500,
			// More slots than the server's connection bound (1,024) means it evicts, and each
			// eviction brings a new connection (a third of them TLS handshakes) one pause
			// later: at 1 s that is ~600 opens/s. A shorter pause turns the flood into a TLS
			// handshake flood whose CPU, on these two shared cores, the attacker and the
			// server pay alike; that is another attack than the idle sockets this scenario is about.
			ReopenPause: time.Second,
			Deadline:    time.Now().Add(5 * time.Minute),
		})
		defer flood.Stop()
		kinds := []framework.FloodKind{framework.FloodSilent, framework.FloodHalfSent, framework.FloodTrickle}
		report := func(when string) {
			for _, k := range kinds {
				t.Logf("flood %s: %s", when, flood.Counts(k))
			}
		}
		framework.Eventually(t, 60*time.Second, "every flood slot's first connection attempt", func() (bool, string) {
			var s []string
			for _, k := range kinds {
				s = append(s, flood.Counts(k).String())
			}
			return flood.AllStarted(), strings.Join(s, "; ")
		})
		report("held before the creates")
		t.Logf("during the flood, before the creates: %s", readOpenConnections(t))

		var floods []createsResult
		for i := 0; i < abusePhases; i++ {
			fl := dryRunCreates(t, f, ns, fmt.Sprintf("flood%d", i))
			t.Logf("under the flood, phase %d: %s", i, fl)
			floods = append(floods, fl)
		}
		flooded := medianPhase(floods)
		for _, fl := range floods {
			if fl.failures > flooded.failures {
				flooded.failures, flooded.firstErr = fl.failures, fl.firstErr
			}
		}
		report("after the creates")
		t.Logf("during the flood, after the creates: %s", readOpenConnections(t))
		ratio := float64(flooded.p(0.99)) / float64(baseline.p(0.99))
		t.Logf("under the flood: %s; p99 %.2fx the baseline's %s", flooded, ratio, baseline.p(0.99).Round(10*time.Microsecond))
		if flooded.failures != 0 {
			t.Errorf("%d of %d creates failed under the flood; first error: %s", flooded.failures, abuseCreates, flooded.firstErr)
		}
		if flooded.failures < abuseCreates && ratio > 2 {
			t.Errorf("p99 under the flood %s is %.2fx the baseline's %s, want <= 2x", flooded.p(0.99), ratio, baseline.p(0.99))
		}
	})

	t.Run("Released", func(t *testing.T) {
		// The API server's own keep-alive connections may have grown during the flood; the
		// server closes idle ones after 60 s, so the deadline covers one idle period.
		const deadline = 75 * time.Second
		start := time.Now()
		var last openConnections
		var gaugeBack, ssBack time.Duration
		for {
			last = readOpenConnections(t)
			if gaugeBack == 0 && last.gaugeFound && before.gaugeFound && last.gauge <= before.gauge {
				gaugeBack = time.Since(start)
			}
			if ssBack == 0 && last.ss <= before.ss {
				ssBack = time.Since(start)
			}
			if (gaugeBack != 0 && ssBack != 0) || time.Since(start) > deadline {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		back := func(d time.Duration) string {
			if d == 0 {
				return "not within " + deadline.String()
			}
			return "after " + d.Round(100*time.Millisecond).String()
		}
		t.Logf("after the flood stopped (%s): %s; back to the count before the flood: gauge %s, ss %s; operator fds %d (before the flood %d)",
			time.Since(start).Round(100*time.Millisecond), last, back(gaugeBack), back(ssBack), framework.OpenFDs(t, pid), fdsBefore)
		if !before.gaugeFound || !last.gaugeFound {
			t.Errorf("the operator's /metrics exposes no %s gauge", openConnsGauge)
		} else if gaugeBack == 0 {
			t.Errorf("%s still %.0f %s after the flood stopped, was %.0f before it", openConnsGauge, last.gauge, deadline, before.gauge)
		}
		if ssBack == 0 {
			t.Errorf("%d established connections on the webhook port %s after the flood stopped, %d before it", last.ss, deadline, before.ss)
		}
	})
}
