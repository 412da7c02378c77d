package tests

// The webhook's serving certificate rotates on disk (as cert-manager
// and the kubelet would rotate a mounted Secret) while the API server keeps
// calling it; no admission request fails and the new certificate is served
// without a restart.

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kmt.local/e2e/framework"
)

// servedSerial is the serial of the certificate replica 0's webhook presents
// to a new connection, verified against the cluster CA.
func servedSerial(t *testing.T) (string, error) {
	base, err := strconv.Atoi(os.Getenv("KMT_E2E_PORT_BASE"))
	if err != nil {
		t.Fatalf("KMT_E2E_PORT_BASE: %v", err)
	}
	conn, err := tls.DialWithDialer(&netDialer, "tcp", fmt.Sprintf("127.0.0.1:%d", base+944), framework.WebhookTLS(t))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// writeAtomically replaces path by a rename, as the kubelet swaps a Secret volume.
func writeAtomically(t *testing.T, path string, data []byte) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWebhookCertificateRotationLosesNoRequest(t *testing.T) {
	t.Parallel()
	f := fw(t)
	ns := f.Namespace(t)
	before, err := servedSerial(t)
	if err != nil {
		t.Fatalf("webhook TLS: %v", err)
	}
	// virt-api admits migrations only of a VMI that runs.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")

	// Two clients create VMIMs with a term (server-side dry run: the validating
	// webhook runs, nothing is stored) until told to stop.
	var ok, failed atomic.Int64
	var errMu sync.Mutex
	var errs []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m := framework.NewMigration(fmt.Sprintf("rot-%d-%d", w, i), "vmi", framework.WithTerm(framework.NodeNameTerm(f.Nodes[2])))
				_, err := f.Admin.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t), m, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					errs = append(errs, err.Error())
					errMu.Unlock()
				} else {
					ok.Add(1)
				}
			}
		}(w)
	}
	stopped := false
	stopLoop := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoop()
	waitRequests := func(n int64) {
		target := ok.Load() + failed.Load() + n
		framework.Eventually(t, 60*time.Second, fmt.Sprintf("%d more admission requests", n), func() (bool, string) {
			c := ok.Load() + failed.Load()
			return c >= target, fmt.Sprintf("%d of %d", c, target)
		})
	}
	waitRequests(20)

	// A new certificate for the same identity, written key first then
	// certificate, each file replaced atomically.
	r := framework.Run(t, time.Minute, nil, "e2e/cluster.sh", "serving-cert", "operator-0-rotated")
	paths := strings.Fields(r.Stdout)
	if r.Code != 0 || len(paths) != 2 {
		t.Fatalf("mint a certificate: %s", r)
	}
	crt, err1 := os.ReadFile(paths[0])
	key, err2 := os.ReadFile(paths[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("read the new pair: %v %v", err1, err2)
	}
	dir := filepath.Join(os.Getenv("KMT_E2E_DIR"), "operator-0-certs")
	writeAtomically(t, filepath.Join(dir, "tls.key"), key)
	writeAtomically(t, filepath.Join(dir, "tls.crt"), crt)
	rotated := time.Now()

	var after string
	framework.Eventually(t, 60*time.Second, "the rotated certificate served", func() (bool, string) {
		s, err := servedSerial(t)
		if err != nil {
			return false, err.Error()
		}
		after = s
		return s != before, "serial " + s
	})
	t.Logf("new certificate served %s after the rotation", time.Since(rotated).Round(100*time.Millisecond))
	waitRequests(20)
	stopLoop()

	t.Logf("%d admission requests, %d failed", ok.Load()+failed.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed across the rotation %s -> %s; first: %s", failed.Load(), ok.Load()+failed.Load(), before, after, errs[0])
	}
}

var netDialer = net.Dialer{Timeout: 5 * time.Second}
