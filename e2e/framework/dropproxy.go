package framework

// DropProxy sits between the operator's replicas and kube-apiserver on 127.0.0.1,
// like WatchProxy (TLS terminated with a cluster-CA certificate, the ServiceAccount
// token passed through), and kills client connections at random while its drop
// rates are above zero:
//   - a request (not a watch) is doomed with the request rate's probability when
//     it arrives, and then killed in one of three ways drawn from the seed: before
//     it is forwarded (the server never sees it), after the server answered with
//     the whole answer withheld (the write took effect, the client cannot know), or
//     in the middle of the answer (status line and a prefix of the body sent; right
//     after the whole answer when it is shorter than the prefix drawn);
//   - a watch stream is killed in the middle of the stream: every chunk of events
//     it forwards dooms it with the chunk rate's probability, and the stream then
//     ends after a prefix of that chunk. (A watch stream lives long and is opened
//     rarely: one draw per stream would almost never cut one during a burst.)
//
// A kill is a TCP reset (SO_LINGER 0) or a plain close without TLS close_notify,
// drawn from the seed. Draws come from one generator seeded by the scenario, taken
// in the order requests arrive (so a replay repeats the draws, not necessarily
// which request meets which draw).

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DropProxy is a TLS-terminating proxy in front of kube-apiserver that kills
// connections at random.
type DropProxy struct {
	URL string

	srv       *http.Server
	mu        sync.Mutex // guards rng and the rates
	rng       *rand.Rand
	rate      float64 // per request
	chunkRate float64 // per watch chunk

	requests, watches                                  atomic.Int64
	beforeForward, answerWithheld, midAnswer, midWatch atomic.Int64
	resets, closes                                     atomic.Int64
}

// DropStats counts what a DropProxy saw and killed.
type DropStats struct {
	Requests, Watches int64 // seen (watches are counted in Requests too)
	// Kills of requests: before forwarding, after the server answered (answer
	// withheld), in the middle of the answer; kills of watch streams mid-stream.
	BeforeForward, AnswerWithheld, MidAnswer, MidWatch int64
	Resets, Closes                                     int64 // how the kills ended the connection
}

// Kills is the number of connections killed.
func (s DropStats) Kills() int64 {
	return s.BeforeForward + s.AnswerWithheld + s.MidAnswer + s.MidWatch
}

type dropMode int

const (
	dropNone dropMode = iota
	dropBeforeForward
	dropAnswerWithheld
	dropMidAnswer
)

var errDropped = errors.New("connection dropped by the fault proxy")

// StartDropProxy starts the proxy on a free 127.0.0.1 port with drop rates 0 and
// draws from seed; it stops when the test ends.
func StartDropProxy(t testing.TB, seed int64) *DropProxy {
	t.Helper()
	cert, upstream, transport := proxyUpstream(t, "kmt-drop-proxy")
	p := &DropProxy{rng: NewRand(seed)}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.FlushInterval = -1 // stream watch events as they come
	rp.Transport = transport
	rp.ErrorLog = log.New(io.Discard, "", 0) // the aborted copies are the point
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.URL = "https://" + ln.Addr().String()
	p.srv = &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { p.serve(rp, w, req) }),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.srv.Shutdown(ctx)
		_ = p.srv.Close()
	})
	return p
}

// SetRates sets the probabilities of a kill per request and per watch chunk; 0, 0
// stops them.
func (p *DropProxy) SetRates(request, chunk float64) {
	p.mu.Lock()
	p.rate, p.chunkRate = request, chunk
	p.mu.Unlock()
}

// Stats returns the counts so far.
func (p *DropProxy) Stats() DropStats {
	return DropStats{
		Requests: p.requests.Load(), Watches: p.watches.Load(),
		BeforeForward: p.beforeForward.Load(), AnswerWithheld: p.answerWithheld.Load(),
		MidAnswer: p.midAnswer.Load(), MidWatch: p.midWatch.Load(),
		Resets: p.resets.Load(), Closes: p.closes.Load(),
	}
}

// ProxiedKubeconfig writes a copy of the operator's ServiceAccount kubeconfig
// whose server is the proxy, and returns its path.
func (p *DropProxy) ProxiedKubeconfig(t testing.TB) string {
	t.Helper()
	return proxiedKubeconfig(t, p.URL)
}

// drawRequest decides a request's fate: its mode, how many body bytes pass
// before a mid-answer kill, and reset or close.
func (p *DropProxy) drawRequest() (mode dropMode, prefix int, reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate <= 0 || p.rng.Float64() >= p.rate {
		return dropNone, 0, false
	}
	return dropMode(1 + p.rng.Intn(3)), p.rng.Intn(2048), p.rng.Intn(2) == 0
}

// drawChunk decides whether a watch chunk of n bytes kills its stream, after how
// many of its bytes, and how.
func (p *DropProxy) drawChunk(n int) (kill bool, prefix int, reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.chunkRate <= 0 || p.rng.Float64() >= p.chunkRate {
		return false, 0, false
	}
	return true, p.rng.Intn(n + 1), p.rng.Intn(2) == 0
}

func (p *DropProxy) serve(rp *httputil.ReverseProxy, w http.ResponseWriter, req *http.Request) {
	p.requests.Add(1)
	watch := isWatch(req)
	dw := &dropWriter{ResponseWriter: w, p: p, watch: watch, limit: -1}
	if watch {
		p.watches.Add(1)
	} else {
		mode, prefix, reset := p.drawRequest()
		switch mode {
		case dropNone:
			rp.ServeHTTP(w, req)
			return
		case dropBeforeForward:
			p.beforeForward.Add(1)
			p.kill(w, reset)
			return
		case dropAnswerWithheld:
			dw.withhold = true
		case dropMidAnswer:
			dw.limit = prefix
		}
		dw.mode, dw.reset = mode, reset
	}
	func() {
		// ReverseProxy aborts a copy whose write failed with http.ErrAbortHandler.
		defer func() {
			if r := recover(); r != nil && r != http.ErrAbortHandler {
				panic(r)
			}
		}()
		rp.ServeHTTP(dw, req)
	}()
	if dw.mode == dropNone && !dw.cut {
		return
	}
	switch {
	case dw.watch:
		p.midWatch.Add(1)
	case dw.mode == dropAnswerWithheld:
		p.answerWithheld.Add(1)
	default:
		p.midAnswer.Add(1)
	}
	p.kill(w, dw.reset)
}

// kill takes the connection over and ends it: RST or a close without close_notify.
func (p *DropProxy) kill(w http.ResponseWriter, reset bool) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok && reset {
		_ = tcp.SetLinger(0)
		p.resets.Add(1)
	} else {
		p.closes.Add(1)
	}
	_ = raw.Close()
}

// dropWriter forwards an answer until its kill: a withheld answer writes
// nothing; a mid-answer kill passes limit body bytes; a watch draws per chunk.
type dropWriter struct {
	http.ResponseWriter
	p        *DropProxy
	watch    bool
	mode     dropMode
	withhold bool
	limit    int // body bytes still allowed before the kill; -1: no limit
	reset    bool
	cut      bool // the kill is due
	hdr      http.Header
}

func (w *dropWriter) Header() http.Header {
	if w.withhold {
		if w.hdr == nil {
			w.hdr = http.Header{}
		}
		return w.hdr
	}
	return w.ResponseWriter.Header()
}

func (w *dropWriter) WriteHeader(code int) {
	if !w.withhold {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *dropWriter) Write(b []byte) (int, error) {
	if w.cut || w.withhold {
		w.cut = true
		return 0, errDropped
	}
	if w.watch && w.limit < 0 {
		if kill, prefix, reset := w.p.drawChunk(len(b)); kill {
			w.limit, w.reset = prefix, reset
		}
	}
	if w.limit >= 0 && len(b) >= w.limit {
		n, _ := w.ResponseWriter.Write(b[:w.limit])
		w.cut = true
		return n, errDropped
	}
	if w.limit >= 0 {
		w.limit -= len(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *dropWriter) Flush() {
	if w.withhold || w.cut {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func isWatch(req *http.Request) bool {
	v := req.URL.Query().Get("watch")
	return v == "true" || v == "1"
}
