// Package differential generates NodeSelectorTerms and nodes for the differential tier
// (hack/differential.sh): the same seeded inputs go through this project's C++ functions
// (//api/testing:term_verdicts) and through Kubernetes' own code at the pinned version
// (differential_test.go), and the verdicts must agree.
//
// This file uses the standard library only, so e2e/tests (another module) can run it
// through cmd/termgen for the webhook scenario.
package differential

import (
	"fmt"
	"math/rand"
	"strings"
)

// Gen draws every input from one seeded source: a seed replays a run exactly.
type Gen struct {
	r *rand.Rand
	// clean: the input being drawn is meant to be valid, so every breakage is 10 times
	// rarer (otherwise few terms of several requirements would be valid).
	clean bool
}

// NewGen returns a generator for seed.
func NewGen(seed int64) *Gen { return &Gen{r: rand.New(rand.NewSource(seed))} }

func (g *Gen) pct(p int) bool { return g.r.Intn(100) < p }

// mut: a breakage of probability p percent (p per mille in a clean input).
func (g *Gen) mut(p int) bool {
	if g.clean {
		return g.r.Intn(1000) < p
	}
	return g.pct(p)
}

func (g *Gen) pick(xs []string) string { return xs[g.r.Intn(len(xs))] }

// ---- texts: keys, values, operators, node names ----

var (
	validKeys = []string{
		"zone", "gpu", "kubernetes.io/hostname", "topology.kubernetes.io/zone",
		"node-role.kubernetes.io/worker", "cpu-count", "example.com/a_b.c-d", "A", "x1",
		"metadata.name", "kubevirt.io/schedulable", "a.b/c",
	}
	poolValues = []string{
		"", "a", "b", "node-a", "node-b", "us-east-1a", "true", "8", "16", "007", "0",
		"-3", "+5", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"1e3", "0x10", " 5", "5 ", "a b", "Z_z.z-9", "1_000", "+", "-", "++5", "+-3",
	}
	intValues = []string{
		"0", "1", "4", "8", "16", "100", "007", "-1", "-3", "-0", "+5", "+17",
		"9223372036854775807", "9223372036854775806", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "1.5", "x", "", " 5", "0x10",
	}
	validValues = []string{"", "a", "b", "node-a", "us-east-1a", "true", "8", "16", "007", "0",
		"Z_z.z-9", "9223372036854775807", "x.y_z"}
	validInts = []string{"0", "1", "4", "8", "16", "100", "007", "9223372036854775807"}
	operators = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
	badOps    = []string{
		"in", "IN", "notin", "exists", "gt", "LT", "=", "==", "!=", "", " In", "In ",
		"Equal", "DoesNotExists", "NotExists", "Exist", "Gte",
	}
	validNodeNames = []string{"node-a", "node-b", "node-c", "a.b.c", "n1", "0", "x-y.z"}
	badNodeNames   = []string{
		"Node-A", "a_b", "-a", "a-", "a..b", ".a", "a.", "", "a b", "a/b", "nöde", "*",
	}
	fieldKeys    = []string{"metadata.name"}
	badFieldKeys = []string{
		"metadata.namespace", "spec.unschedulable", "metadata.labels", "", "Metadata.name",
		"metadata.name ", "metadata.uid", "name", "status.phase", "kubernetes.io/hostname",
	}
)

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
const lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"

func (g *Gen) chars(alphabet string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(alphabet[g.r.Intn(len(alphabet))])
	}
	return b.String()
}

// name of exactly n chars from [A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9] (valid iff n <= 63).
func (g *Gen) namePart(n int) string {
	if n <= 0 {
		return ""
	}
	if n == 1 {
		return g.chars(alnum, 1)
	}
	return g.chars(alnum, 1) + g.chars(alnum+"-_.", n-2) + g.chars(alnum, 1)
}

// dnsLabel of exactly n chars (n >= 1), lower case, valid as an RFC 1123 label when n <= 63.
func (g *Gen) dnsLabel(n int) string {
	if n == 1 {
		return g.chars(lowerAlnum, 1)
	}
	return g.chars(lowerAlnum, 1) + g.chars(lowerAlnum+"-", n-2) + g.chars(lowerAlnum, 1)
}

// subdomain of exactly n chars (n >= 1): labels of 1..63 joined by dots.
func (g *Gen) subdomain(n int) string {
	var parts []string
	left := n
	for left > 0 {
		l := 1 + g.r.Intn(63)
		if l > left {
			l = left
		}
		if left-l == 1 { // a dot needs a label after it
			l = left
		}
		if l > 63 {
			l = 63
			if left-l == 1 {
				l = 62
			}
		}
		parts = append(parts, g.dnsLabel(l))
		left -= l
		if left > 0 {
			left-- // the dot
		}
	}
	return strings.Join(parts, ".")
}

// nonUTF8 is a fragment that is no valid UTF-8 (a lone continuation byte, a truncated
// sequence, an overlong encoding, a surrogate encoded in UTF-8).
func (g *Gen) nonUTF8() string {
	return g.pick([]string{"\xff", "\x80", "\xc3", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80"})
}

func (g *Gen) unicode() string {
	return g.pick([]string{"zöne", "日本", "a\u200bb", "é", "\u00a0a", "a\u2028b", "ﬁ", "😀"})
}

// Key draws a label key: mostly valid, and every way IsQualifiedName can fail.
// utf8: only valid UTF-8.
func (g *Gen) Key(utf8 bool) string {
	if g.clean && !g.pct(8) {
		return g.pick(validKeys)
	}
	switch n := g.r.Intn(100); {
	case n < 45:
		return g.pick(validKeys)
	case n < 49:
		return g.namePart(63)
	case n < 52:
		return g.namePart(64)
	case n < 55:
		return g.subdomain(253) + "/" + g.namePart(1+g.r.Intn(63))
	case n < 58:
		return g.subdomain(254) + "/" + g.namePart(5)
	case n < 60:
		return g.subdomain(10) + "/" + g.namePart(64)
	case n < 63:
		return g.pick([]string{"Example.com/x", "ex_ample.com/x", "example.com./x", "-a.com/x",
			"a.com-/x", g.dnsLabel(64) + ".com/x", "a..com/x", "a b/c", "1.2.3.4/x"})
	case n < 67:
		return g.pick([]string{"/x", "example.com/", "a/b/c", "", "/", "//", "a//b"})
	case n < 72:
		return g.pick([]string{"-a", "a-", ".a", "a.", "_a", "a_", "a b", " a", "a ", "a:b",
			"a*", "a\tb", "a\"b", "a\\b", "a\nb"})
	case n < 75:
		return g.unicode()
	case n < 78:
		if utf8 {
			return g.unicode()
		}
		return "zone" + g.nonUTF8()
	default:
		l := g.r.Intn(12)
		return g.chars("aZ09-_./ :", l)
	}
}

// Value draws a label value: mostly valid, and every way IsValidLabelValue can fail.
func (g *Gen) Value(utf8 bool) string {
	if g.clean && !g.pct(8) {
		return g.pick(validValues)
	}
	switch n := g.r.Intn(100); {
	case n < 50:
		return g.pick(poolValues)
	case n < 55:
		return g.namePart(63)
	case n < 59:
		return g.namePart(64)
	case n < 62:
		return g.namePart(1 + g.r.Intn(62))
	case n < 70:
		return g.pick([]string{"-a", "a-", ".a", "a.", "_a", "a_", "a/b", "a:b", "a b", "a,b",
			"a=b", "(a)", "a\tb", "a\"b", "a\\b"})
	case n < 74:
		return g.unicode()
	case n < 77:
		if utf8 {
			return g.unicode()
		}
		return "a" + g.nonUTF8()
	case n < 90:
		return g.pick(intValues)
	default:
		return g.chars("aZ09-_./ +", g.r.Intn(10))
	}
}

// NodeName draws a matchFields value / node name: DNS subdomains and what is not one.
func (g *Gen) NodeName(utf8 bool) string {
	if g.clean && !g.pct(8) {
		return g.pick(validNodeNames)
	}
	switch n := g.r.Intn(100); {
	case n < 55:
		return g.pick(validNodeNames)
	case n < 60:
		return g.subdomain(253)
	case n < 64:
		return g.subdomain(254)
	case n < 67:
		return g.dnsLabel(64) // one label of 64: still a subdomain
	case n < 90:
		return g.pick(badNodeNames)
	case n < 93 && !utf8:
		return "node" + g.nonUTF8()
	default:
		return g.chars("az09-.A_", 1+g.r.Intn(8))
	}
}

func (g *Gen) op(field bool) string {
	switch n := g.r.Intn(100); {
	case n < 88 || (g.clean && n < 99):
		if field {
			if g.pct(85) {
				return g.pick([]string{"In", "NotIn"})
			}
		}
		return g.pick(operators)
	default:
		return g.pick(badOps)
	}
}

// ---- requirements as values (for matching) ----

// Requirement is a NodeSelectorRequirement; Values nil is "no values member".
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Term is a NodeSelectorTerm.
type Term struct {
	MatchExpressions []Requirement `json:"matchExpressions,omitempty"`
	MatchFields      []Requirement `json:"matchFields,omitempty"`
}

func (g *Gen) valueCount(op string) int {
	if g.mut(12) { // any count, for every operator
		return []int{0, 1, 2, 3, 5}[g.r.Intn(5)]
	}
	switch op {
	case "In", "NotIn":
		return 1 + g.r.Intn(3)
	case "Exists", "DoesNotExist":
		return 0
	default:
		return 1
	}
}

func (g *Gen) expression(utf8 bool) Requirement {
	r := Requirement{Key: g.Key(utf8), Operator: g.op(false)}
	n := g.valueCount(r.Operator)
	for i := 0; i < n; i++ {
		if (r.Operator == "Gt" || r.Operator == "Lt") && g.pct(80) {
			if g.clean && !g.pct(8) {
				r.Values = append(r.Values, g.pick(validInts))
			} else {
				r.Values = append(r.Values, g.pick(intValues))
			}
		} else {
			r.Values = append(r.Values, g.Value(utf8))
		}
	}
	return r
}

func (g *Gen) fieldRequirement(utf8 bool) Requirement {
	r := Requirement{Operator: g.op(true)}
	if !g.mut(15) {
		r.Key = g.pick(fieldKeys)
	} else {
		r.Key = g.pick(badFieldKeys)
	}
	n := 1
	if g.mut(15) {
		n = []int{0, 2, 3}[g.r.Intn(3)]
	}
	for i := 0; i < n; i++ {
		r.Values = append(r.Values, g.NodeName(utf8))
	}
	return r
}

func (g *Gen) count() int {
	switch n := g.r.Intn(100); {
	case n < 8:
		return 0
	case n < 60:
		return 1
	case n < 85:
		return 2
	case n < 97:
		return 3 + g.r.Intn(4)
	default:
		return 60 + g.r.Intn(10) // around the 64-requirement cap
	}
}

// TermValue draws a well-typed term (invalid values allowed).
func (g *Gen) TermValue(utf8 bool) Term {
	var t Term
	ne, nf := g.count(), 0
	if g.pct(35) {
		nf = 1 + g.r.Intn(2)
		if g.pct(2) {
			nf = 60 + g.r.Intn(10)
		}
	}
	if ne+nf == 0 && g.pct(70) {
		ne = 1
	}
	for i := 0; i < ne; i++ {
		t.MatchExpressions = append(t.MatchExpressions, g.expression(utf8))
	}
	for i := 0; i < nf; i++ {
		t.MatchFields = append(t.MatchFields, g.fieldRequirement(utf8))
	}
	return t
}

// ---- matching cases ----

// MatchCase is a term and a node.
type MatchCase struct {
	Term   Term              `json:"term"`
	Labels map[string]string `json:"labels"`
	Name   string            `json:"name"`
}

// matchKeys and matchValues are small so that terms and labels meet often.
var (
	matchKeys   = []string{"zone", "gpu", "cpus", "kubernetes.io/hostname", "example.com/tier", "bad key", ""}
	matchValues = []string{"a", "b", "", "node-a", "8", "16", "007", "9223372036854775807", "x",
		"-3", "+5", "9223372036854775808", " 5", "a b"} // the last five are no label values
	validMatchValues = matchValues[:9]
)

func (g *Gen) matchRequirement() Requirement {
	r := Requirement{Key: g.pick(matchKeys), Operator: g.op(false)}
	if g.clean {
		r.Key = g.pick(matchKeys[:5]) // no invalid keys
	}
	if g.mut(15) {
		r.Key = g.Key(true)
	}
	n := g.valueCount(r.Operator)
	for i := 0; i < n; i++ {
		if g.clean && !g.pct(3) && (r.Operator == "Gt" || r.Operator == "Lt") {
			r.Values = append(r.Values, g.pick([]string{"8", "16", "007", "0", "9223372036854775807"}))
		} else if g.clean && !g.pct(3) {
			r.Values = append(r.Values, g.pick(validMatchValues))
		} else if !g.mut(15) {
			r.Values = append(r.Values, g.pick(matchValues))
		} else {
			r.Values = append(r.Values, g.Value(true))
		}
	}
	return r
}

// Match draws a matching case: a term (valid and invalid requirements) and a node.
func (g *Gen) Match() MatchCase {
	g.clean = g.pct(70)
	defer func() { g.clean = false }()
	var c MatchCase
	ne := []int{0, 1, 1, 1, 2, 2, 3, 4}[g.r.Intn(8)]
	nf := 0
	if g.pct(40) {
		nf = 1 + g.r.Intn(2)
	}
	for i := 0; i < ne; i++ {
		c.Term.MatchExpressions = append(c.Term.MatchExpressions, g.matchRequirement())
	}
	for i := 0; i < nf; i++ {
		r := g.fieldRequirement(true)
		if g.pct(60) {
			r.Values = nil
			for j := 0; j < []int{1, 1, 1, 1, 0, 2}[g.r.Intn(6)]; j++ {
				r.Values = append(r.Values, g.pick([]string{"node-a", "node-b", "", "node-c"}))
			}
		}
		c.Term.MatchFields = append(c.Term.MatchFields, r)
	}
	c.Labels = map[string]string{}
	for _, k := range matchKeys {
		if g.pct(55) {
			if g.pct(75) {
				c.Labels[k] = g.pick(validMatchValues)
			} else {
				c.Labels[k] = g.pick(matchValues)
			}
		}
	}
	c.Name = g.pick([]string{"node-a", "node-b", "node-c", "n1"})
	if g.pct(3) {
		c.Name = "" // nodeaffinity reads no metadata.name field off a node without a name
	}
	return c
}

// ---- validation texts: the annotation as bytes ----

// str renders s as a JSON string: raw bytes (so text that is no UTF-8 stays so), with
// the escapes JSON requires; sometimes more escapes than needed (\u00xx, \/), which
// decode to the same text.
func (g *Gen) str(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	loud := g.pct(5)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, "\\u%04x", c)
		case loud && c < 0x80 && g.pct(30):
			if c == '/' && g.pct(50) {
				b.WriteString("\\/")
			} else {
				fmt.Fprintf(&b, "\\u%04X", c)
			}
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

type member struct{ name, value string }

func (g *Gen) object(members []member) string {
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	sp := ""
	if g.pct(10) {
		sp = g.pick([]string{" ", "\n", "\t", "\r\n  "})
	}
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = sp + g.str(m.name) + sp + ":" + sp + m.value
	}
	return "{" + strings.Join(parts, ",") + sp + "}"
}

func array(items []string) string { return "[" + strings.Join(items, ",") + "]" }

// wrongType is JSON of some type other than want ("string", "array", "object").
func (g *Gen) wrongType(want string) string {
	var all []string
	for _, v := range []struct{ typ, text string }{
		{"number", "1"}, {"number", "-0.5e3"}, {"bool", "true"}, {"bool", "false"},
		{"string", `"In"`}, {"string", `""`}, {"array", "[]"}, {"array", `["a"]`},
		{"object", "{}"}, {"object", `{"a":"b"}`},
	} {
		if v.typ != want {
			all = append(all, v.text)
		}
	}
	return g.pick(all)
}

// deep is n nested arrays (closed or not).
func deep(n int, closed bool) string {
	s := strings.Repeat("[", n)
	if closed {
		s += strings.Repeat("]", n)
	}
	return s
}

var unknownMembers = []string{
	"matchLabels", "MatchExpressions", "matchexpressions", "matchExpression", "MATCHFIELDS",
	"nodeSelectorTerms", "x", "", "matchExpressions ", "weight",
}
var unknownRequirementMembers = []string{"Key", "value", "Values", "operators", "Operator", "effect", "x", ""}

func (g *Gen) unknownValue() string {
	switch g.r.Intn(6) {
	case 0:
		return deep(1+g.r.Intn(300), true)
	case 1:
		return `{"a":{"b":{"c":[1,2,{"d":null}]}}}`
	default:
		return g.wrongType("")
	}
}

func (g *Gen) valuesText(values []string, utf8 bool) string {
	if values == nil && g.mut(50) {
		return "" // no values member
	}
	items := make([]string, len(values))
	for i, v := range values {
		items[i] = g.str(v)
	}
	if g.mut(3) && len(items) > 0 { // an element of another type
		i := g.r.Intn(len(items))
		if g.mut(40) {
			items[i] = "null"
		} else {
			items[i] = g.wrongType("string")
		}
	}
	if g.mut(2) {
		return g.wrongType("array")
	}
	if g.mut(2) {
		return "null"
	}
	return array(items)
}

func (g *Gen) requirementText(r Requirement, utf8 bool) string {
	if g.mut(1) {
		return g.pick([]string{"null", `"zone In a"`, "[]", "1", `{}`})
	}
	var ms []member
	if !g.mut(4) {
		v := g.str(r.Key)
		if g.mut(2) {
			v = g.wrongType("string")
		} else if g.mut(2) {
			v = "null"
		}
		ms = append(ms, member{"key", v})
	}
	if !g.mut(4) {
		v := g.str(r.Operator)
		if g.mut(2) {
			v = g.wrongType("string")
		} else if g.mut(2) {
			v = "null"
		}
		ms = append(ms, member{"operator", v})
	}
	if v := g.valuesText(r.Values, utf8); v != "" {
		ms = append(ms, member{"values", v})
	}
	if g.mut(3) {
		ms = append(ms, member{g.pick(unknownRequirementMembers), g.unknownValue()})
	}
	if g.mut(3) && len(ms) > 0 { // a member twice, another value the second time
		m := ms[g.r.Intn(len(ms))]
		other := g.expression(utf8)
		val := map[string]string{"key": g.str(other.Key), "operator": g.str(other.Operator),
			"values": g.valuesText(other.Values, utf8)}[m.name]
		if val == "" {
			val = m.value
		}
		ms = append(ms, member{m.name, val})
	}
	return g.object(ms)
}

func (g *Gen) listText(rs []Requirement, utf8 bool) string {
	if g.mut(2) {
		return g.wrongType("array")
	}
	if g.mut(2) {
		return "null"
	}
	items := make([]string, len(rs))
	for i, r := range rs {
		items[i] = g.requirementText(r, utf8)
	}
	return array(items)
}

func (g *Gen) termText(utf8 bool) string {
	g.clean = g.pct(45)
	defer func() { g.clean = false }()
	t := g.TermValue(utf8)
	var ms []member
	if len(t.MatchExpressions) > 0 || g.pct(10) {
		ms = append(ms, member{"matchExpressions", g.listText(t.MatchExpressions, utf8)})
	}
	if len(t.MatchFields) > 0 || g.pct(5) {
		ms = append(ms, member{"matchFields", g.listText(t.MatchFields, utf8)})
	}
	if g.mut(4) {
		ms = append(ms, member{g.pick(unknownMembers), g.unknownValue()})
	}
	if g.mut(3) && len(ms) > 0 {
		m := ms[g.r.Intn(len(ms))]
		other := g.TermValue(utf8)
		list := other.MatchExpressions
		if m.name == "matchFields" {
			list = other.MatchFields
		}
		ms = append(ms, member{m.name, g.listText(list, utf8)})
	}
	return g.object(ms)
}

// Text draws the bytes of one annotation value. utf8: only valid UTF-8 (what an
// annotation sent through the API server can hold).
func (g *Gen) Text(utf8 bool) []byte {
	switch n := g.r.Intn(100); {
	case n < 2: // around the 64-requirement cap, every requirement valid
		var items []string
		for i, k := 0, 60+g.r.Intn(10); i < k; i++ {
			items = append(items, fmt.Sprintf(`{"key":%s,"operator":"In","values":[%s]}`,
				g.str(g.pick(validKeys)), g.str(g.pick(validValues))))
		}
		return []byte(`{"matchExpressions":` + array(items) + `}`)
	case n < 88:
		return []byte(g.termText(utf8))
	case n < 89:
		return []byte(g.pick([]string{"", " ", "null", "[]", `"x"`, "1", "true", "[{}]", `"{}"`}))
	case n < 90:
		if utf8 {
			return []byte(g.termText(utf8))
		}
		return []byte("\xef\xbb\xbf" + g.termText(utf8)) // a UTF-8 byte order mark
	case n < 91:
		return []byte(g.termText(utf8) + g.pick([]string{" x", "{}", ",", "]", " // c", "\x00"}))
	case n < 92:
		s := g.termText(utf8)
		return []byte(s[:g.r.Intn(len(s))]) // truncated
	case n < 93:
		s := g.termText(utf8)
		return []byte(strings.Replace(s, "}", ",}", 1)) // a trailing comma
	case n < 94:
		s := g.termText(utf8)
		return []byte(strings.ReplaceAll(s, `"`, `'`))
	case n < 95:
		s := g.termText(utf8)
		return []byte("/* c */" + s)
	case n < 96: // around the 16 KiB cap: whitespace is free in JSON
		s := g.termText(utf8)
		pad := 16*1024 - len(s) + g.r.Intn(5) - 2
		if pad < 0 {
			pad = 0
		}
		return []byte(s[:1] + strings.Repeat(" ", pad) + s[1:])
	case n < 97: // deep nesting: in an unknown member, in values, unclosed
		d := []int{64, 1000, 5000, 8100, 10001}[g.r.Intn(5)]
		switch g.r.Intn(3) {
		case 0:
			return []byte(`{"x":` + deep(d, true) + `}`)
		case 1:
			return []byte(`{"matchExpressions":[{"key":"a","operator":"In","values":` + deep(d, true) + `}]}`)
		default:
			return []byte(`{"matchExpressions":` + deep(d, false))
		}
	case n < 98: // numbers and literals of every kind in place of strings
		return []byte(`{"matchExpressions":[{"key":` + g.pick([]string{"1e999", "-0", "0.1", "1E+2", "NaN", "Infinity", "01", ".5", "-", "tru", "nul"}) + `,"operator":"Exists"}]}`)
	default: // escapes: lone surrogates, NUL, pairs
		esc := g.pick([]string{`\ud800`, `\udc00`, `\ud83d\ude00`, `\u0000`, `\uD800\u0041`, `\x41`, `\u12`, `\U0041`, `\'`})
		return []byte(`{"matchExpressions":[{"key":"zone","operator":"In","values":["a` + esc + `"]}]}`)
	}
}
