package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// RunResultSchema names and versions the document WriteJSON writes
// (docs/json.md; docs/run-result.schema.json). Within v1 fields are only
// added; a field removed, renamed or changed in meaning makes v2.
const RunResultSchema = "firedrill.run-result/v1"

// runResultJSON is the document WriteJSON writes; docs/json.md describes
// every field and docs/run-result.schema.json is its JSON Schema.
type runResultJSON struct {
	Schema     string               `json:"schema"`
	Firedrill  string               `json:"firedrill"`
	Scenario   string               `json:"scenario"`
	RunDir     string               `json:"run_dir"`
	Status     string               `json:"status"`
	Error      string               `json:"error,omitempty"`
	Passed     bool                 `json:"passed"`
	Started    string               `json:"started"`
	Ended      string               `json:"ended,omitempty"`
	DurationS  float64              `json:"duration_s"`
	Target     runResultTarget      `json:"target"`
	Targets    []runResultNamed     `json:"targets,omitempty"`
	Workloads  []runResultWorkload  `json:"workloads"`
	Findings   []runResultFinding   `json:"findings"`
	Thresholds []runResultThreshold `json:"thresholds"`
}

type runResultTarget struct {
	Kind          string `json:"kind"`
	Product       string `json:"product"` // the server's name for people: PostgreSQL, MariaDB, MySQL, Redis
	Embedded      bool   `json:"embedded"`
	ServerVersion string `json:"server_version"`
}

// runResultNamed is one target of a run of several.
type runResultNamed struct {
	Name string `json:"name"`
	runResultTarget
}

func resultTarget(t timeline.Target) runResultTarget {
	return runResultTarget{Kind: t.Kind, Product: t.ProductName(), Embedded: t.Embedded, ServerVersion: t.ServerVersion}
}

type runResultWorkload struct {
	Name         string                `json:"name"`
	Target       string                `json:"target,omitempty"`
	DurationS    float64               `json:"duration_s"`
	Transactions int64                 `json:"transactions"`
	TPS          float64               `json:"tps"`
	Failed       int64                 `json:"failed"`
	ErrorRate    float64               `json:"error_rate"`
	Skipped      int64                 `json:"skipped"`
	Late         int64                 `json:"late"`
	Retried      int64                 `json:"retried"`
	Retries      int64                 `json:"retries"`
	LatencyMS    runResultPercentiles  `json:"latency_ms"`
	PoolWaitMS   *runResultPercentiles `json:"pool_wait_ms"`
	Errors       []runResultError      `json:"errors"`
	Partial      bool                  `json:"partial"`
}

type runResultPercentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

type runResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

type runResultFinding struct {
	Rule     string  `json:"rule"`
	Severity string  `json:"severity"`
	StartS   float64 `json:"start_s"`
	EndS     float64 `json:"end_s"`
	Workload string  `json:"workload,omitempty"`
	Target   string  `json:"target,omitempty"`
	Headline string  `json:"headline"`
	Remedy   string  `json:"remedy"`
}

type runResultThreshold struct {
	Metric    string   `json:"metric"`
	Condition string   `json:"condition"`
	Measured  *float64 `json:"measured"`
	Unit      string   `json:"unit"`
	Passed    bool     `json:"passed"`
	Why       string   `json:"why,omitempty"`
}

func percentilesMS(p timeline.Percentiles) runResultPercentiles {
	return runResultPercentiles{
		P50: runResultMS(p.P50), P90: runResultMS(p.P90), P95: runResultMS(p.P95),
		P99: runResultMS(p.P99), P999: runResultMS(p.P999), Max: runResultMS(p.Max),
	}
}

func runResultMS(us int64) float64 { return float64(us) / 1000 }

// WriteJSON writes a run's result for machines (CI): schema
// RunResultSchema, with each workload's totals, the findings and the
// thresholds' outcome. passed is true when the run completed and every
// threshold held.
func WriteJSON(w io.Writer, run *timeline.Run, findings []diagnose.Finding, thresholds []ThresholdResult) error {
	return writeIndentedJSON(w, "run result", buildRunResult(run, findings, thresholds))
}

// writeIndentedJSON writes v as indented JSON without HTML escaping: the
// documents hold conditions ("< 50ms") and SQL that people read.
func writeIndentedJSON(w io.Writer, what string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

func buildRunResult(run *timeline.Run, findings []diagnose.Finding, thresholds []ThresholdResult) *runResultJSON {
	m := &run.Manifest
	dir := run.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	doc := &runResultJSON{
		Schema: RunResultSchema, Firedrill: m.Version, Scenario: m.Name, RunDir: dir,
		Status: m.Status, Error: m.Error,
		Target:     resultTarget(m.Target),
		Workloads:  []runResultWorkload{},
		Findings:   []runResultFinding{},
		Thresholds: []runResultThreshold{},
	}
	for _, nt := range m.Targets {
		doc.Targets = append(doc.Targets, runResultNamed{Name: nt.Name, runResultTarget: resultTarget(nt.Target)})
	}
	if !m.Started.IsZero() {
		doc.Started = m.Started.UTC().Format(time.RFC3339Nano)
	}
	if !m.Ended.IsZero() {
		doc.Ended = m.Ended.UTC().Format(time.RFC3339Nano)
	}
	if run.Summary != nil {
		doc.DurationS = run.Summary.Duration
	} else if n := len(run.Intervals); n > 0 {
		doc.DurationS = run.Intervals[n-1].End
	}
	for _, wi := range m.Workloads {
		wt := totalsOf(run, wi.Name)
		if wt == nil {
			continue
		}
		jw := runResultWorkload{
			Name: wt.name, Target: wi.Target, DurationS: wt.duration, Transactions: wt.count, TPS: wt.tps,
			Failed: wt.failed, Skipped: wt.skipped, Late: wt.late, Retried: wt.retried, Retries: wt.retries,
			LatencyMS: percentilesMS(wt.latency), Errors: []runResultError{}, Partial: wt.fromIntervals,
		}
		if total := wt.count + wt.failed; total > 0 {
			jw.ErrorRate = float64(wt.failed) / float64(total)
		}
		if wt.hasPool {
			p := percentilesMS(wt.pool)
			jw.PoolWaitMS = &p
		}
		for _, e := range wt.errors {
			jw.Errors = append(jw.Errors, runResultError{Code: e.Code, Message: firstLine(e.Message), Count: e.Count})
		}
		doc.Workloads = append(doc.Workloads, jw)
	}
	sorted := append([]diagnose.Finding(nil), findings...)
	SortFindings(sorted)
	for _, f := range sorted {
		doc.Findings = append(doc.Findings, runResultFinding{
			Rule: f.Rule, Severity: f.Severity, StartS: f.Start, EndS: f.End,
			Workload: f.Workload, Target: f.Target, Headline: f.Headline, Remedy: f.Remedy,
		})
	}
	doc.Passed = m.Status == timeline.StatusCompleted
	for _, t := range thresholds {
		jt := runResultThreshold{Metric: t.Metric, Condition: t.Condition, Unit: t.Unit, Passed: t.Pass, Why: t.Why}
		if t.Measurable {
			v := t.Measured
			jt.Measured = &v
		}
		if !t.Pass {
			doc.Passed = false
		}
		doc.Thresholds = append(doc.Thresholds, jt)
	}
	return doc
}
