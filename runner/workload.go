package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/timeline"
)

// AppName is the application_name of a workload's sessions, by which
// samplers attribute activity and terminate events find them.
func AppName(workload string) string { return "firedrill:" + workload }

// loadScripts parses a workload's scripts and copies their text into the
// run directory's scripts/ folder, so the run stays self-sufficient; the
// copies and the commands' texts are masked by redact (an HTTP script's
// Authorization header, a token in a URL).
func loadScripts(sc *scenario.Scenario, w *scenario.Workload, syms *script.Symbols, runDir string, redact func(string) string) ([]*script.Script, []timeline.ScriptInfo, error) {
	var out []*script.Script
	var infos []timeline.ScriptInfo
	for i, src := range w.Scripts {
		var s *script.Script
		var text []byte
		var err error
		name := src.Name
		switch {
		case src.Builtin != "":
			var b script.BuiltinInfo
			if b, err = script.FindBuiltin(src.Builtin); err == nil {
				text = []byte(b.Source)
				s, err = script.Builtin(src.Builtin, syms)
				if name == "" {
					name = b.Name
				}
			}
		case src.File != "":
			path := sc.Resolve(src.File)
			text, err = os.ReadFile(path)
			if err == nil {
				s, err = script.ParseDialect(path, text, syms, sc.Dialect)
			}
			if name == "" {
				name = filepath.Base(src.File)
			}
		default:
			text = []byte(src.Inline)
			if name == "" {
				name = fmt.Sprintf("inline-%d", i+1)
			}
			s, err = script.ParseDialect(fmt.Sprintf("%s:%d:%d", sc.File, src.Pos.Line, src.Pos.Col), text, syms, sc.Dialect)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("workload %s: %w", w.Name, err)
		}
		s.Name = name
		s.Weight = max(src.Weight, 1)
		out = append(out, s)
		file := fmt.Sprintf("%s-%d-%s", w.Name, i+1, safeName(name))
		if !strings.HasSuffix(file, ".sql") {
			file += ".sql"
		}
		if err := os.WriteFile(filepath.Join(runDir, timeline.ScriptsDir, file), []byte(redact(string(text))), timeline.FileMode); err != nil {
			return nil, nil, fmt.Errorf("copy script: %w", err)
		}
		info := timeline.ScriptInfo{Name: name, Weight: s.Weight, File: file}
		for _, c := range s.Commands {
			info.Commands = append(info.Commands, redact(c.Text))
		}
		infos = append(infos, info)
	}
	return out, infos, nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// shape turns a workload's stages into the engine's Shape: linear ramps
// from the previous target (the workload's clients/rate, or 0) to each
// stage's target over its duration, then holding the last target.
func shape(w *scenario.Workload) (fn func(time.Duration) (int, float64), maxClients int, rateModel bool, maxRate float64) {
	type point struct {
		at      time.Duration
		clients float64
		rate    float64
	}
	rateModel = w.Rate > 0
	for _, st := range w.Stages {
		if st.Rate != nil {
			rateModel = true
		}
	}
	pts := []point{{0, float64(w.Clients), w.Rate}}
	maxClients, maxRate = w.Clients, w.Rate
	at := time.Duration(0)
	for _, st := range w.Stages {
		at += st.Duration
		p := point{at: at, clients: pts[len(pts)-1].clients, rate: pts[len(pts)-1].rate}
		if st.Clients != nil {
			p.clients = float64(*st.Clients)
			maxClients = max(maxClients, *st.Clients)
		}
		if st.Rate != nil {
			p.rate = *st.Rate
			maxRate = max(maxRate, *st.Rate)
		}
		pts = append(pts, p)
	}
	if rateModel && maxClients == 0 {
		// Enough clients to carry the rate when each transaction takes
		// tens of milliseconds; they only work when the schedule says.
		maxClients = max(8, int(maxRate/100))
	}
	if len(w.Stages) == 0 {
		return nil, maxClients, rateModel, maxRate
	}
	fn = func(el time.Duration) (int, float64) {
		last := pts[len(pts)-1]
		if el >= last.at {
			return clientsOf(last.clients, rateModel, maxClients), last.rate
		}
		for i := 1; i < len(pts); i++ {
			if el < pts[i].at {
				a, b := pts[i-1], pts[i]
				f := float64(el-a.at) / float64(b.at-a.at)
				c := a.clients + f*(b.clients-a.clients)
				return clientsOf(c, rateModel, maxClients), a.rate + f*(b.rate-a.rate)
			}
		}
		return clientsOf(last.clients, rateModel, maxClients), last.rate
	}
	return fn, maxClients, rateModel, maxRate
}

func clientsOf(c float64, rateModel bool, maxClients int) int {
	if rateModel {
		return maxClients // under a rate, the schedule decides; every client may take a slot
	}
	return int(c + 0.5)
}

// summarize turns a workload's engine result into its summary.
func summarize(name string, res *engine.Result, scripts []*script.Script, start time.Duration) timeline.WorkloadSummary {
	t := &res.Totals.Total
	ws := timeline.WorkloadSummary{
		Name:       name,
		Duration:   res.Elapsed.Seconds(),
		Count:      t.Count,
		Failed:     t.Failures(),
		Skipped:    t.Skipped,
		Late:       t.Late,
		Retried:    t.Retried,
		Retries:    t.Retries,
		Latency:    res.Totals.Hist,
		LatencyPct: res.Totals.Hist.Percentiles(),
		Aborted:    res.AbortedClient,
	}
	if res.Elapsed > 0 {
		ws.TPS = float64(t.Count) / res.Elapsed.Seconds()
	}
	if res.Totals.PoolWait != nil {
		ws.PoolWait = res.Totals.PoolWait
		ws.PoolPct = res.Totals.PoolWait.Percentiles()
	}
	for i, s := range scripts {
		ss := &res.Totals.Scripts[i]
		sum := timeline.ScriptSummary{
			Name: s.Name, Count: ss.Count, Failed: ss.Failures(),
			Latency: ss.Hist, LatencyPct: ss.Hist.Percentiles(),
			Commands: make([]timeline.CommandSummary, 0, len(s.Commands)), // sized once: a long script's are MBs
		}
		for j, c := range s.Commands {
			cs := &ss.Commands[j]
			cmd := timeline.CommandSummary{
				Line: c.Pos.Line, Text: c.Text, Count: cs.Count, MeanUS: cs.MeanUS(),
				Failures: cs.Failures, Retries: cs.Retries,
			}
			cmd.LatencyPct = cs.Latency
			sum.Commands = append(sum.Commands, cmd)
		}
		ws.Scripts = append(ws.Scripts, sum)
	}
	for _, e := range res.Errors {
		es := timeline.ErrorSummary{
			Code: e.Code, Message: e.Message, Detail: e.Detail, Count: e.Count,
			First: (start + e.First).Seconds(), Last: (start + e.Last).Seconds(),
		}
		if e.Script >= 0 && e.Script < len(scripts) {
			es.Script = scripts[e.Script].Name
			if cmds := scripts[e.Script].Commands; e.Command >= 0 && e.Command < len(cmds) {
				es.Line = cmds[e.Command].Pos.Line
			}
		}
		ws.Errors = append(ws.Errors, es)
	}
	ws.Backoff = res.Backoff.Seconds()
	ws.RefusedClients = res.RefusedClients
	ws.ReconnectWait = res.ReconnectWait.Seconds()
	return ws
}

// planFallback parses a workload's fallback scripts in its fallback
// target's dialect, with the workload's variables (syms), and makes the
// engine's session maker on that target; nil for a workload without one.
func (r *run) planFallback(spec *scenario.Workload, syms *script.Symbols) (*engine.Fallback, *timeline.FallbackInfo, error) {
	fb := spec.Fallback
	if fb == nil {
		return nil, nil, nil
	}
	tr := r.target(fb.Target)
	load := spec.FallbackWorkload()
	// The copies in the run directory are named apart from the
	// workload's own (a workload's name holds no dot).
	load.Name = spec.Name + ".fallback"
	scripts, infos, err := loadScripts(tr.sc, &load, syms, r.dir, r.red.Redact)
	if err != nil {
		return nil, nil, err
	}
	load.Name = spec.Name
	wl, err := tr.tgt.Workload(&load, scripts, AppName(spec.Name))
	if err != nil {
		return nil, nil, targetErr(tr, fmt.Errorf("fallback: %w", err))
	}
	return &engine.Fallback{Target: wl.Target, Scripts: scripts, After: fb.After},
		&timeline.FallbackInfo{Target: fb.Target, After: fb.After.Seconds(), Scripts: infos}, nil
}
