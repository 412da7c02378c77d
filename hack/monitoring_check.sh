#!/usr/bin/env bash
# The monitoring tier: manifests/monitoring as Prometheus and kustomize would take it.
#   - `kubectl kustomize manifests/monitoring` renders (the pinned kubectl of the e2e cache);
#   - the PrometheusRule's rules (as rendered) pass `promtool check rules`;
#   - every test of manifests/monitoring/tests/alerts_test.yaml passes `promtool test rules`
#     (each test run on its own, so the count is per test), and every alert has at least one
#     test where it fires and one where it does not;
#   - every metric the rules read is one the operator registers (controller/*.cc, cmd/operator/*.cc);
#   - every alert has runbook_url docs/runbooks/<alert>.md, and that page exists with its
#     Meaning, Impact, Diagnosis and Mitigation sections (and every runbook page is an alert's);
#   - the documentation (hack/docs_check.py): README.md keeps its two commands, every relative
#     link in README.md and docs/ resolves (files and #anchors), and docs/flags.md documents
#     every flag of the operator's --help and no other;
#   - the ServiceMonitor selects manifests/default's metrics Service, by a port it has, and
#     trusts the CA of the Secret the operator keeps its certificate in.
# promtool is built from the Prometheus Go module at PROMETHEUS_VERSION (hack/versions.env)
# into the binary cache (e2e/build-binaries.sh prometheus). Ends with
# "monitoring: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../e2e/lib.sh
source e2e/lib.sh

if ! e2e/build-binaries.sh k8s prometheus; then
  echo "monitoring: building promtool or kubectl failed"
  echo "monitoring: 0 passed, 1 failed"
  exit 1
fi
PROMTOOL=$KMT_PROM_BIN/promtool
KUBECTL=$KMT_K8S_BIN/kubectl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "monitoring: ok   $*"; }
bad() { fail=$((fail + 1)); echo "monitoring: FAIL $*"; }

if "$KUBECTL" kustomize manifests/monitoring >"$tmp/monitoring.yaml" 2>"$tmp/kustomize.err"; then
  ok "kubectl kustomize manifests/monitoring renders"
else
  bad "kubectl kustomize manifests/monitoring: $(cat "$tmp/kustomize.err")"
fi
if "$KUBECTL" kustomize manifests/default >"$tmp/default.yaml" 2>"$tmp/kustomize.err"; then
  ok "kubectl kustomize manifests/default renders"
else
  bad "kubectl kustomize manifests/default: $(cat "$tmp/kustomize.err")"
fi

# The rules as rendered, in Prometheus' own rule-file format; the tests split one per file.
/usr/bin/python3 - "$tmp" manifests/monitoring/tests/alerts_test.yaml <<'PY' || bad "could not extract the rules or split the tests"
import sys, yaml
tmp, tests_path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(f"{tmp}/monitoring.yaml")) if d]
rules = [d for d in docs if d.get("kind") == "PrometheusRule"]
if len(rules) != 1:
    sys.exit(f"expected one PrometheusRule, found {len(rules)}")
yaml.safe_dump(rules[0]["spec"], open(f"{tmp}/rules.yaml", "w"), sort_keys=False)
suite = yaml.safe_load(open(tests_path))
for i, test in enumerate(suite["tests"]):
    one = dict(suite, tests=[test])
    yaml.safe_dump(one, open(f"{tmp}/test-{i:02d}.yaml", "w"), sort_keys=False)
PY

if out=$("$PROMTOOL" check rules "$tmp/rules.yaml" 2>&1); then
  ok "promtool check rules: $(echo "$out" | grep -o '[0-9]* rules found')"
else
  bad "promtool check rules:"$'\n'"$out"
fi

for f in "$tmp"/test-*.yaml; do
  [[ -e $f ]] || { bad "no promtool tests"; break; }
  name=$(/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["tests"][0]["name"])' "$f")
  if out=$(cd "$tmp" && "$PROMTOOL" test rules "$(basename "$f")" 2>&1); then
    ok "promtool test: $name"
  else
    bad "promtool test: $name"$'\n'"$out"
  fi
done

# Coverage, metric names, runbooks, ServiceMonitor ↔ Service: one line per finding.
/usr/bin/python3 - "$tmp" <<'PY' >"$tmp/findings.txt"
import glob, re, sys, yaml
tmp = sys.argv[1]
spec = yaml.safe_load(open(f"{tmp}/rules.yaml"))
suite = yaml.safe_load(open("manifests/monitoring/tests/alerts_test.yaml"))
alerts = [r for g in spec["groups"] for r in g["rules"] if "alert" in r]
fires, quiet = set(), set()
for t in suite["tests"]:
    for a in t.get("alert_rule_test", []):
        (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
for a in alerts:
    name = a["alert"]
    print(("ok" if name in fires else "FAIL") + f" alert {name} has a test where it fires")
    print(("ok" if name in quiet else "FAIL") + f" alert {name} has a test where it does not fire")

# Metric names the operator registers: the first string literal of every AddCounter/AddGauge/
# AddHistogram call in controller/ and cmd/operator/ (histograms also as _bucket, _sum, _count).
exported = set()
for path in glob.glob("controller/*.cc") + glob.glob("cmd/operator/*.cc"):
    if path.endswith("_test.cc"):
        continue
    text = open(path).read()
    for m in re.finditer(r'Add(Counter|Gauge|Histogram)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"', text):
        exported.add(m.group(2))
        if m.group(1) == "Histogram":
            exported.update(m.group(2) + s for s in ("_bucket", "_sum", "_count"))
for a in alerts:
    # Every selector of these rules names its metric and the job: NAME{job="…", …}.
    names = set(re.findall(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\{', a["expr"]))
    print(("ok" if names else "FAIL") + f" alert {a['alert']} reads at least one metric")
    for n in sorted(names):
        print(("ok" if n in exported else "FAIL") + f" alert {a['alert']} reads {n}, which the operator exports")
    bare = len(re.findall(r'\{', a["expr"])) - len(re.findall(r'\{job="migration-target-metrics"', a["expr"]))
    print(("ok" if bare == 0 else "FAIL") + f" alert {a['alert']} selects job=\"migration-target-metrics\" in every selector")

# Runbooks: runbook_url is the page's path in this repository (docs/operating.md says why).
import os
for a in alerts:
    name, url = a["alert"], a.get("annotations", {}).get("runbook_url", "")
    want = f"docs/runbooks/{name}.md"
    print(("ok" if url == want else "FAIL") + f" alert {name} has runbook_url {want} (has {url!r})")
    page = open(want).read() if os.path.isfile(want) else ""
    print(("ok" if page else "FAIL") + f" the runbook {want} exists")
    sections = [s for s in ("Meaning", "Impact", "Diagnosis", "Mitigation")
                if not re.search(rf'^## {s}\s*$', page, re.M)]
    print(("ok" if page.startswith(f"# {name}\n") and not sections else "FAIL")
          + f" the runbook {want} is titled {name} and has its sections (missing: {sections or 'none'})")
    print(("ok" if "runbook" not in a.get("annotations", {}) else "FAIL")
          + f" alert {name} has no prose runbook annotation beside runbook_url")
names = {a["alert"] for a in alerts}
for page in sorted(glob.glob("docs/runbooks/*.md")):
    stem = os.path.basename(page)[:-3]
    print(("ok" if stem in names else "FAIL") + f" the runbook {page} belongs to an alert")

default = [d for d in yaml.safe_load_all(open(f"{tmp}/default.yaml")) if d]
mon = [d for d in yaml.safe_load_all(open(f"{tmp}/monitoring.yaml")) if d]
sm = next(d for d in mon if d["kind"] == "ServiceMonitor")
sel = sm["spec"]["selector"]["matchLabels"]
svcs = [d for d in default if d["kind"] == "Service"
        and all(d["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]
print(("ok" if len(svcs) == 1 else "FAIL") + f" the ServiceMonitor selects exactly one Service of manifests/default ({len(svcs)})")
if len(svcs) == 1:
    svc = svcs[0]
    ep = sm["spec"]["endpoints"][0]
    port = next((p for p in svc["spec"]["ports"] if p.get("name") == ep["port"]), None)
    print(("ok" if port else "FAIL") + f" the metrics Service has the port {ep['port']} the ServiceMonitor scrapes")
    dep = next(d for d in default if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    cport = next((p for p in c.get("ports", []) if port and p["name"] == port["targetPort"]), None)
    print(("ok" if cport else "FAIL") + " the Service's targetPort names a container port of the Deployment")
    args = c.get("args", [])
    bind = next((a.split("=", 1)[1] for a in args if a.startswith("--metrics-bind-address=")), "")
    print(("ok" if cport and bind.endswith(":" + str(cport["containerPort"])) else "FAIL")
          + f" the operator serves metrics on that container port ({bind})")
    print(("ok" if ep.get("scheme") == "https" and "--metrics-secure=false" not in args else "FAIL")
          + " the ServiceMonitor scrapes HTTPS and the operator serves HTTPS")
    print(("ok" if ep.get("bearerTokenFile") else "FAIL") + " the ServiceMonitor sends a bearer token")
ca_ref = sm["spec"]["endpoints"][0]["tlsConfig"]["ca"]
ca = ca_ref.get("configMap", {}).get("name", "")
boot = open("webhook/certs/bootstrap.h").read()
print(("ok" if ca and "secret" not in ca_ref and f'ca_config_map_name = "{ca}"' in boot else "FAIL")
      + f" the ServiceMonitor trusts the CA certificate the operator publishes in ConfigMap {ca or '(none)'}, and reads no Secret")
server = sm["spec"]["endpoints"][0]["tlsConfig"]["serverName"]
webhook_svc = next((d for d in default if d["kind"] == "Service" and d["metadata"]["name"] + "." + d["metadata"]["namespace"] + ".svc" == server), None)
print(("ok" if webhook_svc else "FAIL") + f" the ServiceMonitor's serverName {server} is the webhook Service the certificate names")
PY
[[ -s $tmp/findings.txt ]] || bad "the coverage and consistency checks printed nothing"

# The documentation checks need the operator's --help: build it (a cache hit after
# `bazel test //...` in hack/test.sh) with the disk cache the test command uses.
if /usr/bin/python3 hack/docs_check.py --self-test >"$tmp/docs-self.txt" 2>&1; then
  echo "ok docs_check.py --self-test" >>"$tmp/findings.txt"
else
  echo "FAIL docs_check.py --self-test: $(tail -3 "$tmp/docs-self.txt")" >>"$tmp/findings.txt"
fi
CACHE_ROOT=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
if bazel build --disk_cache="$CACHE_ROOT/bazel-disk" //cmd/operator:operator >"$tmp/bazel.log" 2>&1 &&
  operator="$(bazel info bazel-bin 2>/dev/null)/cmd/operator/operator" && [[ -x $operator ]]; then
  /usr/bin/python3 hack/docs_check.py "$operator" >>"$tmp/findings.txt" 2>&1
else
  echo "FAIL building //cmd/operator:operator for the flags check: $(tail -3 "$tmp/bazel.log")" >>"$tmp/findings.txt"
fi
while IFS= read -r line; do
  case $line in
    ok\ *) ok "${line#ok }" ;;
    *) bad "${line#FAIL }" ;;
  esac
done <"$tmp/findings.txt"

echo "monitoring: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
