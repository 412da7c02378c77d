package framework

// An attacker on the pod network, for the webhook's abuse scenarios: clients
// that hold connections to the webhook port open without ever completing a request, and
// open a new one whenever the server closes theirs.
//
//   FloodSilent   plain TCP, never sends a byte (not even a TLS ClientHello)
//   FloodHalfSent TLS handshake, then half of a request's headers, then nothing
//   FloodTrickle  TLS, complete headers announcing a body, then one body byte a second
//
// Every slot is one goroutine with a bounded loop: at most FloodOptions.MaxOpens
// connections, each read and write with a deadline of at most a second, and the whole
// flood ends at FloodOptions.Deadline or Stop(), whichever comes first. After a close the
// slot waits FloodOptions.ReopenPause before opening again: the attacker shares the test
// machine's two cores with the server, and a tight reconnect loop would measure CPU
// starvation rather than the server. Traffic goes only to the address given, which the
// scenarios set to 127.0.0.1.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FloodKind is what one flood connection does once open.
type FloodKind int

const (
	FloodSilent FloodKind = iota
	FloodHalfSent
	FloodTrickle
)

func (k FloodKind) String() string {
	switch k {
	case FloodSilent:
		return "silent TCP"
	case FloodHalfSent:
		return "TLS, half-sent headers"
	case FloodTrickle:
		return "TLS, body at 1 byte/s"
	}
	return fmt.Sprintf("FloodKind(%d)", int(k))
}

// FloodOptions configures a flood against one address.
type FloodOptions struct {
	Addr        string      // host:port; the scenarios use 127.0.0.1
	TLS         *tls.Config // for the TLS kinds
	Slots       map[FloodKind]int
	MaxOpens    int           // per slot, including the first
	ReopenPause time.Duration // between the server closing a connection and the next open
	Deadline    time.Time     // the flood ends here at the latest
}

// FloodCounts are the figures of one kind.
type FloodCounts struct {
	Kind FloodKind
	// Open now: connected (and, for TLS kinds, handshaken and their bytes sent).
	Open int64
	// Slots whose first attempt finished (open or failed).
	Started int64
	// Successful opens, closes by the server (EOF, reset, or an answer), failed dials or
	// handshakes.
	Opened, ClosedByServer, Failed int64
}

func (c FloodCounts) String() string {
	return fmt.Sprintf("%s: %d open, %d opened, %d closed by the server, %d failed opens",
		c.Kind, c.Open, c.Opened, c.ClosedByServer, c.Failed)
}

type floodKindState struct {
	open, started, opened, closed, failed atomic.Int64
}

// Flood is a running flood.
type Flood struct {
	opts  FloodOptions
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	kinds map[FloodKind]*floodKindState
	slots int
}

// StartFlood opens every slot's first connection in the background and returns at once.
func StartFlood(opts FloodOptions) *Flood {
	f := &Flood{opts: opts, stop: make(chan struct{}), kinds: map[FloodKind]*floodKindState{}}
	for kind, n := range opts.Slots {
		st := &floodKindState{}
		f.kinds[kind] = st
		for i := 0; i < n; i++ {
			f.slots++
			f.wg.Add(1)
			go f.slot(kind, st)
		}
	}
	return f
}

// Counts returns the figures of kind.
func (f *Flood) Counts(kind FloodKind) FloodCounts {
	st := f.kinds[kind]
	if st == nil {
		return FloodCounts{Kind: kind}
	}
	return FloodCounts{Kind: kind, Open: st.open.Load(), Started: st.started.Load(),
		Opened: st.opened.Load(), ClosedByServer: st.closed.Load(), Failed: st.failed.Load()}
}

// AllStarted reports whether every slot finished its first attempt.
func (f *Flood) AllStarted() bool {
	var n int64
	for _, st := range f.kinds {
		n += st.started.Load()
	}
	return n == int64(f.slots)
}

// Stop closes every connection and waits for every slot to end.
func (f *Flood) Stop() {
	f.once.Do(func() { close(f.stop) })
	f.wg.Wait()
}

func (f *Flood) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return time.Now().After(f.opts.Deadline)
	}
}

// pause waits d unless the flood stops first; it reports whether to go on.
func (f *Flood) pause(d time.Duration) bool {
	if until := time.Until(f.opts.Deadline); until < d {
		d = until
	}
	if d <= 0 {
		return !f.stopped()
	}
	select {
	case <-f.stop:
		return false
	case <-time.After(d):
		return !f.stopped()
	}
}

func (f *Flood) slot(kind FloodKind, st *floodKindState) {
	defer f.wg.Done()
	first := true
	for opens := 0; opens < f.opts.MaxOpens && !f.stopped(); opens++ {
		conn, err := f.open(kind)
		if first {
			st.started.Add(1)
			first = false
		}
		if err != nil {
			st.failed.Add(1)
			if !f.pause(f.opts.ReopenPause) {
				return
			}
			continue
		}
		st.opened.Add(1)
		st.open.Add(1)
		byServer := f.hold(kind, conn)
		st.open.Add(-1)
		_ = conn.Close()
		if !byServer {
			return // stopped
		}
		st.closed.Add(1)
		if !f.pause(f.opts.ReopenPause) {
			return
		}
	}
}

// open connects and sends what kind sends before going quiet.
func (f *Flood) open(kind FloodKind) (net.Conn, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	raw, err := d.Dial("tcp", f.opts.Addr)
	if err != nil {
		return nil, err
	}
	if kind == FloodSilent {
		return raw, nil
	}
	_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	conn := tls.Client(raw, f.opts.TLS)
	if err := conn.Handshake(); err != nil {
		_ = raw.Close()
		return nil, err
	}
	var head string
	switch kind {
	case FloodHalfSent:
		head = "POST /validate-vmim HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appli"
	case FloodTrickle:
		head = "POST /validate-vmim HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
			"Content-Length: 100000\r\n\r\n{"
	}
	if _, err := conn.Write([]byte(head)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	return conn, nil
}

// hold keeps conn open (trickling a byte a second for FloodTrickle) until the server
// closes or answers it (true) or the flood stops (false).
func (f *Flood) hold(kind FloodKind, conn net.Conn) bool {
	buf := make([]byte, 512)
	for !f.stopped() {
		if kind == FloodTrickle {
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := conn.Write([]byte(" ")); err != nil && !isTimeout(err) {
				return true
			}
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		n, err := conn.Read(buf)
		if n > 0 || (err != nil && !isTimeout(err)) {
			return true // an answer (e.g. 408) or a close: the server let go of it
		}
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
