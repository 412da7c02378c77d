package framework

// The operator's /metrics as a scraper sees it: HTTPS on the metrics port (the webhook's
// certificate, trusted through the cluster CA), every request carrying a ServiceAccount
// token that the operator checks with a TokenReview and a SubjectAccessReview (get on
// /metrics, granted by the ClusterRole migration-target-metrics-reader).

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	k8sv1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetricsReaderClusterRole is manifests/default's role for scrapers.
const MetricsReaderClusterRole = "migration-target-metrics-reader"

// ScraperServiceAccount is the ServiceAccount MetricValue scrapes as (bound to the reader role).
const ScraperServiceAccount = "kmt-e2e-scraper"

var tokens sync.Map // ServiceAccount name -> token

// ServiceAccountToken returns a token (TokenRequest, one hour) of the ServiceAccount name in
// the operator's namespace, creating the account when missing; with reader, a
// ClusterRoleBinding of the metrics-reader role to it is made sure of too. One token per
// account and test process.
func (f *Framework) ServiceAccountToken(t testing.TB, name string, reader bool) string {
	t.Helper()
	if v, ok := tokens.Load(name); ok {
		return v.(string)
	}
	ctx := Ctx(t)
	_, err := f.Admin.Kube.CoreV1().ServiceAccounts(OperatorNamespace).Create(ctx,
		&k8sv1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ServiceAccount %s: %v", name, err)
	}
	if reader {
		_, err = f.Admin.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: OperatorNamespace}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("bind %s to %s: %v", name, MetricsReaderClusterRole, err)
		}
	}
	hour := int64(3600)
	tr, err := f.Admin.Kube.CoreV1().ServiceAccounts(OperatorNamespace).CreateToken(ctx, name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s: %v", name, err)
	}
	tokens.Store(name, tr.Status.Token)
	return tr.Status.Token
}

// MetricsURL is the HTTPS URL of replica index's /metrics.
func MetricsURL(t testing.TB, index int) string {
	return fmt.Sprintf("https://127.0.0.1:%d/metrics", MetricsPort(t, index))
}

// Scrape GETs url with "Authorization: Bearer token" (none when token is ""), verifying the
// server against the cluster CA. It fails the test when no HTTP answer comes.
func Scrape(t testing.TB, url, token string) (status int, body string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: WebhookTLS(t)}}
	// A client per scrape: close its connection when done, or every scrape leaves an idle
	// keep-alive TLS connection open on the operator until its idle timeout (hundreds of
	// them in a polling loop: 10-18 MiB of the operator's resident set for ~2 minutes).
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// ScrapeAsReader scrapes replica index as ScraperServiceAccount. A binding just made may
// take a moment to reach the API server's authorizer (and the operator keeps a denial 2 s),
// so a 403 is asked again for up to 15 s.
func (f *Framework) ScrapeAsReader(t testing.TB, index int) string {
	t.Helper()
	token := f.ServiceAccountToken(t, ScraperServiceAccount, true)
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, body := Scrape(t, MetricsURL(t, index), token)
		if status == http.StatusOK {
			return body
		}
		if status != http.StatusForbidden || time.Now().After(deadline) {
			t.Fatalf("GET %s as %s: %d %s", MetricsURL(t, index), ScraperServiceAccount, status, body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// MetricValue reads one sample of replica index's /metrics: the line whose name is name
// (with or without labels). It fails when the page cannot be read and reports found=false
// when no such sample is exposed.
func (f *Framework) MetricValue(t testing.TB, index int, name string) (value float64, found bool) {
	t.Helper()
	return SampleValue(t, f.ScrapeAsReader(t, index), name)
}

// SampleValue finds the first sample named name in a Prometheus text page.
func SampleValue(t testing.TB, page, name string) (value float64, found bool) {
	t.Helper()
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		rest, ok := strings.CutPrefix(l, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			t.Fatalf("metric %s: %q: %v", name, l, err)
		}
		return v, true
	}
	return 0, false
}
