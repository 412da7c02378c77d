package tests

// /metrics as kubebuilder v4 serves it, against the real kube-apiserver: HTTPS on the
// operator's metrics port, the scraper's ServiceAccount token checked by a TokenReview and
// its right to get /metrics by a SubjectAccessReview (manifests/default's
// migration-target-metrics-reader role). e2e/operator.sh runs replica 0 with the default
// (secure) metrics flags and manifests/default's RBAC.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kmt.local/e2e/framework"
)

func TestMetricsAuthReaderScrapes(t *testing.T) {
	t.Parallel()
	f := fw(t)
	page := f.ScrapeAsReader(t, 0)
	for _, want := range []string{
		"kmt_operator_ready 1\n",
		`leader_election_master_status{name="migration-target-operator"} `,
		"# TYPE kmt_gated_target_pods gauge\n",
		"# TYPE kmt_unschedulable_placed_migrations gauge\n",
		"# TYPE workqueue_depth gauge\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the reader's scrape lacks %q:\n%.2000s", want, page)
		}
	}
}

func TestMetricsAuthRefusesWhoMayNot(t *testing.T) {
	t.Parallel()
	f := fw(t)
	url := framework.MetricsURL(t, 0)
	nonReader := "kmt-e2e-nonreader"
	cases := []struct {
		name, token string
		status      int
		body        string
	}{
		{"no token", "", http.StatusUnauthorized, "Unauthorized\n"},
		{"a made-up token", "not-a-token", http.StatusUnauthorized, "Unauthorized\n"},
		{"a token the API server did not issue", strings.Repeat("x", 40) + ".e30.sig", http.StatusUnauthorized, "Unauthorized\n"},
		{"a ServiceAccount without the reader role", f.ServiceAccountToken(t, nonReader, false), http.StatusForbidden,
			fmt.Sprintf("Authorization denied for user system:serviceaccount:%s:%s\n", framework.OperatorNamespace, nonReader)},
	}
	for _, tc := range cases {
		status, body := framework.Scrape(t, url, tc.token)
		if status != tc.status || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, body, tc.status, tc.body)
		}
	}
	// Plain HTTP on the metrics port gets no page.
	c := http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(strings.Replace(url, "https://", "http://", 1)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP on the metrics port answered 200")
		}
	}
}

func TestMetricsAuthRevokedReaderLosesAccessWithinTheCacheTTL(t *testing.T) {
	t.Parallel()
	f := fw(t)
	name := "kmt-e2e-revoked-" + framework.RandomSuffix()
	token := f.ServiceAccountToken(t, name, true)
	url := framework.MetricsURL(t, 0)
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, _ := framework.Scrape(t, url, token)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new reader %s never got 200 (last %d)", name, status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := f.Admin.Kube.RbacV1().ClusterRoleBindings().Delete(framework.Ctx(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete ClusterRoleBinding %s: %v", name, err)
	}
	revoked := time.Now()
	// The operator keeps an allowed answer 10 s (--authorization-cache-authorized-ttl).
	for {
		status, body := framework.Scrape(t, url, token)
		if status == http.StatusForbidden {
			t.Logf("the revoked reader got 403 %s after the binding went", time.Since(revoked).Round(100*time.Millisecond))
			break
		}
		if status != http.StatusOK {
			t.Fatalf("unexpected answer to the revoked reader: %d %s", status, body)
		}
		if time.Since(revoked) > 13*time.Second {
			t.Fatalf("the revoked reader still scrapes %s after the binding went (TTL 10 s)", time.Since(revoked).Round(100*time.Millisecond))
		}
		time.Sleep(250 * time.Millisecond)
	}
	_ = f.Admin.Kube.CoreV1().ServiceAccounts(framework.OperatorNamespace).Delete(framework.Ctx(t), name, metav1.DeleteOptions{})
}
