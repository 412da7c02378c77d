package tests

// The differential tier's link to the real webhook (issue 18 §1): hack/differential.sh
// proves that //api/testing:term_verdicts (api::ParseAddedTerm) agrees with Kubernetes'
// own validation on generated terms; this scenario proves that the binary's verdicts are
// the webhook's, by sending a subset of the same generated terms through the real API
// server and the operator's webhook as the admin's server-side dry-run VMIM creates.

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	kubecli "kubevirt.io/client-go/kubevirt"

	"kmt.local/e2e/framework"
)

type termVerdict struct {
	Valid  bool        `json:"valid"`
	Causes []termCause `json:"causes"`
	Error  string      `json:"error"`
}

type termCause struct {
	Type    string `json:"type"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (c termCause) String() string { return c.Type + " " + c.Field + ": " + c.Message }

// termVerdictsBin is KMT_TERM_VERDICTS_BIN, or //api/testing:term_verdicts built now.
func termVerdictsBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("KMT_TERM_VERDICTS_BIN"); b != "" {
		return b
	}
	if r := framework.Run(t, 15*time.Minute, nil, "bazel", "build", "//api/testing:term_verdicts"); r.Code != 0 {
		t.Fatalf("bazel build //api/testing:term_verdicts: %s", r)
	}
	r := framework.Run(t, time.Minute, nil, "bazel", "info", "bazel-bin")
	if r.Code != 0 {
		t.Fatalf("bazel info bazel-bin: %s", r)
	}
	return filepath.Join(strings.TrimSpace(r.Stdout), "api", "testing", "term_verdicts")
}

// generatedTexts runs the differential tier's generator (e2e/tools/k8s/differential,
// another Go module) for n annotation values.
func generatedTexts(t *testing.T, seed int64, n int) []string {
	t.Helper()
	r := framework.Run(t, 10*time.Minute, []string{"CGO_ENABLED=0", "GOFLAGS=-trimpath -buildvcs=false -mod=readonly"},
		"go", "-C", "e2e/tools/k8s", "run", "./differential/cmd/termgen", "-seed", strconv.FormatInt(seed, 10), "-n", strconv.Itoa(n))
	if r.Code != 0 {
		t.Fatalf("termgen: %s", r)
	}
	var texts []string
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("termgen line %q: %v", sc.Text(), err)
		}
		texts = append(texts, line.Text)
	}
	if len(texts) != n {
		t.Fatalf("termgen printed %d texts, want %d", len(texts), n)
	}
	return texts
}

func binaryVerdicts(t *testing.T, bin string, texts []string) []termVerdict {
	t.Helper()
	var in strings.Builder
	for i, s := range texts {
		fmt.Fprintf(&in, "{\"id\":%d,\"hex\":\"%s\"}\n", i, hex.EncodeToString([]byte(s)))
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	var verdicts []termVerdict
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v termVerdict
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Error != "" {
			t.Fatalf("%s answered %q (%v)", bin, l, err)
		}
		verdicts = append(verdicts, v)
	}
	if len(verdicts) != len(texts) {
		t.Fatalf("%s answered %d lines for %d texts", bin, len(verdicts), len(texts))
	}
	return verdicts
}

// Every generated term gets from the webhook exactly what term_verdicts says: admitted
// when valid; else 422 Invalid from the webhook with the same causes (type, field,
// message) in the same order.
func TestDifferentialWebhook(t *testing.T) {
	f := fw(t)
	ns := f.Namespace(t)
	seed := framework.EnvSeed(t, "KMT_DIFF_SEED")
	n := framework.EnvInt(t, "KMT_DIFF_E2E_N", 300)
	t.Logf("seed %d, %d terms", seed, n)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: replay with KMT_DIFF_SEED=%d KMT_E2E_RUN=TestDifferentialWebhook e2e/run.sh", seed, seed)
		}
	})

	// virt-api admits migrations only of a VMI that runs; the creates are dry runs, so it
	// never sees one in flight.
	f.StartVMI(t, f.Admin, ns, framework.NewVMI("vmi", ""), "")
	texts := generatedTexts(t, seed, n)
	verdicts := binaryVerdicts(t, termVerdictsBin(t), texts)
	// The admin's client without the warning printer (most valid terms match no node, and
	// the webhook warns about each).
	cfg := rest.CopyConfig(f.Admin.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	virt, err := kubecli.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	denied := fmt.Sprintf("admission webhook %q denied the request", framework.VMIMWebhookName)
	valid, failures := 0, 0
	start := time.Now()
	for i, text := range texts {
		m := framework.NewMigration(fmt.Sprintf("diff-%04d", i), "vmi", framework.WithTerm(text))
		_, err := virt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(
			framework.Ctx(t), m, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		v := verdicts[i]
		fail := func(format string, args ...any) {
			failures++
			if failures <= 20 {
				t.Errorf("term %d %q: %s", i, text, fmt.Sprintf(format, args...))
			}
		}
		if v.Valid {
			valid++
			if err != nil {
				fail("term_verdicts: valid; API server: %v", err)
			}
			continue
		}
		if err == nil {
			fail("term_verdicts: invalid %v; API server admitted it", v.Causes)
			continue
		}
		status, ok := err.(apierrors.APIStatus)
		if !ok || !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), denied) {
			fail("want 422 Invalid from the webhook; got %v", err)
			continue
		}
		var got []termCause
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				got = append(got, termCause{Type: string(c.Type), Field: c.Field, Message: c.Message})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(v.Causes) {
			fail("causes differ\n  webhook:       %v\n  term_verdicts: %v", got, v.Causes)
		}
	}
	t.Logf("%d terms through the API server in %v: %d admitted, %d denied, %d disagreements",
		n, time.Since(start).Round(time.Millisecond), valid, n-valid, failures)
	if valid == 0 || valid == n {
		t.Errorf("the generator is off balance: %d of %d valid", valid, n)
	}
}
