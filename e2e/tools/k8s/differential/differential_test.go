package differential

// The differential tier (hack/differential.sh): seeded terms and nodes go through this
// project's C++ functions (//api/testing:term_verdicts, path in KMT_TERM_VERDICTS_BIN)
// and through Kubernetes' own code at the version e2e/tools/k8s/go.mod pins:
//
//   - validation: the annotation's bytes decoded as the API server decodes a body
//     (sigs.k8s.io/json, case-sensitive, strict errors for unknown and duplicate
//     members), converted v1 → internal core by the generated conversion, and checked by
//     k8s.io/kubernetes/pkg/apis/core/validation ValidateNodeSelectorTerm (what the API
//     server runs on a pod's required node affinity). The project must say "invalid"
//     exactly when Kubernetes does, or when one of the project's stricter rules (docs/api.md
//     "Validation", projectRules below) applies; on inputs Kubernetes decodes cleanly
//     the causes must be Kubernetes' own, type, field and message.
//   - matching: k8s.io/component-helpers/scheduling/corev1/nodeaffinity
//     (NewLazyErrorNodeSelector(...).Match, an error counting as "no match", as the
//     scheduler's NodeAffinity filter does) against api::TermMatchesNode and the
//     explainer's two matchers.
//
// KMT_DIFF_SEED replays a run (the seed is printed first and on failure); KMT_DIFF_N sets
// the number of inputs per test (default 10,000).

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1conv "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	sigsjson "sigs.k8s.io/json"
)

const (
	annotation = "migration-target.kubevirt.io/added-node-selector-term"
	// The project's caps (api/added_term.h kMaxAddedTermBytes, api/validation.h
	// kMaxRequirements).
	maxTermBytes    = 16 * 1024
	maxRequirements = 64
)

var annotationPath = field.NewPath("metadata", "annotations").Key(annotation)

func seedAndCount(t *testing.T) (int64, int) {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("KMT_DIFF_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KMT_DIFF_SEED=%q: %v", s, err)
		}
		seed = v
	}
	n := 10000
	if s := os.Getenv("KMT_DIFF_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("KMT_DIFF_N=%q: want a positive integer", s)
		}
		n = v
	}
	t.Logf("seed %d, %d inputs (replay: KMT_DIFF_SEED=%d hack/differential.sh)", seed, n, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: replay with KMT_DIFF_SEED=%d KMT_DIFF_RUN=%s hack/differential.sh", seed, seed, t.Name())
		}
	})
	return seed, n
}

// runVerdicts sends one JSON line per input through the C++ binary and returns its
// answer lines, in order.
func runVerdicts(t *testing.T, lines [][]byte) []map[string]json.RawMessage {
	t.Helper()
	bin := os.Getenv("KMT_TERM_VERDICTS_BIN")
	if bin == "" {
		t.Fatal("KMT_TERM_VERDICTS_BIN is not set: run hack/differential.sh (it builds //api/testing:term_verdicts)")
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, l := range lines {
			w.Write(l)
			w.WriteByte('\n')
		}
		w.Flush()
		stdin.Close()
	}()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("answer line %d is no JSON object: %v: %q", len(out), err, sc.Text())
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		t.Fatalf("reading %s: %v", bin, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	if len(out) != len(lines) {
		t.Fatalf("%s answered %d lines for %d inputs", bin, len(out), len(lines))
	}
	for i, m := range out {
		if e, ok := m["error"]; ok {
			t.Fatalf("input %d: %s: %s", i, bin, e)
		}
		if string(m["id"]) != strconv.Itoa(i) {
			t.Fatalf("answer %d has id %s", i, m["id"])
		}
	}
	return out
}

// ---- validation ----

// cause is a StatusCause as both sides render it.
type cause struct {
	Type    string `json:"type"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (c cause) String() string { return fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message) }

// upstream is what Kubernetes makes of one annotation value.
type upstream struct {
	decodeErr error   // not JSON, or a member of the wrong type
	strict    []error // unknown or duplicate members (rejected under fieldValidation=Strict)
	errs      field.ErrorList
	term      v1.NodeSelectorTerm
}

func (u upstream) valid() bool { return u.decodeErr == nil && len(u.strict) == 0 && len(u.errs) == 0 }

func (u upstream) String() string {
	var parts []string
	if u.decodeErr != nil {
		parts = append(parts, "decode: "+u.decodeErr.Error())
	}
	for _, e := range u.strict {
		parts = append(parts, "strict: "+e.Error())
	}
	for _, e := range u.errs {
		parts = append(parts, e.Error())
	}
	if len(parts) == 0 {
		return "valid"
	}
	return strings.Join(parts, "\n    ")
}

func validateUpstream(text []byte) upstream {
	var u upstream
	u.strict, u.decodeErr = sigsjson.UnmarshalStrict(text, &u.term,
		sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if u.decodeErr != nil {
		return u
	}
	var internal core.NodeSelectorTerm
	if err := corev1conv.Convert_v1_NodeSelectorTerm_To_core_NodeSelectorTerm(&u.term, &internal, nil); err != nil {
		u.decodeErr = fmt.Errorf("conversion: %w", err)
		return u
	}
	// A new pod: invalid label values are not tolerated in required node affinity.
	u.errs = validation.ValidateNodeSelectorTerm(internal, false, annotationPath)
	return u
}

// projectRules are the project's documented rules beyond Kubernetes' (docs/api.md
// "Validation"), by name, that apply to a text Kubernetes decoded.
func projectRules(text []byte, u upstream) []string {
	var rules []string
	if len(text) > maxTermBytes {
		rules = append(rules, "size")
	}
	for _, e := range u.strict {
		if strings.Contains(e.Error(), "unknown field") {
			rules = append(rules, "unknown-member")
		} else if strings.Contains(e.Error(), "duplicate field") {
			rules = append(rules, "duplicate-member")
		} else {
			rules = append(rules, "strict:"+e.Error())
		}
	}
	if u.decodeErr != nil {
		return rules
	}
	n := len(u.term.MatchExpressions) + len(u.term.MatchFields)
	if n == 0 {
		rules = append(rules, "empty")
	}
	if n > maxRequirements {
		rules = append(rules, "too-many")
	}
	for _, r := range u.term.MatchExpressions {
		if (r.Operator == v1.NodeSelectorOpGt || r.Operator == v1.NodeSelectorOpLt) && len(r.Values) == 1 {
			if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
				rules = append(rules, "gt-lt-integer")
				break
			}
		}
	}
	if string(bytes.TrimSpace(text)) == "null" {
		rules = append(rules, "null-term")
	}
	if _, inValues := nullElements(text); inValues {
		rules = append(rules, "null-value")
	}
	return rules
}

// nullElements: a matchExpressions / matchFields list holds a JSON null in place of a
// requirement (Go's decoder makes it an empty requirement), or a values list in place
// of a value (Go makes it "").
func nullElements(text []byte) (inLists, inValues bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(text, &doc) != nil {
		return false, false
	}
	isNull := func(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
	for _, list := range []string{"matchExpressions", "matchFields"} {
		var reqs []json.RawMessage
		if raw, ok := doc[list]; !ok || json.Unmarshal(raw, &reqs) != nil {
			continue
		}
		for _, raw := range reqs {
			if isNull(raw) {
				inLists = true
				continue
			}
			var r map[string]json.RawMessage
			var values []json.RawMessage
			if json.Unmarshal(raw, &r) != nil || json.Unmarshal(r["values"], &values) != nil {
				continue
			}
			for _, v := range values {
				inValues = inValues || isNull(v)
			}
		}
	}
	return inLists, inValues
}

// replacedEscape: the text holds a \u escape of a lone UTF-16 surrogate, which Go's
// decoder turns into U+FFFD and nlohmann rejects as no JSON (RFC 8259 §8.2 leaves it
// undefined). Both say "invalid", with different causes.
func replacedEscape(text []byte) bool {
	if bytes.Contains(text, []byte("\xef\xbf\xbd")) || bytes.Contains(bytes.ToLower(text), []byte(`\ufffd`)) {
		return false // a U+FFFD of its own: cannot tell
	}
	var doc any
	if json.Unmarshal(text, &doc) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.ContainsRune(v, utf8.RuneError)
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for k, e := range v {
				if strings.ContainsRune(k, utf8.RuneError) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(doc)
}

// ruleCause: a project cause that one of the stricter rules produced (the cause
// comparison leaves them out).
func ruleCause(c cause) bool {
	return c.Type == "FieldValueTooMany" ||
		strings.Contains(c.Message, "must have at least one requirement") ||
		strings.Contains(c.Message, "for 'Gt', 'Lt' operators, the value must be an integer")
}

func upstreamCauses(errs field.ErrorList) []cause {
	out := make([]cause, 0, len(errs))
	for _, e := range errs {
		out = append(out, cause{Type: string(e.Type), Field: e.Field, Message: e.ErrorBody()})
	}
	return out
}

type stats struct {
	total, upstreamValid, projectValid, causesCompared int
	onlyRule                                           map[string]int // project invalid only by this rule
	disagreements                                      int
}

func TestValidationDifferential(t *testing.T) {
	seed, n := seedAndCount(t)
	g := NewGen(seed)
	texts := make([][]byte, n)
	lines := make([][]byte, n)
	for i := range texts {
		texts[i] = g.Text(false)
		lines[i] = []byte(fmt.Sprintf(`{"id":%d,"hex":"%s"}`, i, hex.EncodeToString(texts[i])))
	}
	start := time.Now()
	answers := runVerdicts(t, lines)
	t.Logf("C++ verdicts for %d texts in %v", n, time.Since(start))

	st := stats{total: n, onlyRule: map[string]int{}}
	for i, text := range texts {
		var valid bool
		var causes []cause
		if err := json.Unmarshal(answers[i]["valid"], &valid); err != nil {
			t.Fatalf("input %d: valid: %v", i, err)
		}
		if err := json.Unmarshal(answers[i]["causes"], &causes); err != nil {
			t.Fatalf("input %d: causes: %v", i, err)
		}
		u := validateUpstream(text)
		rules := projectRules(text, u)
		want := u.valid() && len(rules) == 0
		if u.valid() {
			st.upstreamValid++
		}
		if valid {
			st.projectValid++
		}
		if u.decodeErr == nil && len(u.errs) == 0 && !valid && len(rules) == 1 {
			st.onlyRule[rules[0]]++
		}
		if valid != want {
			st.disagreements++
			if st.disagreements <= 20 {
				t.Errorf("input %d: project valid=%v, want %v (Kubernetes: %s; project rules: %v)\n  text %q\n  project causes: %v",
					i, valid, want, u, rules, text, causes)
			}
			continue
		}
		// Same verdict: on texts Kubernetes reads as the project does, the causes are
		// Kubernetes' own.
		inLists, inValues := nullElements(text)
		if u.decodeErr != nil || len(u.strict) != 0 || !utf8.Valid(text) || len(text) > maxTermBytes ||
			inLists || inValues || string(bytes.TrimSpace(text)) == "null" || replacedEscape(text) {
			continue
		}
		st.causesCompared++
		var mine []cause
		for _, c := range causes {
			if !ruleCause(c) {
				mine = append(mine, c)
			}
		}
		theirs := upstreamCauses(u.errs)
		if fmt.Sprint(mine) != fmt.Sprint(theirs) {
			st.disagreements++
			if st.disagreements <= 20 {
				t.Errorf("input %d: causes differ\n  text %q\n  project:    %v\n  Kubernetes: %v", i, text, mine, theirs)
			}
		}
	}
	var ruleCounts []string
	for r, c := range st.onlyRule {
		ruleCounts = append(ruleCounts, fmt.Sprintf("%s %d", r, c))
	}
	sort.Strings(ruleCounts)
	t.Logf("%d texts: Kubernetes valid %d, project valid %d, causes compared on %d; "+
		"valid for Kubernetes (strict errors aside), invalid by one project rule only: %s; disagreements %d",
		st.total, st.upstreamValid, st.projectValid, st.causesCompared, strings.Join(ruleCounts, ", "), st.disagreements)
	if st.upstreamValid < n/10 || st.projectValid < n/10 {
		t.Errorf("the generator is off balance: %d valid for Kubernetes, %d for the project, of %d", st.upstreamValid, st.projectValid, n)
	}
}

// ---- matching ----

func toV1(t Term) v1.NodeSelectorTerm {
	conv := func(rs []Requirement) []v1.NodeSelectorRequirement {
		var out []v1.NodeSelectorRequirement
		for _, r := range rs {
			out = append(out, v1.NodeSelectorRequirement{Key: r.Key, Operator: v1.NodeSelectorOperator(r.Operator), Values: r.Values})
		}
		return out
	}
	return v1.NodeSelectorTerm{MatchExpressions: conv(t.MatchExpressions), MatchFields: conv(t.MatchFields)}
}

func matchUpstream(c MatchCase) (bool, error) {
	sel := nodeaffinity.NewLazyErrorNodeSelector(&v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{toV1(c.Term)}})
	return sel.Match(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: c.Labels}})
}

func TestMatchingDifferential(t *testing.T) {
	seed, n := seedAndCount(t)
	g := NewGen(seed)
	cases := make([]MatchCase, n)
	lines := make([][]byte, n)
	for i := range cases {
		cases[i] = g.Match()
		b, err := json.Marshal(struct {
			ID int `json:"id"`
			MatchCase
		}{i, cases[i]})
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
	}
	start := time.Now()
	answers := runVerdicts(t, lines)
	t.Logf("C++ verdicts for %d cases in %v", n, time.Since(start))

	matched, errored, disagreements := 0, 0, 0
	for i, c := range cases {
		want, err := matchUpstream(c)
		if err != nil {
			errored++
		}
		if want {
			matched++
		}
		for _, key := range []string{"match", "explain_added", "explain_own"} {
			var got bool
			if err := json.Unmarshal(answers[i][key], &got); err != nil {
				t.Fatalf("case %d: %s: %v", i, key, err)
			}
			if got != want {
				disagreements++
				if disagreements <= 20 {
					b, _ := json.Marshal(c)
					t.Errorf("case %d: project %s=%v, nodeaffinity %v (error: %v)\n  %s", i, key, got, want, err, b)
				}
			}
		}
	}
	t.Logf("%d cases: nodeaffinity matched %d, errored (no match) %d; disagreements %d", n, matched, errored, disagreements)
	// Each kind of outcome must be well represented (at least 5%).
	if matched < n/20 || errored < n/20 || n-matched-errored < n/20 {
		t.Errorf("the generator is off balance: %d matches, %d errors, of %d", matched, errored, n)
	}
}
