package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	k8sv1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"kmt.local/e2e/framework"
)

// TestRealNodeRunsPodsFromLocalImages: a pod from the image built and imported by e2e/node.sh
// (no registry) is started by infra-0's kubelet and containerd, not played by the fake node
// agent; its HTTP readiness probe gates Ready (and its Service endpoint) both ways; kubectl logs
// and exec (with stdin) reach it through the API server and the kubelet; its Service's
// ClusterIP answers from the host and from the pod itself (kube-proxy); a container over its
// memory limit is OOMKilled by the kernel; deleting the pod removes its containers from containerd.
func TestRealNodeRunsPodsFromLocalImages(t *testing.T) {
	f := fw(t)
	node := framework.RequireRealNode(t)
	ns := f.BareNamespace(t)
	kube := f.Admin.Kube
	token := fmt.Sprintf("kmt-%d", time.Now().UnixNano())

	web := &k8sv1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: k8sv1.PodSpec{
			TerminationGracePeriodSeconds: ptrInt64(1),
			Containers: []k8sv1.Container{{
				Name: "web", Image: node.Image, ImagePullPolicy: k8sv1.PullNever,
				// Ready only once /www/ready.html exists, 3 s after start.
				Command: []string{"/bin/sh", "-c", "echo started " + token + "; echo hello-" + token +
					" >/www/index.html; (sleep 3; echo ok >/www/ready.html) & exec /bin/httpd -f -p 8080 -h /www"},
				Ports: []k8sv1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &k8sv1.Probe{
					ProbeHandler:  k8sv1.ProbeHandler{HTTPGet: &k8sv1.HTTPGetAction{Path: "/ready.html", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
				},
			}},
		},
	}
	framework.OnRealNode(&web.Spec)
	created, err := kube.CoreV1().Pods(ns).Create(framework.Ctx(t), web, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	svc := &k8sv1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: k8sv1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []k8sv1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	if svc, err = kube.CoreV1().Services(ns).Create(framework.Ctx(t), svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}

	// Running before Ready: the probe, not the agent, decides readiness.
	sawRunningUnready := false
	var pod *k8sv1.Pod
	framework.Eventually(t, 90*time.Second, "pod web Running and Ready on "+node.Name, func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		if p.Status.Phase == k8sv1.PodRunning && !podReady(p) {
			sawRunningUnready = true
		}
		return p.Status.Phase == k8sv1.PodRunning && podReady(p), fmt.Sprintf("phase %s, conditions %+v", p.Status.Phase, p.Status.Conditions)
	})
	if pod.Spec.NodeName != node.Name {
		t.Fatalf("pod on node %q, want %s", pod.Spec.NodeName, node.Name)
	}
	if !sawRunningUnready {
		t.Errorf("never saw the pod Running but not Ready: the readiness probe (ready 3 s after start) did not gate it")
	}
	if _, cidr, err := net.ParseCIDR(node.PodCIDR); err != nil || !cidr.Contains(net.ParseIP(pod.Status.PodIP)) {
		t.Fatalf("pod IP %q not in the node's pod CIDR %s (a fake IP from the node agent?)", pod.Status.PodIP, node.PodCIDR)
	}
	if pod.Status.HostIP != node.IP {
		t.Errorf("hostIP %q, want the node's %s", pod.Status.HostIP, node.IP)
	}
	if cs := pod.Status.ContainerStatuses; len(cs) != 1 || !strings.HasPrefix(cs[0].ContainerID, "containerd://") ||
		!strings.HasSuffix(cs[0].Image, node.Image) {
		t.Fatalf("container status %+v: want a containerd container of %s", cs, node.Image)
	}

	t.Run("logs", func(t *testing.T) {
		r := framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "logs", "web")
		if r.Code != 0 || !strings.Contains(r.Stdout, "started "+token) {
			t.Fatalf("kubectl logs: want %q\n%s", "started "+token, r)
		}
	})

	t.Run("exec", func(t *testing.T) {
		r := framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "exec", "web", "--", "cat", "/etc/hostname")
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "web" {
			t.Fatalf("kubectl exec cat /etc/hostname: want web\n%s", r)
		}
		r = framework.KubectlAs(t, framework.AdminUser, "stdin-"+token+"\n", "-n", ns, "exec", "-i", "web", "--", "cat")
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "stdin-"+token {
			t.Fatalf("kubectl exec -i cat: want the stdin back\n%s", r)
		}
		r = framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "exec", "web", "--", "sh", "-c", "exit 7")
		if r.Code != 7 {
			t.Fatalf("kubectl exec sh -c 'exit 7': want exit 7\n%s", r)
		}
	})

	t.Run("service", func(t *testing.T) {
		framework.Eventually(t, 30*time.Second, "EndpointSlice of web with the pod's IP ready", func() (bool, string) {
			return endpointReady(t, f, ns, "web", pod.Status.PodIP)
		})
		url := fmt.Sprintf("http://%s:80/index.html", svc.Spec.ClusterIP)
		framework.Eventually(t, 30*time.Second, "GET "+url+" from the host (kube-proxy)", func() (bool, string) {
			body, err := httpGet(url)
			return err == nil && strings.TrimSpace(body) == "hello-"+token, fmt.Sprintf("body %q, err %v", body, err)
		})
		// From inside the pod, through its own Service (hairpin).
		r := framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "exec", "web", "--", "sh", "-c",
			fmt.Sprintf(`printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc -w 5 %s 80`, svc.Spec.ClusterIP))
		if r.Code != 0 || !strings.Contains(r.Stdout, "hello-"+token) {
			t.Fatalf("pod -> its Service %s: want hello-%s\n%s", svc.Spec.ClusterIP, token, r)
		}
	})

	t.Run("readiness", func(t *testing.T) {
		r := framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "exec", "web", "--", "rm", "/www/ready.html")
		if r.Code != 0 {
			t.Fatalf("rm ready.html: %s", r)
		}
		framework.Eventually(t, 20*time.Second, "pod web not Ready and out of its Service's ready endpoints", func() (bool, string) {
			p, err := kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if podReady(p) {
				return false, "still Ready"
			}
			ready, msg := endpointReady(t, f, ns, "web", pod.Status.PodIP)
			return !ready, "endpoint still ready: " + msg
		})
		r = framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "exec", "web", "--", "sh", "-c", "echo ok >/www/ready.html")
		if r.Code != 0 {
			t.Fatalf("restore ready.html: %s", r)
		}
		framework.Eventually(t, 20*time.Second, "pod web Ready again", func() (bool, string) {
			p, err := kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "web", metav1.GetOptions{})
			return err == nil && podReady(p), fmt.Sprintf("err %v", err)
		})
	})

	t.Run("oom-killed", func(t *testing.T) {
		limit := resource.MustParse("24Mi")
		hog := &k8sv1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hog"},
			Spec: k8sv1.PodSpec{
				RestartPolicy: k8sv1.RestartPolicyNever, TerminationGracePeriodSeconds: ptrInt64(1),
				Containers: []k8sv1.Container{{
					Name: "hog", Image: node.Image, ImagePullPolicy: k8sv1.PullNever,
					Command:   []string{"/bin/tail", "/dev/zero"}, // one line, never ending: memory grows
					Resources: k8sv1.ResourceRequirements{Limits: k8sv1.ResourceList{k8sv1.ResourceMemory: limit}},
				}},
			},
		}
		framework.OnRealNode(&hog.Spec)
		if _, err := kube.CoreV1().Pods(ns).Create(framework.Ctx(t), hog, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod hog: %v", err)
		}
		framework.Eventually(t, 90*time.Second, "pod hog's container OOMKilled", func() (bool, string) {
			p, err := kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "hog", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cs := range p.Status.ContainerStatuses {
				if term := cs.State.Terminated; term != nil {
					return term.Reason == "OOMKilled" && term.ExitCode == 137, fmt.Sprintf("terminated %+v", term)
				}
			}
			return false, fmt.Sprintf("phase %s, statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
	})

	t.Run("delete-cleans-up", func(t *testing.T) {
		uid := string(created.UID)
		filter := fmt.Sprintf(`labels."io.kubernetes.pod.uid"==%s`, uid)
		if got := ctrIDs(node.Ctr(t, "containers", "ls", "-q", filter)); len(got) != 2 {
			t.Fatalf("containerd holds %d containers of pod web (%v), want 2 (sandbox and web)", len(got), got)
		}
		if err := kube.CoreV1().Pods(ns).Delete(framework.Ctx(t), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete pod web: %v", err)
		}
		framework.Eventually(t, 60*time.Second, "pod web gone from the API (the kubelet confirmed its end)", func() (bool, string) {
			_, err := kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("err %v", err)
		})
		framework.Eventually(t, 90*time.Second, "pod web's sandbox and container removed from containerd", func() (bool, string) {
			got := ctrIDs(node.Ctr(t, "containers", "ls", "-q", filter))
			return len(got) == 0, fmt.Sprintf("still there: %v", got)
		})
	})
}

func ptrInt64(v int64) *int64 { return &v }

func podReady(p *k8sv1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == k8sv1.PodReady {
			return c.Status == k8sv1.ConditionTrue
		}
	}
	return false
}

// endpointReady reports whether a Service's EndpointSlices list ip as ready.
func endpointReady(t *testing.T, f *framework.Framework, ns, svc, ip string) (bool, string) {
	slices, err := f.Admin.Kube.DiscoveryV1().EndpointSlices(ns).List(framework.Ctx(t),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready != nil && *e.Conditions.Ready
			seen = append(seen, fmt.Sprintf("%v ready=%v", e.Addresses, ready))
			for _, a := range e.Addresses {
				if a == ip && ready {
					return true, strings.Join(seen, "; ")
				}
			}
		}
	}
	return false, strings.Join(seen, "; ")
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func ctrIDs(out string) []string {
	return strings.Fields(out)
}

// TestRealNodeWebhookServedByPod: an HTTPS validating webhook served by a pod on infra-0 (the
// static webhook-echo image) is called by the API server through its Service (kube-proxy's
// ClusterIP rules on the host), with TLS verified for <service>.<namespace>.svc: a ConfigMap named
// deny-* is refused with the pod's name in the message, another is admitted.
func TestRealNodeWebhookServedByPod(t *testing.T) {
	f := fw(t)
	node := framework.RequireRealNode(t)
	ns := f.BareNamespace(t)
	kube := f.Admin.Kube
	caPEM, certPEM, keyPEM := signServing(t, "echo-webhook."+ns+".svc")
	if _, err := kube.CoreV1().Secrets(ns).Create(framework.Ctx(t), &k8sv1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-tls"}, Type: k8sv1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	pod := &k8sv1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-webhook", Labels: map[string]string{"app": "echo-webhook"}},
		Spec: k8sv1.PodSpec{
			TerminationGracePeriodSeconds: ptrInt64(1),
			Volumes: []k8sv1.Volume{{Name: "tls", VolumeSource: k8sv1.VolumeSource{
				Secret: &k8sv1.SecretVolumeSource{SecretName: "echo-tls"}}}},
			Containers: []k8sv1.Container{{
				Name: "webhook", Image: node.WebhookImage, ImagePullPolicy: k8sv1.PullNever,
				Ports:        []k8sv1.ContainerPort{{Name: "https", ContainerPort: 8443}},
				VolumeMounts: []k8sv1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}},
				ReadinessProbe: &k8sv1.Probe{
					ProbeHandler: k8sv1.ProbeHandler{HTTPGet: &k8sv1.HTTPGetAction{
						Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: k8sv1.URISchemeHTTPS}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	framework.OnRealNode(&pod.Spec)
	if _, err := kube.CoreV1().Pods(ns).Create(framework.Ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	if _, err := kube.CoreV1().Services(ns).Create(framework.Ctx(t), &k8sv1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-webhook"},
		Spec: k8sv1.ServiceSpec{Selector: map[string]string{"app": "echo-webhook"},
			Ports: []k8sv1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}
	var podIP string
	framework.Eventually(t, 90*time.Second, "webhook pod Ready on "+node.Name, func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(framework.Ctx(t), "echo-webhook", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		podIP = p.Status.PodIP
		return p.Spec.NodeName == node.Name && podReady(p), fmt.Sprintf("node %q, phase %s", p.Spec.NodeName, p.Status.Phase)
	})
	framework.Eventually(t, 30*time.Second, "EndpointSlice of echo-webhook ready", func() (bool, string) {
		return endpointReady(t, f, ns, "echo-webhook", podIP)
	})

	name := "kmt-e2e-echo-" + ns
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	port := int32(443)
	path := "/validate"
	timeout := int32(5)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "echo.realnode.kmt.local",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "echo-webhook", Path: &path, Port: &port},
				CABundle: caPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(framework.Ctx(t), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingWebhookConfiguration: %v", err)
	}
	t.Cleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(framework.Ctx(t), name, metav1.DeleteOptions{})
	})

	// The configuration takes effect asynchronously: wait until a deny-* create is refused by the pod.
	i := 0
	framework.Eventually(t, 30*time.Second, "ConfigMap deny-* refused by the webhook pod", func() (bool, string) {
		i++
		_, err := kube.CoreV1().ConfigMaps(ns).Create(framework.Ctx(t), &k8sv1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("deny-%d", i)}}, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "denied by webhook-echo pod echo-webhook"), fmt.Sprintf("err %v", err)
	})
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(framework.Ctx(t), &k8sv1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ok-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("ConfigMap ok-1 through the webhook: %v", err)
	}
	r := framework.KubectlAs(t, framework.AdminUser, "", "-n", ns, "logs", "echo-webhook")
	if r.Code != 0 || !strings.Contains(r.Stdout, "name=ok-1 allowed=true") {
		t.Fatalf("webhook pod's log lacks the review of ok-1\n%s", r)
	}
}

// signServing returns the cluster CA and a P-256 serving certificate and key for dnsName, signed
// by the cluster CA ($KMT_E2E_DIR/pki/ca.{crt,key}), all PEM.
func signServing(t *testing.T, dnsName string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	dir := filepath.Join(os.Getenv("KMT_E2E_DIR"), "pki")
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(caKeyPEM)
	if cb == nil || kb == nil {
		t.Fatal("cluster CA: no PEM")
	}
	caCert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		if k1, err1 := x509.ParsePKCS1PrivateKey(kb.Bytes); err1 == nil {
			caKey = k1
		} else {
			t.Fatalf("cluster CA key: %v", err)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: dnsName},
		DNSNames:     []string{dnsName},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return caPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
