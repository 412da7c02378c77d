//go:build soak

package soak

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"kmt.local/e2e/framework"
)

// TestAnalyzeCSV re-analyses a soak's samples (a finished run's CSV, or the one a
// running soak is writing), split at each process's Lease acquisition as the
// replicas' logs in KMT_SOAK_LOGS tell it (e2e/soak.sh copies them next to the CSV):
//
//	cd e2e && KMT_SOAK_CSV=/tmp/kmt-soak-result.csv KMT_SOAK_LOGS=/tmp/kmt-soak-result-logs \
//	  go test -tags soak -run TestAnalyzeCSV -v ./soak/
func TestAnalyzeCSV(t *testing.T) {
	path := os.Getenv("KMT_SOAK_CSV")
	if path == "" {
		t.Skip("KMT_SOAK_CSV names the CSV to analyse")
	}
	samples, err := framework.ReadSamplesCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("KMT_SOAK_LOGS"); dir != "" {
		acquired := map[string][]time.Time{}
		for _, r := range replicas {
			b, err := os.ReadFile(filepath.Join(dir, "operator-"+r.Name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			acquired[r.Name] = framework.LeaseAcquisitions(string(b))
		}
		framework.MarkLeadership(samples, acquired)
	}
	segs := framework.Segments(samples, warmup)
	if len(segs) == 0 {
		t.Fatalf("%s: %d samples, no process lifetime longer than the %s warm-up plus 3 samples", path, len(samples), warmup)
	}
	t.Logf("%s: %d samples; slopes per process lifetime after a %s warm-up:\n%s", path, len(samples), warmup, framework.SegmentTable(segs))
}
