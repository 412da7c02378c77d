package framework

// WatchProxy sits between an operator replica and kube-apiserver on 127.0.0.1 and
// can freeze the watch streams: it terminates TLS with a certificate of the
// cluster CA (so it can tell a watch from any other request) and forwards every
// request to the API server unchanged, the ServiceAccount token included. A
// frozen watch stream stays open and silent — no byte, no close — until its
// client gives up on it or the proxy thaws it; requests that are not watches (the Lease, status
// writes, lists) and watches opened after the freeze flow as usual.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// WatchProxy is a TLS-terminating proxy in front of kube-apiserver.
type WatchProxy struct {
	URL string

	srv      *http.Server
	thawed   chan struct{} // closed by Thaw
	thawOnce sync.Once
	mu       sync.Mutex
	open     map[*watchStream]bool
	frozen   atomic.Int64 // streams frozen so far
	resumed  atomic.Int64 // frozen streams their client closed
	watches  atomic.Int64 // watch requests seen
	requests atomic.Int64
}

type watchStream struct {
	frozen chan struct{} // closed when frozen
	once   sync.Once
	thawed <-chan struct{}
}

// StartWatchProxy starts the proxy on a free 127.0.0.1 port; it stops when the test ends.
func StartWatchProxy(t testing.TB) *WatchProxy {
	t.Helper()
	cert, upstream, transport := proxyUpstream(t, "kmt-watch-proxy")
	p := &WatchProxy{open: map[*watchStream]bool{}, thawed: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.FlushInterval = -1 // stream watch events as they come
	rp.Transport = transport
	rp.ErrorLog = nil
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.URL = "https://" + ln.Addr().String()
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			p.requests.Add(1)
			if v := req.URL.Query().Get("watch"); v != "true" && v != "1" {
				rp.ServeHTTP(w, req)
				return
			}
			p.watches.Add(1)
			s := &watchStream{frozen: make(chan struct{}), thawed: p.thawed}
			p.mu.Lock()
			p.open[s] = true
			p.mu.Unlock()
			defer func() {
				p.mu.Lock()
				delete(p.open, s)
				p.mu.Unlock()
				select {
				case <-s.frozen:
					p.resumed.Add(1)
				default:
				}
			}()
			rp.ServeHTTP(&freezingWriter{ResponseWriter: w, s: s, ctx: req.Context()}, req)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
	}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		p.Thaw()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.srv.Shutdown(ctx)
		_ = p.srv.Close()
	})
	return p
}

// FreezeOpenWatches freezes every watch stream open now and returns how many.
func (p *WatchProxy) FreezeOpenWatches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for s := range p.open {
		s.once.Do(func() { close(s.frozen); n++ })
	}
	p.frozen.Add(int64(n))
	return n
}

// Thaw lets every frozen stream that is still open carry on (what it held back
// arrives late).
func (p *WatchProxy) Thaw() { p.thawOnce.Do(func() { close(p.thawed) }) }

// Stats: watch requests seen, streams frozen, frozen streams their client has closed
// since, frozen streams still open.
func (p *WatchProxy) Stats() (watches, frozen, abandoned, stillOpen int) {
	p.mu.Lock()
	for s := range p.open {
		select {
		case <-s.frozen:
			stillOpen++
		default:
		}
	}
	p.mu.Unlock()
	return int(p.watches.Load()), int(p.frozen.Load()), int(p.resumed.Load()), stillOpen
}

// freezingWriter forwards a watch response until its stream is frozen; then every
// write blocks until the client goes away (the request's context ends).
type freezingWriter struct {
	http.ResponseWriter
	s   *watchStream
	ctx context.Context
}

func (w *freezingWriter) wait() error {
	select {
	case <-w.s.frozen:
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-w.s.thawed:
			return nil
		}
	default:
		return nil
	}
}

func (w *freezingWriter) Write(b []byte) (int, error) {
	if err := w.wait(); err != nil {
		return 0, err
	}
	return w.ResponseWriter.Write(b)
}

func (w *freezingWriter) Flush() {
	if w.wait() == nil {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// ProxiedKubeconfig writes a copy of the operator's ServiceAccount kubeconfig
// whose server is the proxy, and returns its path.
func (p *WatchProxy) ProxiedKubeconfig(t testing.TB) string {
	t.Helper()
	return proxiedKubeconfig(t, p.URL)
}

// proxyUpstream is what a TLS-terminating proxy in front of kube-apiserver needs:
// a serving certificate of the cluster CA named name (127.0.0.1), the API
// server's URL, and a transport to it trusting the cluster CA (HTTP/1.1).
func proxyUpstream(t testing.TB, name string) (tls.Certificate, *url.URL, *http.Transport) {
	t.Helper()
	r := Run(t, time.Minute, nil, "e2e/cluster.sh", "serving-cert", name)
	if r.Code != 0 {
		t.Fatalf("serving-cert: %s", r)
	}
	pki := filepath.Join(runDir(), "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, name+".crt"), filepath.Join(pki, name+".key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	upstream, err := url.Parse(os.Getenv("KMT_E2E_APISERVER"))
	if err != nil || upstream.Host == "" {
		t.Fatalf("KMT_E2E_APISERVER=%q: %v", os.Getenv("KMT_E2E_APISERVER"), err)
	}
	return cert, upstream, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: false}
}

// proxiedKubeconfig writes a copy of the operator's ServiceAccount kubeconfig
// whose server is proxyURL, and returns its path.
func proxiedKubeconfig(t testing.TB, proxyURL string) string {
	t.Helper()
	src := filepath.Join(runDir(), "operator-sa.kubeconfig")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%s: %v (start a replica first)", src, err)
	}
	api := os.Getenv("KMT_E2E_APISERVER")
	if !strings.Contains(string(b), api) {
		t.Fatalf("%s does not name %s", src, api)
	}
	dst := filepath.Join(runDir(), fmt.Sprintf("operator-sa-proxied-%s.kubeconfig", randomSuffix()))
	if err := os.WriteFile(dst, []byte(strings.ReplaceAll(string(b), api, proxyURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}
