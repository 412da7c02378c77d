// Command webhook-echo is a validating admission webhook for the real-node scenario
// (e2e/tests/realnode_test.go): served over HTTPS from a pod on infra-0, it denies objects whose
// name starts with "deny-" and names its pod in the message, so a test can tell that the API
// server reached this very pod through its Service. Standard library only; the image is built by
// e2e/node.sh from the static binary.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
)

type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

type request struct {
	UID    string `json:"uid"`
	Name   string `json:"name"`
	Object struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"object"`
}

type response struct {
	UID     string  `json:"uid"`
	Allowed bool    `json:"allowed"`
	Status  *status `json:"status,omitempty"`
}

type status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func main() {
	addr := flag.String("listen", ":8443", "address")
	cert := flag.String("cert", "/tls/tls.crt", "serving certificate")
	key := flag.String("key", "/tls/tls.key", "serving key")
	flag.Parse()
	pod, _ := os.Hostname()
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		var rv review
		if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Request == nil {
			http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
			return
		}
		name := rv.Request.Object.Metadata.Name
		if name == "" {
			name = rv.Request.Name
		}
		resp := &response{UID: rv.Request.UID, Allowed: !strings.HasPrefix(name, "deny-")}
		if !resp.Allowed {
			resp.Status = &status{Code: http.StatusForbidden, Message: "denied by webhook-echo pod " + pod}
		}
		log.Printf("review %s name=%s allowed=%v from %s", rv.Request.UID, name, resp.Allowed, r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review{APIVersion: rv.APIVersion, Kind: rv.Kind, Response: resp})
	})
	log.Printf("webhook-echo %s serving on %s", pod, *addr)
	log.Fatal(http.ListenAndServeTLS(*addr, *cert, *key, nil))
}
