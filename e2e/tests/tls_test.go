package tests

// The webhook's TLS refuses TLS 1.0 and 1.1 and the anonymous, NULL, RC4 and
// 3DES suites, and accepts TLS 1.2 with an ECDHE AEAD suite and TLS 1.3. Each case is an
// `openssl s_client` handshake against replica 0's webhook port, judged by its outcome
// (exit status, and the protocol and suite it reports), not by a log line.
//
// A refusal only means something if the client really offered the old protocol or the
// weak suites (Debian's OpenSSL refuses them itself at its default security level): each
// refused case first completes the same client command against a local `openssl
// s_server` that allows them, on the webhook's own certificate.
//
// This machine's OpenSSL 3.0 has no RC4 or 3DES suite to offer at all (`openssl ciphers
// 'RC4:3DES@SECLEVEL=0'` matches nothing), so `-cipher 'aNULL:eNULL:RC4:3DES@SECLEVEL=0'`
// offers the anonymous and NULL suites only. RC4 and 3DES are offered by Go's crypto/tls
// instead (tls.InsecureCipherSuites), with the same control against a Go TLS server that
// allows them.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kmt.local/e2e/framework"
)

// handshake is what `openssl s_client -brief` reported.
type handshake struct {
	ok       bool // exit 0 and "CONNECTION ESTABLISHED"
	protocol string
	cipher   string
	output   string
}

func sClient(t *testing.T, port int, args ...string) handshake {
	t.Helper()
	// The webhook requires a client certificate (--webhook-client-ca): every case presents
	// one of the webhook client CA, so what is judged is the protocol and the suite (the
	// control servers ask for none and ignore it).
	all := append([]string{"s_client", "-connect", fmt.Sprintf("127.0.0.1:%d", port), "-brief", "-no_ign_eof",
		"-cert", os.Getenv("KMT_E2E_WEBHOOK_CLIENT_CERT"), "-key", os.Getenv("KMT_E2E_WEBHOOK_CLIENT_KEY")}, args...)
	r := framework.Run(t, 30*time.Second, nil, "openssl", all...)
	out := r.Stdout + r.Stderr
	h := handshake{output: strings.TrimSpace(out)}
	h.ok = r.Code == 0 && strings.Contains(out, "CONNECTION ESTABLISHED")
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Protocol version: "); ok {
			h.protocol = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "Ciphersuite: "); ok {
			h.cipher = strings.TrimSpace(v)
		}
	}
	return h
}

// controlServer starts `openssl s_server` on a free 127.0.0.1 port with the webhook's
// certificate and args, waits until it accepts, and stops it when the test ends.
func controlServer(t *testing.T, args ...string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := filepath.Join(os.Getenv("KMT_E2E_DIR"), "operator-0-certs")
	cmd := exec.Command("openssl", append([]string{"s_server", "-accept", fmt.Sprintf("127.0.0.1:%d", port),
		"-cert", filepath.Join(dir, "tls.crt"), "-key", filepath.Join(dir, "tls.key")}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	// s_server shuts down at the end of its standard input: hold a pipe open until the kill.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("openssl s_server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		var seen []string
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "ACCEPT") {
				ready <- ""
				for s.Scan() { // keep its pipe drained until it is killed
				}
				return
			}
			seen = append(seen, s.Text())
		}
		ready <- strings.Join(seen, "\n") + " (exited)"
	}()
	select {
	case msg := <-ready:
		if msg != "" {
			t.Fatalf("openssl s_server %v exited before accepting: %s", args, msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("openssl s_server %v did not accept within 10 s", args)
	}
	return port
}

func TestWebhookTLSProtocolsAndSuites(t *testing.T) {
	t.Parallel()
	webhook := framework.WebhookPort(t, 0)
	ca := os.Getenv("KMT_E2E_CA")

	refused := []struct {
		name    string
		client  []string
		control []string // s_server flags that allow what the client offers
	}{
		{"TLS 1.0", []string{"-tls1", "-cipher", "DEFAULT@SECLEVEL=0"}, []string{"-tls1", "-cipher", "DEFAULT@SECLEVEL=0"}},
		{"TLS 1.1", []string{"-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"}, []string{"-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"}},
		{"anonymous, NULL, RC4 and 3DES suites on TLS 1.2", []string{"-tls1_2", "-cipher", "aNULL:eNULL:RC4:3DES@SECLEVEL=0"},
			[]string{"-tls1_2", "-cipher", "aNULL:eNULL:RC4:3DES@SECLEVEL=0"}},
	}
	for _, c := range refused {
		t.Run("refuses "+c.name, func(t *testing.T) {
			control := sClient(t, controlServer(t, c.control...), c.client...)
			if !control.ok {
				t.Fatalf("control: the client %v did not complete a handshake with an s_server allowing it, so it does not offer %s:\n%s",
					c.client, c.name, control.output)
			}
			t.Logf("control s_server: the client offering %s negotiated %s %s", c.name, control.protocol, control.cipher)
			h := sClient(t, webhook, c.client...)
			if h.ok || h.protocol != "" || h.cipher != "" {
				t.Errorf("the webhook accepted %s: protocol %q suite %q\n%s", c.name, h.protocol, h.cipher, h.output)
			} else {
				t.Logf("the webhook refused %s: %s", c.name, lastLine(h.output))
			}
		})
	}

	t.Run("refuses RC4 and 3DES suites (crypto/tls)", func(t *testing.T) {
		var weak []uint16
		var names []string
		for _, cs := range tls.InsecureCipherSuites() {
			if strings.Contains(cs.Name, "RC4") || strings.Contains(cs.Name, "3DES") {
				weak = append(weak, cs.ID)
				names = append(names, cs.Name)
			}
		}
		if len(weak) == 0 {
			t.Fatal("crypto/tls offers no RC4 or 3DES suite")
		}
		client := &tls.Config{InsecureSkipVerify: true, CipherSuites: weak, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS12}
		dir := filepath.Join(os.Getenv("KMT_E2E_DIR"), "operator-0-certs")
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, CipherSuites: weak,
			MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			}
		}()
		dial := func(addr string) (string, error) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, client)
			if err != nil {
				return "", err
			}
			defer c.Close()
			return tls.CipherSuiteName(c.ConnectionState().CipherSuite), nil
		}
		got, err := dial(l.Addr().String())
		if err != nil {
			t.Fatalf("control: a client offering only %v could not complete a handshake with a server allowing them: %v", names, err)
		}
		t.Logf("control Go server: the client offering %v negotiated %s", names, got)
		if got, err := dial(fmt.Sprintf("127.0.0.1:%d", webhook)); err == nil {
			t.Errorf("the webhook accepted %s from a client offering only %v", got, names)
		} else {
			t.Logf("the webhook refused %v: %v", names, err)
		}
	})

	accepted := []struct {
		name     string
		client   []string
		protocol string
		suite    func(string) bool
	}{
		{"TLS 1.2 with an ECDHE AEAD suite", []string{"-tls1_2", "-cipher", "ECDHE+AESGCM:ECDHE+CHACHA20"}, "TLSv1.2",
			func(s string) bool {
				return strings.HasPrefix(s, "ECDHE-") && (strings.Contains(s, "-GCM-") || strings.Contains(s, "CHACHA20-POLY1305"))
			}},
		{"TLS 1.3", []string{"-tls1_3"}, "TLSv1.3",
			func(s string) bool { return strings.HasPrefix(s, "TLS_AES_") || strings.HasPrefix(s, "TLS_CHACHA20_") }},
	}
	for _, c := range accepted {
		t.Run("accepts "+c.name, func(t *testing.T) {
			h := sClient(t, webhook, append([]string{"-CAfile", ca, "-verify_return_error"}, c.client...)...)
			if !h.ok || h.protocol != c.protocol || !c.suite(h.cipher) {
				t.Fatalf("%s: ok=%v protocol %q suite %q, want a verified %s handshake\n%s", c.name, h.ok, h.protocol, h.cipher, c.protocol, h.output)
			}
			t.Logf("the webhook accepted %s: %s %s", c.name, h.protocol, h.cipher)
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
