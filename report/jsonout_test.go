package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// runResultSchemaFile is the documented schema WriteJSON's output must
// satisfy.
const runResultSchemaFile = "../docs/run-result.schema.json"

// TestJSONRecordedRunValidates writes the result of a real recorded run
// (the baseline of the compare fixtures) with thresholds, and validates it
// against the documented schema.
func TestJSONRecordedRunValidates(t *testing.T) {
	t.Parallel()
	run, findings := openCompareFixture(t, compareFixtureBase)
	sc := thresholdScenario(t, `
  oltp.p99: "< 1s"
  oltp.tps: ">= 1"
  oltp.error_rate: "< 0.1%"
  db.deadlocks: "== 0"
  db.rollbacks: "== 0"
  db.temp_files: "== 0"
  db.slru_hit_rate_min.Xact: ">= 50%"
  reports.p99: "< 1s"
`)
	// The fixture's workload is oltp; reports did not run and must fail.
	results := EvaluateThresholds(sc.Thresholds, run, findings, everyRule())
	var buf bytes.Buffer
	if err := WriteJSON(&buf, run, findings, results); err != nil {
		t.Fatal(err)
	}
	validateRunResult(t, buf.Bytes())

	var doc struct {
		Schema    string `json:"schema"`
		Status    string `json:"status"`
		Passed    bool   `json:"passed"`
		Workloads []struct {
			Name         string  `json:"name"`
			Transactions int64   `json:"transactions"`
			TPS          float64 `json:"tps"`
			LatencyMS    struct {
				P50, P99 float64
			} `json:"latency_ms"`
			PoolWaitMS *struct{} `json:"pool_wait_ms"`
		} `json:"workloads"`
		Thresholds []struct {
			Metric   string   `json:"metric"`
			Measured *float64 `json:"measured"`
			Passed   bool     `json:"passed"`
		} `json:"thresholds"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	ws := run.Summary.Workloads[0]
	if doc.Schema != RunResultSchema || doc.Status != timeline.StatusCompleted || len(doc.Workloads) != 1 {
		t.Fatalf("document: %s", buf.String())
	}
	w := doc.Workloads[0]
	if w.Name != ws.Name || w.Transactions != ws.Count || w.TPS != ws.TPS || w.PoolWaitMS != nil ||
		w.LatencyMS.P99 != float64(ws.LatencyPct.P99)/1000 || w.LatencyMS.P50 <= 0 {
		t.Errorf("workload %+v does not match the summary %s: %d tx, %.1f tps, p99 %d µs", w, ws.Name, ws.Count, ws.TPS, ws.LatencyPct.P99)
	}
	for i, th := range doc.Thresholds {
		measurable := th.Metric != "reports.p99"
		if (th.Measured != nil) != measurable || th.Passed != (results[i].Pass) {
			t.Errorf("threshold %s: measured %v passed %v; result %v", th.Metric, th.Measured, th.Passed, results[i])
		}
	}
	if doc.Passed {
		t.Error("passed is true although reports.p99 failed")
	}
}

// TestJSONEveryFieldValidates covers what the recorded run lacks: a pool,
// errors, findings, unmeasurable thresholds, a run that did not finish.
func TestJSONEveryFieldValidates(t *testing.T) {
	t.Parallel()
	run := thresholdRun()
	findings := []diagnose.Finding{
		{Rule: "deadlock", Severity: diagnose.Critical, Start: 10, End: 20, Workload: "oltp", Headline: "2 deadlocks", Remedy: "lock in one order"},
		{Rule: "other", Severity: diagnose.Info, Start: 1, End: 2, Headline: "h", Remedy: "r"},
	}
	sc := thresholdScenario(t, "  oltp.p99: \"< 50ms\"\n  pooled.pool_wait_p99: \"< 1s\"\n  reports.p99: \"< 1s\"\n  db.slru_hit_rate_min.Xact: \">= 90%\"\n")
	results := EvaluateThresholds(sc.Thresholds, run, findings, everyRule())
	cases := []struct {
		name string
		run  *timeline.Run
	}{
		{"finished", run},
		{"killed", func() *timeline.Run {
			r := *run
			r.Summary = nil
			r.Manifest.Status = timeline.StatusInterrupted
			r.Manifest.Error = "interrupted"
			h := timeline.NewHistogram()
			h.Record(1234)
			r.Intervals = []timeline.Interval{{Workload: "oltp", Start: 0, End: 1, Count: 5, Failed: 1, Latency: h,
				Errors: map[string]int64{"40001": 1}, PoolWait: h}}
			return &r
		}()},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, c.run, findings, results); err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) { validateRunResult(t, buf.Bytes()) })
		if c.name == "killed" && buildRunResult(c.run, findings, results).Passed {
			t.Errorf("%s: a run that did not complete passed", c.name)
		}
	}
}

// TestJSONPassed checks the one field CI reads: passed only when the run
// completed and every threshold held.
func TestJSONPassed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status string
		pass   []bool
		want   bool
	}{
		{timeline.StatusCompleted, nil, true},
		{timeline.StatusCompleted, []bool{true, true}, true},
		{timeline.StatusCompleted, []bool{true, false}, false},
		{timeline.StatusInterrupted, []bool{true}, false},
		{timeline.StatusFailed, nil, false},
	} {
		run := thresholdRun()
		run.Manifest.Status = c.status
		var results []ThresholdResult
		for _, p := range c.pass {
			results = append(results, ThresholdResult{Metric: "oltp.tps", Condition: ">= 1", Pass: p, Measurable: true})
		}
		if got := buildRunResult(run, nil, results).Passed; got != c.want {
			t.Errorf("status %s, thresholds %v: passed %v, want %v", c.status, c.pass, got, c.want)
		}
	}
}

// TestJSONValidatorRejects makes sure the validator below is not
// vacuous: each document breaks the schema in one way.
func TestJSONValidatorRejects(t *testing.T) {
	t.Parallel()
	var good bytes.Buffer
	if err := WriteJSON(&good, thresholdRun(), nil, nil); err != nil {
		t.Fatal(err)
	}
	schema := loadJSONSchema(t)
	for _, c := range []struct {
		name   string
		change func(doc map[string]any)
		want   string
	}{
		{"extra field", func(d map[string]any) { d["surprise"] = 1 }, `$.surprise: not allowed`},
		{"missing field", func(d map[string]any) { delete(d, "passed") }, `$: missing "passed"`},
		{"wrong type", func(d map[string]any) { d["duration_s"] = "60" }, `$.duration_s: want number`},
		{"bad enum", func(d map[string]any) { d["status"] = "done" }, `$.status: "done" is not one of`},
		{"integer", func(d map[string]any) { d["workloads"].([]any)[0].(map[string]any)["transactions"] = 1.5 }, `$.workloads[0].transactions: want integer`},
		{"nested extra", func(d map[string]any) { d["target"].(map[string]any)["port"] = 5432 }, `$.target.port: not allowed`},
		{"null not allowed", func(d map[string]any) { d["workloads"].([]any)[0].(map[string]any)["latency_ms"] = nil }, `$.workloads[0].latency_ms: want object`},
	} {
		var doc map[string]any
		if err := json.Unmarshal(good.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		c.change(doc)
		errs := schema.validate(doc)
		if !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("%s: errors %q, want one containing %q", c.name, errs, c.want)
		}
	}
	var doc any
	if err := json.Unmarshal(good.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if errs := schema.validate(doc); len(errs) > 0 {
		t.Errorf("unchanged document: %q", errs)
	}
}

func validateRunResult(t *testing.T, doc []byte) {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	for _, e := range loadJSONSchema(t).validate(v) {
		t.Error(e)
	}
	if t.Failed() {
		t.Logf("document:\n%s", doc)
	}
}

// jsonSchema validates the subset of JSON Schema (draft 2020-12) the
// documented schema uses: type (a name or a list), enum, required,
// properties, additionalProperties: false, items, anyOf and local $ref
// into $defs. Any other keyword makes loading fail, so the schema cannot
// quietly grow beyond what the test checks.
type jsonSchema struct {
	root map[string]any
}

var jsonSchemaKeywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$ref": true, "title": true, "description": true,
	"type": true, "enum": true, "required": true, "properties": true, "additionalProperties": true,
	"items": true, "anyOf": true,
}

func loadJSONSchema(t *testing.T) *jsonSchema {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(runResultSchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatalf("%s: %v", runResultSchemaFile, err)
	}
	if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("%s: $schema is %v, want draft 2020-12", runResultSchemaFile, root["$schema"])
	}
	var check func(path string, s map[string]any)
	check = func(path string, s map[string]any) {
		for k, v := range s {
			if !jsonSchemaKeywords[k] {
				t.Fatalf("%s: %s: keyword %q is not supported by the test's validator", runResultSchemaFile, path, k)
			}
			if k == "additionalProperties" && v != false {
				t.Fatalf("%s: %s: only additionalProperties: false is supported", runResultSchemaFile, path)
			}
			switch sub := v.(type) {
			case map[string]any:
				if k == "properties" || k == "$defs" {
					for name, p := range sub {
						check(path+"."+name, p.(map[string]any))
					}
				} else {
					check(path+"."+k, sub)
				}
			case []any:
				if k == "anyOf" {
					for i, p := range sub {
						check(fmt.Sprintf("%s.anyOf[%d]", path, i), p.(map[string]any))
					}
				}
			}
		}
	}
	check("#", root)
	return &jsonSchema{root: root}
}

// validate returns every violation of doc, each as "$.path: problem".
func (s *jsonSchema) validate(doc any) []string {
	var errs []string
	s.check(&errs, "$", s.root, doc)
	sort.Strings(errs)
	return errs
}

func (s *jsonSchema) check(errs *[]string, path string, schema map[string]any, v any) {
	if ref, ok := schema["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, _ := s.root["$defs"].(map[string]any)[name].(map[string]any)
		if !found || def == nil {
			*errs = append(*errs, fmt.Sprintf("%s: unresolvable $ref %q", path, ref))
			return
		}
		s.check(errs, path, def, v)
	}
	if anyOf, ok := schema["anyOf"].([]any); ok {
		var all []string
		matched := false
		for _, alt := range anyOf {
			var sub []string
			s.check(&sub, path, alt.(map[string]any), v)
			if len(sub) == 0 {
				matched = true
				break
			}
			all = append(all, sub...)
		}
		if !matched {
			*errs = append(*errs, fmt.Sprintf("%s: matches no alternative of anyOf (%s)", path, strings.Join(all, "; ")))
		}
	}
	if t, ok := schema["type"]; ok && !jsonTypeMatches(t, v) {
		*errs = append(*errs, fmt.Sprintf("%s: want %v, got %s", path, t, jsonTypeOf(v)))
		return
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			*errs = append(*errs, fmt.Sprintf("%s: %q is not one of %v", path, fmt.Sprint(v), enum))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asStrings(schema["required"]) {
			if _, ok := v[r]; !ok {
				*errs = append(*errs, fmt.Sprintf("%s: missing %q", path, r))
			}
		}
		for k, pv := range v {
			p, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					*errs = append(*errs, fmt.Sprintf("%s.%s: not allowed (not in the schema)", path, k))
				}
				continue
			}
			s.check(errs, path+"."+k, p, pv)
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, iv := range v {
				s.check(errs, fmt.Sprintf("%s[%d]", path, i), items, iv)
			}
		}
	}
}

func asStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, x.(string))
	}
	return out
}

// jsonTypeOf names a decoded value's JSON type ("integer" for a whole
// number).
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number: // 2020-12: a number with no fraction is an integer
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func jsonTypeMatches(want, v any) bool {
	got := jsonTypeOf(v)
	for _, t := range asStringsOrOne(want) {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

func asStringsOrOne(v any) []string {
	if s, ok := v.(string); ok {
		return []string{s}
	}
	return asStrings(v)
}

// TestJSONDocumented keeps docs/json.md with the schema: every property
// the schema names is described there, and its example validates.
func TestJSONDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	schema := loadJSONSchema(t)
	var names func(s map[string]any)
	seen := map[string]bool{}
	names = func(s map[string]any) {
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				seen[name] = true
				names(p.(map[string]any))
			}
		}
		for _, k := range []string{"items", "$defs"} {
			if sub, ok := s[k].(map[string]any); ok {
				if k == "$defs" {
					for _, d := range sub {
						names(d.(map[string]any))
					}
				} else {
					names(sub)
				}
			}
		}
	}
	names(schema.root)
	for name := range seen {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/json.md does not describe %q", name)
		}
	}
	_, rest, ok := strings.Cut(string(doc), "### Example")
	_, rest, ok2 := strings.Cut(rest, "```json\n")
	example, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/json.md has no ```json block after ### Example")
	}
	validateRunResult(t, []byte(example))
}
