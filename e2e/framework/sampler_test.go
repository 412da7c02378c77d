package framework

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLeastSquares(t *testing.T) {
	slope, icpt := LeastSquares([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	if math.Abs(slope-2) > 1e-9 || math.Abs(icpt-1) > 1e-9 {
		t.Errorf("y = 2x + 1: got slope %v intercept %v", slope, icpt)
	}
	if slope, icpt := LeastSquares([]float64{5, 5}, []float64{1, 3}); slope != 0 || icpt != 2 {
		t.Errorf("equal x: got slope %v intercept %v, want 0 and the mean 2", slope, icpt)
	}
}

// Two lifetimes of replica "0" (a kill and a restart) and one of "1": each is its
// own segment, the warm-up is left out, and slopes are per hour.
func TestSegmentsPerLifetime(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var samples []Sample
	add := func(replica string, pid int, started time.Time, from, to time.Duration, rss func(h float64) float64, fds, threads func(h float64) int) {
		for d := from; d <= to; d += 10 * time.Second {
			at := t0.Add(d)
			h := at.Sub(started).Hours()
			samples = append(samples, Sample{At: at, Replica: replica, PID: pid, Started: started,
				RSSKiB: int64(rss(h) * 1024), FDs: fds(h), Threads: threads(h), Lifetime: at.Sub(started)})
		}
	}
	// Replica 0, first life: 30 MiB during the warm-up (ignored), then flat 20 MiB.
	add("0", 100, t0, 0, 20*time.Minute, func(h float64) float64 {
		if h < 1.0/60 {
			return 30
		}
		return 20
	}, func(float64) int { return 40 }, func(float64) int { return 9 })
	// Replica 0, second life: RSS +6 MiB/h, one fd more every 10 minutes.
	restart := t0.Add(21 * time.Minute)
	add("0", 200, restart, 21*time.Minute, 51*time.Minute, func(h float64) float64 { return 20 + 6*h },
		func(h float64) int { return 40 + int(h*6) }, func(float64) int { return 9 })
	// Replica 1, throughout, threads -2/h (integer steps average out).
	add("1", 300, t0, 0, 51*time.Minute, func(float64) float64 { return 18 }, func(float64) int { return 35 },
		func(h float64) int { return 12 - int(math.Round(h*2)) })

	segs := Segments(samples, 60*time.Second)
	if len(segs) != 3 {
		t.Fatalf("got %d segments, want 3: %+v", len(segs), segs)
	}
	first, second, other := segs[0], segs[1], segs[2]
	if first.PID != 100 || second.PID != 200 || other.PID != 300 {
		t.Fatalf("segments in order of first sample, one per process: %d %d %d", first.PID, second.PID, other.PID)
	}
	if first.WarmupSkipped != 6 || first.RSSMaxMiB != 20 || first.RSSMiBPerHour != 0 {
		t.Errorf("first life: warm-up %d samples skipped (want 6), max %v MiB (want 20), slope %v (want 0)",
			first.WarmupSkipped, first.RSSMaxMiB, first.RSSMiBPerHour)
	}
	if math.Abs(second.RSSMiBPerHour-6) > 0.01 || math.Abs(second.RSSSecondHalfMiBPerHour-6) > 0.01 {
		t.Errorf("second life: RSS slope %v MiB/h, second half %v, want 6", second.RSSMiBPerHour, second.RSSSecondHalfMiBPerHour)
	}
	if second.FDsPerHour < 4 || second.FDsPerHour > 8 || second.FDsStart != 40 || second.FDsEnd != 43 {
		t.Errorf("second life: fds %d -> %d at %v/h, want 40 -> 43 at about 6/h", second.FDsStart, second.FDsEnd, second.FDsPerHour)
	}
	if math.Abs(other.ThreadsPerHour+2) > 0.5 || other.ThreadsMax != 12 {
		t.Errorf("replica 1: threads slope %v/h (want about -2), max %d (want 12)", other.ThreadsPerHour, other.ThreadsMax)
	}
}

// What StartSampler writes reads back to the same samples.
func TestSamplerCSVRoundTrip(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KMT_E2E_DIR", dir)
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	// This test process stands in for a replica: its comm is not "operator", so it is
	// not sampled; ReadProcess on it must work nevertheless.
	self, err := ReadProcess(os.Getpid())
	if err != nil || self.RSSKiB <= 0 || self.FDs <= 0 || self.Threads <= 0 || time.Since(self.Started) < 0 || time.Since(self.Started) > time.Hour {
		t.Fatalf("ReadProcess(self) = %+v, %v", self, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids", "operator-0.pid"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ReplicaPID("0") != 0 {
		t.Errorf("pid 1 is not an operator process, ReplicaPID must say 0")
	}
	path := filepath.Join(dir, "s.csv")
	s, err := StartSampler(path, 10*time.Millisecond, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	got, errs := s.Stop()
	if len(got) != 0 || errs != 0 {
		t.Errorf("no operator process: got %d samples, %d errors", len(got), errs)
	}
	back, err := ReadSamplesCSV(path)
	if err != nil || len(back) != 0 {
		t.Errorf("header-only CSV: %d samples, %v", len(back), err)
	}
	self.At, self.Replica, self.Lifetime = time.Now(), "x", time.Since(self.Started)
	rec := self.record()
	if len(rec) != len(SampleHeader) {
		t.Fatalf("record has %d fields, header %d", len(rec), len(SampleHeader))
	}
}

// A process that acquires the Lease mid-life is two segments, standby and leader,
// and the leader's first warm-up (its caches filling) is left out; an acquisition
// by an earlier process of the same replica marks nothing.
func TestSegmentsSplitAtLeaseAcquisition(t *testing.T) {
	log := `ts=2026-12-01T10:00:01.5Z level=info msg="Acquired lease" lease=x identity=old
ts=2026-12-01T10:05:00.000001Z level=info msg="Started leader election" identity=new
ts=2026-12-01T10:15:00.25Z level=info msg="Acquired lease" lease=x identity=new
ts=2026-12-01T10:16:00Z level=info msg="Released gate" vmim=a/b`
	acq := LeaseAcquisitions(log)
	if len(acq) != 2 || !acq[1].Equal(time.Date(2026, 12, 1, 10, 15, 0, 250e6, time.UTC)) {
		t.Fatalf("LeaseAcquisitions = %v", acq)
	}
	started := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	var samples []Sample
	for d := time.Duration(0); d <= 30*time.Minute; d += 10 * time.Second {
		at := started.Add(d)
		rss := int64(20 << 10)
		if at.After(acq[1]) {
			rss = 30 << 10 // the caches of a leader; flat afterwards
			if at.Sub(acq[1]) < 30*time.Second {
				rss = 25 << 10 // still filling: inside the leader's warm-up
			}
		}
		samples = append(samples, Sample{At: at, Replica: "0", PID: 7, Started: started, RSSKiB: rss, FDs: 30, Threads: 33, Lifetime: d})
	}
	MarkLeadership(samples, map[string][]time.Time{"0": acq})
	segs := Segments(samples, time.Minute)
	if len(segs) != 2 || segs[0].Leading || !segs[1].Leading {
		t.Fatalf("want a standby then a leader segment, got %+v", segs)
	}
	if segs[0].RSSMiBPerHour != 0 || segs[0].RSSMaxMiB != 20 || segs[0].To.After(acq[1]) {
		t.Errorf("standby: slope %v, max %v, to %s", segs[0].RSSMiBPerHour, segs[0].RSSMaxMiB, segs[0].To)
	}
	if segs[1].RSSMiBPerHour != 0 || segs[1].RSSFirstMiB != 30 || segs[1].From.Sub(acq[1]) < time.Minute {
		t.Errorf("leader: slope %v (want 0: the warm-up left out), first %v MiB, from %s", segs[1].RSSMiBPerHour, segs[1].RSSFirstMiB, segs[1].From)
	}
}
