package framework

// Probes of the operator process behind the webhook, for the abuse scenarios: its
// addresses on 127.0.0.1 (e2e/operator.sh: KMT_E2E_PORT_BASE + 944 webhook, + 980
// metrics, each + 10 per replica index), its PID, resident memory, open descriptors, the
// established connections on its webhook port as the kernel sees them (ss), and a TLS
// client configuration that trusts the cluster CA (metrics.go reads its /metrics).

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func portBase(t testing.TB) int {
	t.Helper()
	base, err := strconv.Atoi(os.Getenv("KMT_E2E_PORT_BASE"))
	if err != nil {
		t.Fatalf("KMT_E2E_PORT_BASE: %v", err)
	}
	return base
}

// WebhookPort is the webhook port of replica index.
func WebhookPort(t testing.TB, index int) int { return portBase(t) + 944 + index*10 }

// MetricsPort is the metrics port of replica index.
func MetricsPort(t testing.TB, index int) int { return portBase(t) + 980 + index*10 }

// OperatorPID is the PID of replica name (its pid file), checked to be a live operator.
func OperatorPID(t testing.TB, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(os.Getenv("KMT_E2E_DIR"), "pids", "operator-"+name+".pid"))
	if err != nil {
		t.Fatalf("operator %s pid file: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("operator %s pid file: %v", name, err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "operator" {
		t.Fatalf("pid %d of operator %s is not a running operator (comm %q, %v)", pid, name, comm, err)
	}
	return pid
}

// VmRSSBytes is the process's resident set (/proc/PID/status VmRSS).
func VmRSSBytes(t testing.TB, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("status of pid %d: %v", pid, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 3 && fields[0] == "VmRSS:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS of pid %d: %v", pid, err)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// OpenFDs counts the process's open file descriptors.
func OpenFDs(t testing.TB, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("fds of pid %d: %v", pid, err)
	}
	return len(entries)
}

// EstablishedOnPort counts the established TCP connections whose local port is port:
// `ss -Htn state established '( sport = :PORT )'`.
func EstablishedOnPort(t testing.TB, port int) int {
	t.Helper()
	out, err := exec.Command("ss", "-Htn", "state", "established", fmt.Sprintf("( sport = :%d )", port)).Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// WebhookTLS is a client configuration that verifies the webhook's serving certificate
// against the cluster CA, as the API server does, and presents a client certificate of the
// webhook client CA (the operators run with --webhook-client-ca: e2e/cluster.sh).
func WebhookTLS(t testing.TB) *tls.Config {
	t.Helper()
	c, err := WebhookClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// WebhookClientTLS is WebhookTLS for code without a testing.TB (the flood process).
func WebhookClientTLS() (*tls.Config, error) {
	c, err := WebhookServerOnlyTLS()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(os.Getenv("KMT_E2E_WEBHOOK_CLIENT_CERT"), os.Getenv("KMT_E2E_WEBHOOK_CLIENT_KEY"))
	if err != nil {
		return nil, fmt.Errorf("webhook client certificate (KMT_E2E_WEBHOOK_CLIENT_CERT/KEY): %v", err)
	}
	c.Certificates = []tls.Certificate{cert}
	return c, nil
}

// WebhookServerOnlyTLS verifies the webhook's serving certificate and presents no client
// certificate.
func WebhookServerOnlyTLS() (*tls.Config, error) {
	ca, err := os.ReadFile(os.Getenv("KMT_E2E_CA"))
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("cluster CA %s holds no certificate", os.Getenv("KMT_E2E_CA"))
	}
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}, nil
}

// ProbePort is the health probe port of replica index (plain HTTP).
func ProbePort(t testing.TB, index int) int { return portBase(t) + 981 + index*10 }

// ResetPeakRSS makes the process's peak resident set (VmHWM) its resident set now
// (proc(5): writing 5 to /proc/PID/clear_refs).
func ResetPeakRSS(t testing.TB, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS of pid %d: %v", pid, err)
	}
}

// PeakRSSBytes is the process's peak resident set since its start or the last ResetPeakRSS
// (/proc/PID/status VmHWM).
func PeakRSSBytes(t testing.TB, pid int) int64 {
	t.Helper()
	return statusKB(t, pid, "VmHWM:") * 1024
}

func statusKB(t testing.TB, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("status of pid %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		fields := strings.Fields(l)
		if len(fields) == 3 && fields[0] == key && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("%s of pid %d: %v", key, pid, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}
