package tests

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kmt.local/e2e/framework"
)

// The e2e operators run with --webhook-client-ca and kube-apiserver authenticates to them with
// a client certificate named in its admission configuration (e2e/cluster.sh): the API server's
// reviews are answered, while a client without a certificate of that CA gets no HTTP at all,
// so it can neither send a forged review nor read what an answer reveals (issue 40).
func TestWebhookMutualTLS(t *testing.T) {
	t.Parallel()
	f := fw(t)
	addr := fmt.Sprintf("127.0.0.1:%d", framework.WebhookPort(t, 0))

	// A forged review: what a client that reached the port would send.
	post := func(conf *tls.Config) (int, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged"}}`
		req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			"/validate-vmim", len(body), body)
		if _, err := conn.Write([]byte(req)); err != nil {
			return 0, err
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return 0, err
		}
		res.Body.Close()
		return res.StatusCode, nil
	}

	withCert := framework.WebhookTLS(t)
	if status, err := post(withCert); err != nil || status == 0 {
		t.Errorf("a client with a certificate of the webhook client CA: status %d, err %v; want an HTTP answer", status, err)
	} else {
		t.Logf("with a certificate of the webhook client CA: HTTP %d", status)
	}
	serverOnly, err := framework.WebhookServerOnlyTLS()
	if err != nil {
		t.Fatal(err)
	}
	if status, err := post(serverOnly); err == nil {
		t.Errorf("a client without a certificate got HTTP %d; want no answer (handshake refused)", status)
	} else {
		t.Logf("without a client certificate: %v", err)
	}
	forger := serverOnly.Clone()
	forger.Certificates = []tls.Certificate{selfSignedClient(t, "kube-apiserver")}
	if status, err := post(forger); err == nil {
		t.Errorf("a client with a certificate of another CA got HTTP %d; want no answer", status)
	} else {
		t.Logf("with a certificate of another CA: %v", err)
	}

	// The API server's own reviews pass: the webhook's denial (not a TLS failure) comes back.
	ns := f.OwnerNamespace(t)
	source := f.Nodes[0]
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", source), source)
	_, err = f.VMOwner.Virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(framework.Ctx(t),
		framework.NewMigration("owner", "vmi", framework.WithTerm(framework.NodeNameTerm(f.Nodes[2]))),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || err.Error() != permissionDenial(framework.VMOwnerUser, ns) {
		t.Errorf("vm-owner's VMIM with a term through the API server: err = %v,\nwant Forbidden %q", err, permissionDenial(framework.VMOwnerUser, ns))
	}
	if err != nil && strings.Contains(err.Error(), "certificate") {
		t.Errorf("the API server could not authenticate to the webhook: %v", err)
	}
}

// selfSignedClient is a client certificate (clientAuth) no CA of the cluster issued.
func selfSignedClient(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
