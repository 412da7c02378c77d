package tests

// One connection must not be able to take the operator's memory (issue 46). Against the
// real operator process (replica "0") and the real API server, each probe below is sent
// while the operator's peak resident set (VmHWM, reset before each probe) is watched:
//
//   - a chunk-size line that never ends, with digits and with an extension, and a trailer
//     that never ends, on the webhook port (TLS): 400 and the connection closed;
//   - the same chunk line on the probe port (plain HTTP, POST /healthz): 405, closed;
//   - a 3.4 MiB AdmissionReview whose request.object is `[{},{},…]` (30x as a DOM):
//     refused before it is parsed;
//   - 40 connections each holding 3 MiB of an unfinished 3.4 MiB body: those past the
//     server's 16 MiB budget get 503 at once, while the API server's creates keep passing;
//   - 1,000 silent TCP connections: the resident cost of each;
//   - five sources (127.0.0.2–6) filling the connection table with served keep-alive TLS
//     connections while opening new ones: the API server's creates keep passing, 0 failures;
//
// and at the end the resident set returns near where it started. The figures are printed
// with t.Logf; the bounds are the test's assertions.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kmt.local/e2e/framework"
)

const (
	mib = 1 << 20
	// The growth of the operator's peak resident set allowed for one probe.
	probeRSSBound = 16 * mib
	// The held-bodies probe may also fill the webhook's body budget (16 MiB).
	heldBodiesRSSBound = 16*mib + probeRSSBound
	// The resident cost of one silent connection.
	idleConnBound = 16 * 1024
)

// endless sends head, then filler bytes in 4 KiB writes for at most `limit`, while reading
// the answer; it returns the answer's status (0 when none) and how long after the first
// byte the server closed the connection (or limit when it did not).
func endless(t *testing.T, conn net.Conn, head string, filler byte, limit time.Duration) (int, time.Duration) {
	t.Helper()
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(limit + 5*time.Second))
	start := time.Now()
	stop := make(chan struct{})
	var sent int64
	go func() {
		piece := []byte(strings.Repeat(string(filler), 4096))
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		for time.Since(start) < limit {
			select {
			case <-stop:
				return
			default:
			}
			n, err := conn.Write(piece)
			atomic.AddInt64(&sent, int64(n))
			if err != nil {
				return
			}
		}
	}()
	status := 0
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	// Whatever follows the answer: the server closes the connection.
	_, _ = io.Copy(io.Discard, br)
	took := time.Since(start)
	close(stop)
	t.Logf("  sent %.1f MiB before the close", float64(atomic.LoadInt64(&sent))/mib)
	return status, took
}

func dialWebhook(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, framework.WebhookTLS(t))
	if err != nil {
		t.Fatalf("dial the webhook: %v", err)
	}
	return conn
}

// rssProbe runs probe and checks that the operator's peak resident set grew by less than
// bound over its resident set before it.
func rssProbe(t *testing.T, pid int, bound int64, probe func()) {
	t.Helper()
	before := framework.VmRSSBytes(t, pid)
	framework.ResetPeakRSS(t, pid)
	probe()
	peak := framework.PeakRSSBytes(t, pid)
	after := framework.VmRSSBytes(t, pid)
	t.Logf("operator VmRSS %.1f MiB before, peak %.1f MiB (%+.1f MiB), %.1f MiB after",
		float64(before)/mib, float64(peak)/mib, float64(peak-before)/mib, float64(after)/mib)
	if peak-before >= bound {
		t.Errorf("the operator's peak VmRSS grew by %.1f MiB, want < %.0f MiB", float64(peak-before)/mib, float64(bound)/mib)
	}
}

func TestAbuseBytes(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	pid := framework.OperatorPID(t, "0")
	webhook := fmt.Sprintf("127.0.0.1:%d", framework.WebhookPort(t, 0))
	probes := fmt.Sprintf("127.0.0.1:%d", framework.ProbePort(t, 0))
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")
	if r := dryRunCreates(t, f, ns, "bwarm"); r.failures != 0 {
		t.Fatalf("warm-up creates: %s; first error: %s", r, r.firstErr)
	}
	start := framework.VmRSSBytes(t, pid)
	const chunkedHead = "POST /validate-vmim HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"

	for _, c := range []struct {
		name, tail string
		filler     byte
	}{
		{"ChunkSizeLine", "1", '1'},
		{"ChunkExtension", "1;", 'a'},
		{"Trailer", "0\r\nX-Trailer: ", 't'},
	} {
		t.Run(c.name, func(t *testing.T) {
			rssProbe(t, pid, probeRSSBound, func() {
				status, took := endless(t, dialWebhook(t, webhook), chunkedHead+c.tail, c.filler, 20*time.Second)
				t.Logf("webhook, %s that never ends: status %d, closed after %s", c.name, status, took.Round(time.Millisecond))
				if status != http.StatusBadRequest {
					t.Errorf("status %d, want 400", status)
				}
				if took > 5*time.Second {
					t.Errorf("closed after %s, want within 5 s", took)
				}
			})
		})
	}

	t.Run("ChunkLineProbePort", func(t *testing.T) {
		rssProbe(t, pid, probeRSSBound, func() {
			conn, err := net.DialTimeout("tcp", probes, 5*time.Second)
			if err != nil {
				t.Fatalf("dial the probe port: %v", err)
			}
			status, took := endless(t, conn, "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;", 'a', 5*time.Second)
			t.Logf("probe port, POST /healthz with an endless chunk line: status %d, closed after %s", status, took.Round(time.Millisecond))
			if status != http.StatusMethodNotAllowed {
				t.Errorf("status %d, want 405 (answered without reading the body)", status)
			}
			if took > 2*time.Second {
				t.Errorf("closed after %s, want within 2 s", took)
			}
		})
	})

	t.Run("ExpandingJSON", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":[`)
		for b.Len() < 3400*1024 {
			b.WriteString(`{},`)
		}
		body := strings.TrimSuffix(b.String(), ",") + "]}}"
		rssProbe(t, pid, probeRSSBound, func() {
			conn := dialWebhook(t, webhook)
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			t0 := time.Now()
			fmt.Fprintf(conn, "POST /validate-vmim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			answer, _ := io.ReadAll(resp.Body)
			t.Logf("%.1f MiB review of empty objects: status %d after %s: %.200s", float64(len(body))/mib, resp.StatusCode, time.Since(t0).Round(time.Millisecond), answer)
			// Refused before its uid is read: HTTP 400 with a Status, as for any undecodable review.
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "more than 50000 JSON nodes") {
				t.Errorf("want 400, the review refused before parsing (more than 50000 JSON nodes), got %d %s", resp.StatusCode, answer)
			}
		})
	})

	t.Run("HeldBodies", func(t *testing.T) {
		const conns = 40
		const announced = 3400 * 1024
		const sent = 3 * mib
		rssProbe(t, pid, heldBodiesRSSBound, func() {
			var wg sync.WaitGroup
			var mu sync.Mutex
			statuses := map[int]int{}
			release := make(chan struct{})
			for i := 0; i < conns; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Not dialWebhook: t.Fatalf may only be called from the test's goroutine.
					conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", webhook, framework.WebhookTLS(t))
					if err != nil {
						t.Errorf("dial the webhook: %v", err)
						return
					}
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
					got := make(chan int, 1)
					go func() {
						resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
						if err != nil {
							got <- 0
							return
						}
						got <- resp.StatusCode
					}()
					fmt.Fprintf(conn, "POST /validate-vmim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", announced)
					piece := []byte(strings.Repeat("x", 64*1024))
					for n := 0; n < sent; n += len(piece) {
						if _, err := conn.Write(piece); err != nil {
							break
						}
					}
					status := -1 // still held, unanswered
					select {
					case status = <-got:
					case <-release:
					}
					mu.Lock()
					statuses[status]++
					mu.Unlock()
				}()
			}
			// While the bodies are held, the API server's creates still pass.
			time.Sleep(2 * time.Second)
			r := dryRunCreates(t, f, ns, "held")
			t.Logf("creates while %d connections hold bodies: %s", conns, r)
			if r.failures != 0 {
				t.Errorf("%d creates failed while bodies were held; first error: %s", r.failures, r.firstErr)
			}
			close(release)
			wg.Wait()
			t.Logf("%d connections announcing %.1f MiB, sending %.0f MiB: statuses %v (-1: held unanswered)", conns, float64(announced)/mib, float64(sent)/mib, statuses)
			if statuses[http.StatusServiceUnavailable] < conns-5 {
				t.Errorf("%d of %d over-budget bodies answered 503, want at least %d", statuses[http.StatusServiceUnavailable], conns, conns-5)
			}
		})
	})

	t.Run("IdleConnections", func(t *testing.T) {
		// 1,000 silent TCP connections from four sources (250 each, under the per-source
		// bound of 256), measured before their 2 s handshake deadline closes them.
		const sources = 4
		const perSource = 250
		const n = sources * perSource
		port := framework.WebhookPort(t, 0)
		established := framework.EstablishedOnPort(t, port)
		// The memory the probes before freed goes back first (the server trims at most once
		// a second), so that it is not counted against the connections.
		var before int64
		framework.Eventually(t, 10*time.Second, "the operator's VmRSS steady", func() (bool, string) {
			a := framework.VmRSSBytes(t, pid)
			time.Sleep(1200 * time.Millisecond)
			before = framework.VmRSSBytes(t, pid)
			return a == before, fmt.Sprintf("VmRSS %.1f MiB -> %.1f MiB", float64(a)/mib, float64(before)/mib)
		})
		start := time.Now()
		var mu sync.Mutex
		var held []net.Conn
		var wg sync.WaitGroup
		var dialErr error
		for s := 0; s < sources; s++ {
			src := fmt.Sprintf("127.0.0.%d", s+2)
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
				for i := 0; i < perSource; i++ {
					c, err := d.Dial("tcp", webhook)
					mu.Lock()
					if err != nil {
						dialErr = err
					} else {
						held = append(held, c)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if dialErr != nil {
			t.Fatalf("dial: %v", dialErr)
		}
		var during int64
		accepted := 0
		for time.Since(start) < 1500*time.Millisecond {
			accepted = framework.EstablishedOnPort(t, port) - established
			if accepted >= n {
				time.Sleep(50 * time.Millisecond)
				during = framework.VmRSSBytes(t, pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, c := range held {
			c.Close()
		}
		if during == 0 {
			t.Fatalf("only %d of %d silent connections established %s after the first dial", accepted, n, time.Since(start))
		}
		per := (during - before) / n
		t.Logf("%d silent TCP connections (%s to open): operator VmRSS %.1f MiB -> %.1f MiB, %.1f KiB each",
			n, time.Since(start).Round(time.Millisecond), float64(before)/mib, float64(during)/mib, float64(per)/1024)
		if per > idleConnBound {
			t.Errorf("a silent connection costs %.1f KiB of resident memory, want <= %d KiB", float64(per)/1024, idleConnBound/1024)
		}
	})

	t.Run("SourceFill", func(t *testing.T) {
		// Five sources, 256 served keep-alive connections each (the per-source bound): more
		// than the table's 1,024, so it is full, and every new connection makes room.
		const sources = 5
		const perSource = 256
		tlsConf := framework.WebhookTLS(t)
		served := func(src string) (net.Conn, error) {
			d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
			conn, err := tls.DialWithDialer(d, "tcp", webhook, tlsConf)
			if err != nil {
				return nil, err
			}
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				conn.Close()
				return nil, err
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				conn.Close()
				return nil, err
			}
			_ = resp.Body.Close()
			_ = conn.SetDeadline(time.Time{})
			return conn, nil
		}
		var mu sync.Mutex
		var held []net.Conn
		var opened, failed int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for s := 0; s < sources; s++ {
			src := fmt.Sprintf("127.0.0.%d", s+2)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					conn, err := served(src)
					if err != nil {
						atomic.AddInt64(&failed, 1)
						time.Sleep(20 * time.Millisecond)
						continue
					}
					atomic.AddInt64(&opened, 1)
					mu.Lock()
					held = append(held, conn)
					mu.Unlock()
					if i >= perSource {
						time.Sleep(20 * time.Millisecond) // then ~50 new connections a second per source
					}
				}
			}()
		}
		framework.Eventually(t, 60*time.Second, "the table filled by the five sources", func() (bool, string) {
			return atomic.LoadInt64(&opened) >= sources*perSource, fmt.Sprintf("%d opened", atomic.LoadInt64(&opened))
		})
		t.Logf("filled: %s", readOpenConnections(t))
		r := dryRunCreates(t, f, ns, "fill")
		t.Logf("creates while five sources fill the table and open new connections: %s; the sources opened %d, failed %d",
			r, atomic.LoadInt64(&opened), atomic.LoadInt64(&failed))
		close(stop)
		wg.Wait()
		for _, c := range held {
			c.Close()
		}
		if r.failures != 0 {
			t.Errorf("%d of %d creates failed while the table was full; first error: %s", r.failures, abuseCreates, r.firstErr)
		}
	})

	t.Run("MemoryGoesBack", func(t *testing.T) {
		var after int64
		framework.Eventually(t, 30*time.Second, "the operator's VmRSS back near its start", func() (bool, string) {
			after = framework.VmRSSBytes(t, pid)
			return after-start < probeRSSBound, fmt.Sprintf("VmRSS %.1f MiB, %.1f MiB at the start", float64(after)/mib, float64(start)/mib)
		})
		t.Logf("operator VmRSS %.1f MiB at the start, %.1f MiB after every probe", float64(start)/mib, float64(after)/mib)
	})
}
