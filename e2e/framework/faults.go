package framework

// The fault tier's tools (issue 14 §2): a replayable seed, the control plane's own
// processes restarted in place (kube-apiserver), etcd compacted through its v3
// HTTP/JSON gateway, and the operator's replicas supervised as kubelet would. The
// invariants every fault is followed by are in invariants.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LeaseDuration is the operator's Lease duration (controller/leader_election.h).
const LeaseDuration = 15 * time.Second

// FaultSeed returns the seed of a fault scenario: KMT_FAULT_SEED when set (to
// replay a failure), else a fresh one. It is logged so a failing run can be replayed.
func FaultSeed(t testing.TB) int64 {
	t.Helper()
	seed := EnvSeed(t, "KMT_FAULT_SEED")
	t.Logf("fault seed %d (replay with KMT_FAULT_SEED=%d KMT_E2E_RUN='%s' e2e/run.sh)", seed, seed, t.Name())
	return seed
}

// EnvSeed is the int64 in the environment variable name, or a new seed from the clock
// when it is unset; a malformed value fails the test.
func EnvSeed(t testing.TB, name string) int64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return time.Now().UnixNano()
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// EnvInt is the positive integer in the environment variable name, or def when it is
// unset; anything else fails the test.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// NewRand is a generator seeded for one scenario.
func NewRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

func runDir() string { return os.Getenv("KMT_E2E_DIR") }

func pidOf(t testing.TB, component string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir(), "pids", component+".pid"))
	if err != nil {
		t.Fatalf("pid file of %s: %v", component, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file of %s: %v", component, err)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// RestartAPIServer stops kube-apiserver (TERM to its process group, as
// `cluster.sh down` does; KILL after 20 s), starts it again with the same
// command line through `cluster.sh start` (so `down` still stops it), and waits
// until its /readyz answers ok. It returns when the server stopped and when it
// was ready again.
func (f *Framework) RestartAPIServer(t testing.TB) (stopped, ready time.Time) {
	t.Helper()
	pid := pidOf(t, "kube-apiserver")
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("command line of kube-apiserver (pid %d): %v", pid, err)
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	Eventually(t, 10*time.Second, "kube-apiserver pid "+strconv.Itoa(pid)+" gone", func() (bool, string) {
		// A zombie until its parent (cluster.sh start's setsid) reaps it counts as gone.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(st), ") Z "), "still running"
	})
	stopped = time.Now()
	r := Run(t, time.Minute, nil, "e2e/cluster.sh", append([]string{"start", "kube-apiserver", "--"}, argv...)...)
	if r.Code != 0 {
		t.Fatalf("cluster.sh start kube-apiserver: %s", r)
	}
	Eventually(t, 2*time.Minute, "kube-apiserver /readyz after its restart", func() (bool, string) {
		body, err := f.Admin.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(Ctx(t))
		return err == nil && strings.TrimSpace(string(body)) == "ok", fmt.Sprintf("%s %v", body, err)
	})
	return stopped, time.Now()
}

// CompactEtcd compacts etcd's whole history up to its current revision through
// the v3 HTTP/JSON gateway on etcd's client port (KMT_E2E_PORT_BASE + 379): a
// watch or continued list from an older revision meets 410 Gone. It returns the
// revision compacted to.
func CompactEtcd(t testing.TB) int64 {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/v3/kv/", portBase(t)+379)
	post := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		client := &http.Client{Timeout: 30 * time.Second}
		resp, err := client.Post(url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatalf("etcd %s: %v", path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: HTTP %d, %v, %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	// key "\x00" (base64 "AA==") with range_end "\x00": every key; count only.
	rng := post("range", map[string]any{"key": "AA==", "range_end": "AA==", "count_only": true})
	header, _ := rng["header"].(map[string]any)
	rev, err := strconv.ParseInt(fmt.Sprint(header["revision"]), 10, 64)
	if err != nil || rev <= 0 {
		t.Fatalf("etcd range: no revision in %v", rng)
	}
	post("compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true})
	return rev
}

// Replica is one operator replica the fault scenarios run (e2e/operator.sh).
type Replica struct {
	Name  string
	Index int
}

// EnsureReplicas restarts, as kubelet restarts a container, every replica whose
// process exited because it lost its Lease (the operator exits then, by design:
// "Stopping after losing the lease"). A replica that exited for any other reason
// fails the test. It returns the names restarted.
func EnsureReplicas(t testing.TB, replicas []Replica) []string {
	t.Helper()
	return EnsureReplicasWith(t, replicas, func(r Replica) { StartOperator(t, r.Name, r.Index) })
}

// EnsureReplicasWith is EnsureReplicas restarting a replica with start (e.g. with
// the kubeconfig of a fault proxy).
func EnsureReplicasWith(t testing.TB, replicas []Replica, start func(Replica)) []string {
	t.Helper()
	var restarted []string
	for _, r := range replicas {
		pidf := filepath.Join(runDir(), "pids", "operator-"+r.Name+".pid")
		b, err := os.ReadFile(pidf)
		if err != nil {
			t.Fatalf("replica %s: no pid file: %v", r.Name, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && alive(pid) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.TrimSpace(string(comm)) == "operator" {
				continue
			}
		}
		log := OperatorLog(r.Name)
		tail := log
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		if !strings.Contains(tail, "Stopping after losing the lease") {
			t.Fatalf("replica %s exited without losing its lease; log tail:\n%s", r.Name, tail)
		}
		_ = os.Remove(pidf)
		start(r)
		restarted = append(restarted, r.Name)
	}
	return restarted
}
