package framework

// A flood (flood.go) run by a child process: this test binary, re-executed with
// KMT_FLOOD_PROCESS set, which TestMain hands to RunFloodProcessIfAsked before any test.
//
// Why a process of its own: during a reconnect burst hundreds of the attacker's goroutines
// are runnable at once (TLS handshakes), and in the test's own process the goroutines that
// time the API server's creates would wait behind them in Go's run queue, so the scenario
// would measure the test binary's scheduler, not the webhook. On a real cluster the attacker
// is another machine; here it is at least another process, which the kernel schedules
// fairly against the API server, the operator and the test.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

const floodProcessEnv = "KMT_FLOOD_PROCESS"

// floodSpec is FloodOptions as the child reads it (the TLS config is rebuilt from KMT_E2E_CA).
type floodSpec struct {
	Addr        string
	Slots       map[string]int // FloodKind as a decimal string
	MaxOpens    int
	ReopenPause time.Duration
	Deadline    time.Time
	TLS         bool
	ClientCert  bool // the TLS kinds present the webhook client certificate (WebhookTLS)
}

// floodReport is one line of the child's standard output.
type floodReport struct {
	Counts     []FloodCounts
	AllStarted bool
}

// FloodProcess is a running flood in a child process; its methods mirror Flood's.
type FloodProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	mu    sync.Mutex
	last  floodReport
	once  sync.Once
}

// StartFloodProcess starts the child and returns once it runs; the flood's first reports
// follow within 100 ms.
func StartFloodProcess(t testing.TB, opts FloodOptions) *FloodProcess {
	t.Helper()
	spec := floodSpec{Addr: opts.Addr, Slots: map[string]int{}, MaxOpens: opts.MaxOpens,
		ReopenPause: opts.ReopenPause, Deadline: opts.Deadline, TLS: opts.TLS != nil,
		ClientCert: opts.TLS != nil && len(opts.TLS.Certificates) > 0}
	for k, n := range opts.Slots {
		spec.Slots[fmt.Sprint(int(k))] = n
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatalf("flood spec: %v", err)
	}
	// At the lowest CPU priority: on a cluster the attacker is a pod with its own node's (or
	// cgroup's) CPU, not the webhook's; here both share two cores, and the attacker's own
	// TLS handshakes and re-opens would otherwise be timed as the webhook's slowness. The
	// server's side of the flood (accepts, handshakes, evictions) keeps its own priority.
	cmd := exec.Command("nice", "-n", "19", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodProcessEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("flood process: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("flood process: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("flood process: %v", err)
	}
	p := &FloodProcess{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			var r floodReport
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				p.mu.Lock()
				p.last = r
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// Counts returns the figures of kind, as last reported by the child.
func (p *FloodProcess) Counts(kind FloodKind) FloodCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.last.Counts {
		if c.Kind == kind {
			return c
		}
	}
	return FloodCounts{Kind: kind}
}

// AllStarted reports whether every slot finished its first attempt (as last reported).
func (p *FloodProcess) AllStarted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.AllStarted
}

// Stop ends the flood (closing the child's standard input), waits for its last report and
// for it to exit (killing it after 15 s).
func (p *FloodProcess) Stop() {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		_ = p.cmd.Wait()
	})
}

// RunFloodProcessIfAsked returns at once unless this process was started by
// StartFloodProcess; then it runs the flood until its standard input closes or the flood's
// deadline passes, writes a report every 100 ms and a last one, and exits.
func RunFloodProcessIfAsked() {
	raw := os.Getenv(floodProcessEnv)
	if raw == "" {
		return
	}
	var spec floodSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "flood process: bad spec: %v\n", err)
		os.Exit(2)
	}
	opts := FloodOptions{Addr: spec.Addr, Slots: map[FloodKind]int{}, MaxOpens: spec.MaxOpens,
		ReopenPause: spec.ReopenPause, Deadline: spec.Deadline}
	for k, n := range spec.Slots {
		var kind int
		fmt.Sscan(k, &kind)
		opts.Slots[FloodKind(kind)] = n
	}
	if spec.TLS {
		c, err := WebhookServerOnlyTLS()
		if spec.ClientCert {
			c, err = WebhookClientTLS()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "flood process: %v\n", err)
			os.Exit(2)
		}
		opts.TLS = c
	}
	f := StartFlood(opts)
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	out := json.NewEncoder(os.Stdout)
	report := func() {
		r := floodReport{AllStarted: f.AllStarted()}
		for k := range opts.Slots {
			r.Counts = append(r.Counts, f.Counts(k))
		}
		_ = out.Encode(r)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	for running := true; running; {
		select {
		case <-stdinClosed:
			running = false
		case <-tick.C:
			if time.Now().After(opts.Deadline) {
				running = false
			}
		}
		report()
	}
	f.Stop()
	report()
	os.Exit(0)
}
