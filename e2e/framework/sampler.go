package framework

// Resource sampling of the operator's replicas for the soak (e2e/soak.sh): every
// interval, each replica's VmRSS and Threads (/proc/PID/status) and open file
// descriptors (/proc/PID/fd) go to a CSV file, and Segments fits a least-squares
// line per process lifetime (a replica killed and restarted is two segments).

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sample is one reading of one replica's process.
type Sample struct {
	At       time.Time
	Replica  string
	PID      int
	Started  time.Time // the process's start (from /proc/PID/stat)
	RSSKiB   int64
	FDs      int
	Threads  int
	Lifetime time.Duration // At - Started
	// Leading: the process held the Lease at At (it acquired it at LeadingSince);
	// derived from the replica's log (MarkLeadership), not stored in the CSV.
	Leading      bool
	LeadingSince time.Time
}

// SampleHeader is the CSV header Sampler writes.
var SampleHeader = []string{"unix_ms", "replica", "pid", "process_start_unix", "age_s", "rss_kib", "fds", "threads"}

func (s Sample) record() []string {
	return []string{
		strconv.FormatInt(s.At.UnixMilli(), 10), s.Replica, strconv.Itoa(s.PID),
		strconv.FormatInt(s.Started.Unix(), 10), strconv.FormatFloat(s.Lifetime.Seconds(), 'f', 1, 64),
		strconv.FormatInt(s.RSSKiB, 10), strconv.Itoa(s.FDs), strconv.Itoa(s.Threads),
	}
}

// ReadProcess reads one sample of process pid (Replica and At left to the caller).
func ReadProcess(pid int) (Sample, error) {
	s := Sample{PID: pid}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	rss, threads := int64(-1), -1
	for _, l := range strings.Split(string(st), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.ParseInt(f[1], 10, 64)
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		}
	}
	if rss < 0 || threads < 0 {
		return s, fmt.Errorf("pid %d: no VmRSS/Threads in /proc status (exited?)", pid)
	}
	s.RSSKiB, s.Threads = rss, threads
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	s.Started, err = processStart(pid)
	return s, err
}

// processStart is the wall-clock start of pid: /proc/PID/stat field 22 (clock
// ticks after boot, USER_HZ = 100 on Linux) plus /proc/stat btime.
func processStart(pid int) (time.Time, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, err
	}
	// The command name (field 2) may hold spaces; fields after its ')' start at 3.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("pid %d: malformed stat", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 20 {
		return time.Time{}, fmt.Errorf("pid %d: short stat", pid)
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22
	if err != nil {
		return time.Time{}, err
	}
	boot, err := bootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * 10 * time.Millisecond), nil
}

func bootTime() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(sec, 0), err
		}
	}
	return time.Time{}, fmt.Errorf("no btime in /proc/stat")
}

// ReplicaPID is the pid of operator replica name from its pid file, 0 when it
// has none or the process is not an operator.
func ReplicaPID(name string) int {
	b, err := os.ReadFile(filepath.Join(runDir(), "pids", "operator-"+name+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		return 0
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if strings.TrimSpace(string(comm)) != "operator" {
		return 0
	}
	return pid
}

// Sampler samples replicas every interval into a CSV file until Stop.
type Sampler struct {
	mu      sync.Mutex
	samples []Sample
	errs    int
	stop    chan struct{}
	done    chan struct{}
}

// StartSampler samples the named replicas every interval, appending to csvPath
// (created with SampleHeader). A replica without a running process (between a
// kill and its restart) is skipped for that tick.
func StartSampler(csvPath string, interval time.Duration, replicas []string) (*Sampler, error) {
	out, err := os.Create(csvPath)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(out)
	if err := w.Write(SampleHeader); err != nil {
		out.Close()
		return nil, err
	}
	w.Flush()
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer out.Close()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			now := time.Now()
			for _, r := range replicas {
				pid := ReplicaPID(r)
				if pid == 0 {
					continue
				}
				smp, err := ReadProcess(pid)
				if err != nil {
					s.mu.Lock()
					s.errs++
					s.mu.Unlock()
					continue
				}
				smp.At, smp.Replica, smp.Lifetime = now, r, now.Sub(smp.Started)
				s.mu.Lock()
				s.samples = append(s.samples, smp)
				s.mu.Unlock()
				_ = w.Write(smp.record())
			}
			w.Flush()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s, nil
}

// Stop ends the sampling and returns every sample and the number of failed reads.
func (s *Sampler) Stop() ([]Sample, int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...), s.errs
}

// Last is the most recent sample of replica (ok false when there is none yet).
func (s *Sampler) Last(replica string) (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.samples) - 1; i >= 0; i-- {
		if s.samples[i].Replica == replica {
			return s.samples[i], true
		}
	}
	return Sample{}, false
}

// Segment is one process lifetime of one replica, after its warm-up, with the
// least-squares slope of each resource per hour.
type Segment struct {
	Replica       string
	PID           int
	Leading       bool      // the lifetime's part after the process acquired the Lease
	From, To      time.Time // first and last sample used
	Samples       int       // samples used
	WarmupSkipped int       // samples of the process's warm-up left out

	RSSFirstMiB, RSSLastMiB, RSSMaxMiB float64
	RSSMiBPerHour                      float64
	RSSSecondHalfMiBPerHour            float64 // slope over the segment's second half only

	FDsStart, FDsEnd, FDsMin, FDsMax int
	FDsPerHour                       float64

	ThreadsStart, ThreadsEnd, ThreadsMin, ThreadsMax int
	ThreadsPerHour                                   float64
}

// Segments groups samples by (replica, pid, leading), drops each process's first
// warmup of life (and, once it leads, the first warmup of its leadership: its
// caches fill then), and fits a line per resource (x in hours, so slopes are per hour).
// Segments with fewer than 3 samples after the warm-up are left out.
func Segments(samples []Sample, warmup time.Duration) []Segment {
	type key struct {
		replica string
		pid     int
		start   int64
		leading bool
	}
	groups := map[key][]Sample{}
	var order []key
	for _, s := range samples {
		k := key{s.Replica, s.PID, s.Started.Unix(), s.Leading}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	var out []Segment
	for _, k := range order {
		all := groups[k]
		sort.Slice(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
		var use []Sample
		for _, s := range all {
			if s.Lifetime >= warmup && (!s.Leading || s.At.Sub(s.LeadingSince) >= warmup) {
				use = append(use, s)
			}
		}
		if len(use) < 3 {
			continue
		}
		seg := Segment{Replica: k.replica, PID: k.pid, Leading: k.leading, From: use[0].At, To: use[len(use)-1].At,
			Samples: len(use), WarmupSkipped: len(all) - len(use)}
		xs := make([]float64, len(use))
		rss := make([]float64, len(use))
		fds := make([]float64, len(use))
		thr := make([]float64, len(use))
		seg.FDsMin, seg.FDsMax = use[0].FDs, use[0].FDs
		seg.ThreadsMin, seg.ThreadsMax = use[0].Threads, use[0].Threads
		for i, s := range use {
			xs[i] = s.At.Sub(seg.From).Hours()
			rss[i] = float64(s.RSSKiB) / 1024
			fds[i] = float64(s.FDs)
			thr[i] = float64(s.Threads)
			seg.RSSMaxMiB = max(seg.RSSMaxMiB, rss[i])
			seg.FDsMin, seg.FDsMax = min(seg.FDsMin, s.FDs), max(seg.FDsMax, s.FDs)
			seg.ThreadsMin, seg.ThreadsMax = min(seg.ThreadsMin, s.Threads), max(seg.ThreadsMax, s.Threads)
		}
		seg.RSSMiBPerHour, _ = LeastSquares(xs, rss)
		seg.FDsPerHour, _ = LeastSquares(xs, fds)
		seg.ThreadsPerHour, _ = LeastSquares(xs, thr)
		seg.FDsStart, seg.FDsEnd = use[0].FDs, use[len(use)-1].FDs
		seg.ThreadsStart, seg.ThreadsEnd = use[0].Threads, use[len(use)-1].Threads
		seg.RSSFirstMiB, seg.RSSLastMiB = rss[0], rss[len(rss)-1]
		if h := len(use) / 2; len(use)-h >= 3 {
			seg.RSSSecondHalfMiBPerHour, _ = LeastSquares(xs[h:], rss[h:])
		}
		out = append(out, seg)
	}
	return out
}

// LeastSquares fits y = slope*x + intercept; slope 0 when every x is equal.
func LeastSquares(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	slope = sxy / sxx
	return slope, my - slope*mx
}

// ReadSamplesCSV reads a file StartSampler wrote (to re-analyse a run).
func ReadSamplesCSV(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []Sample
	for i, r := range recs {
		if i == 0 || len(r) != len(SampleHeader) {
			continue
		}
		ms, e1 := strconv.ParseInt(r[0], 10, 64)
		pid, e2 := strconv.Atoi(r[2])
		st, e3 := strconv.ParseInt(r[3], 10, 64)
		rss, e4 := strconv.ParseInt(r[5], 10, 64)
		fds, e5 := strconv.Atoi(r[6])
		thr, e6 := strconv.Atoi(r[7])
		for _, e := range []error{e1, e2, e3, e4, e5, e6} {
			if e != nil {
				return nil, fmt.Errorf("%s line %d: %v", path, i+1, e)
			}
		}
		at := time.UnixMilli(ms)
		out = append(out, Sample{At: at, Replica: r[1], PID: pid, Started: time.Unix(st, 0), RSSKiB: rss,
			FDs: fds, Threads: thr, Lifetime: at.Sub(time.Unix(st, 0))})
	}
	return out, nil
}

// SegmentTable renders segments as a fixed-width table.
func SegmentTable(segs []Segment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %-8s %-7s %-8s %-8s %4s | %8s %8s %8s %9s %9s | %5s %5s %5s %7s | %4s %4s %7s\n",
		"replica", "pid", "role", "from", "to", "n", "RSS0 MiB", "RSS1 MiB", "max MiB", "MiB/h", "MiB/h 2nd",
		"fd0", "fd1", "fdmax", "fds/h", "th0", "th1", "thr/h")
	for _, s := range segs {
		role := "standby"
		if s.Leading {
			role = "leader"
		}
		fmt.Fprintf(&b, "%-7s %-8d %-7s %-8s %-8s %4d | %8.1f %8.1f %8.1f %9.2f %9.2f | %5d %5d %5d %7.2f | %4d %4d %7.2f\n",
			s.Replica, s.PID, role, s.From.UTC().Format("15:04:05"), s.To.UTC().Format("15:04:05"), s.Samples,
			s.RSSFirstMiB, s.RSSLastMiB, s.RSSMaxMiB, s.RSSMiBPerHour, s.RSSSecondHalfMiBPerHour,
			s.FDsStart, s.FDsEnd, s.FDsMax, s.FDsPerHour, s.ThreadsStart, s.ThreadsEnd, s.ThreadsPerHour)
	}
	return b.String()
}

// LeaseAcquisitions are the times replica name's log says it acquired the Lease
// (`msg="Acquired lease"`, its ts= field).
func LeaseAcquisitions(log string) []time.Time {
	var out []time.Time
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `msg="Acquired lease"`) || !strings.HasPrefix(l, "ts=") {
			continue
		}
		f := strings.Fields(l)
		if at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "ts=")); err == nil {
			out = append(out, at)
		}
	}
	return out
}

// MarkLeadership sets Leading on the samples taken after their process acquired
// the Lease (acquired: per replica, from LeaseAcquisitions). A replica leads
// until its process ends (the operator exits when it loses the Lease), so an
// acquisition after the process's start and before the sample marks it.
func MarkLeadership(samples []Sample, acquired map[string][]time.Time) {
	for i := range samples {
		s := &samples[i]
		s.Leading, s.LeadingSince = false, time.Time{}
		for _, at := range acquired[s.Replica] {
			// Started has whole-second precision.
			if !at.Before(s.Started.Truncate(time.Second)) && !at.After(s.At) {
				s.Leading, s.LeadingSince = true, at
			}
		}
	}
}
