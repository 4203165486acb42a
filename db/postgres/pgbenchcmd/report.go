package pgbenchcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/timeline"
)

// pgbenchReport prints a run the way pgbench does, then what pgbench
// cannot: percentiles from HDR histograms.
type pgbenchReport struct {
	opts       *pgbenchOpts
	cfg        *engine.Config
	mode       pgtarget.QueryMode
	scale      int
	partMethod string
	partitions int
}

func ms(us float64) float64 { return us / 1000 }

// printProgress prints pgbench's progress line with p50/p99 appended.
func (r *pgbenchReport) printProgress(w io.Writer, p *engine.Progress) {
	iv := p.Interval
	st := &iv.Total
	cnt := st.Count
	span := p.Span.Seconds()
	tps := 0.0
	if span > 0 {
		tps = float64(cnt) / span
	}
	var when string
	if r.opts.progressTimestamp {
		when = fmt.Sprintf("%.3f s", float64(time.Now().UnixMicro())/1e6)
	} else {
		when = fmt.Sprintf("%.1f s", p.Elapsed.Seconds())
	}
	line := fmt.Sprintf("progress: %s, %.1f tps, lat %.3f ms stddev %.3f, %d failed",
		when, tps, ms(st.Latency.Mean()), ms(st.Latency.StdDev()), st.Failures())
	if r.cfg.Rate > 0 {
		line += fmt.Sprintf(", lag %.3f ms", ms(st.Lag.Mean()))
		if r.cfg.LatencyLimit > 0 {
			line += fmt.Sprintf(", %d skipped", st.Skipped)
		}
	}
	if r.cfg.MaxTries != 1 {
		line += fmt.Sprintf(", %d retried, %d retries", st.Retried, st.Retries)
	}
	line += fmt.Sprintf(", p50 %.3f ms, p99 %.3f ms", ms(float64(iv.Hist.Quantile(50))), ms(float64(iv.Hist.Quantile(99))))
	fmt.Fprintln(w, line)
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func (r *pgbenchReport) scriptName() string {
	if len(r.cfg.Scripts) == 1 {
		return r.cfg.Scripts[0].Name
	}
	return "multiple scripts"
}

// printSummary prints pgbench 15's summary, then firedrill's percentiles.
func (r *pgbenchReport) printSummary(w io.Writer, res *engine.Result) {
	cfg := r.cfg
	tot := &res.Totals.Total
	failures := tot.Failures()
	totalCnt := tot.Total()
	benchSecs := res.Elapsed.Seconds()
	tps := float64(tot.Count) / benchSecs

	fmt.Fprintf(w, "transaction type: %s\n", r.scriptName())
	fmt.Fprintf(w, "scaling factor: %d\n", r.scale)
	if r.partMethod != "" && r.partMethod != "none" {
		fmt.Fprintf(w, "partition method: %s\npartitions: %d\n", r.partMethod, r.partitions)
	}
	fmt.Fprintf(w, "query mode: %s\n", r.mode)
	fmt.Fprintf(w, "number of clients: %d\n", cfg.Clients)
	fmt.Fprintf(w, "number of threads: %d\n", r.opts.jobs)
	if cfg.MaxTries > 0 {
		fmt.Fprintf(w, "maximum number of tries: %d\n", cfg.MaxTries)
	}
	if cfg.Duration <= 0 {
		fmt.Fprintf(w, "number of transactions per client: %d\n", cfg.Transactions)
		fmt.Fprintf(w, "number of transactions actually processed: %d/%d\n", tot.Count, cfg.Transactions*cfg.Clients)
	} else {
		fmt.Fprintf(w, "duration: %d s\n", int(cfg.Duration/time.Second))
		fmt.Fprintf(w, "number of transactions actually processed: %d\n", tot.Count)
	}
	if totalCnt <= 0 {
		return
	}
	fmt.Fprintf(w, "number of failed transactions: %d (%.3f%%)\n", failures, pct(failures, totalCnt))
	if r.opts.failuresDetailed {
		fmt.Fprintf(w, "number of serialization failures: %d (%.3f%%)\n", tot.SerializationFailures, pct(tot.SerializationFailures, totalCnt))
		fmt.Fprintf(w, "number of deadlock failures: %d (%.3f%%)\n", tot.DeadlockFailures, pct(tot.DeadlockFailures, totalCnt))
	}
	if cfg.MaxTries != 1 {
		fmt.Fprintf(w, "number of transactions retried: %d (%.3f%%)\n", tot.Retried, pct(tot.Retried, totalCnt))
		fmt.Fprintf(w, "total number of retries: %d\n", tot.Retries)
	}
	if cfg.Rate > 0 && cfg.LatencyLimit > 0 {
		fmt.Fprintf(w, "number of transactions skipped: %d (%.3f%%)\n", tot.Skipped, pct(tot.Skipped, totalCnt))
	}
	if cfg.LatencyLimit > 0 {
		fmt.Fprintf(w, "number of transactions above the %.1f ms latency limit: %d/%d (%.3f%%)\n",
			float64(cfg.LatencyLimit)/float64(time.Millisecond), tot.Late, tot.Count, pct(tot.Late, tot.Count))
	}
	if cfg.Rate > 0 || cfg.Progress > 0 || cfg.LatencyLimit > 0 {
		printSimple(w, "latency", &tot.Latency)
	} else {
		suffix := ""
		if failures > 0 {
			suffix = " (including failures)"
		}
		fmt.Fprintf(w, "latency average = %.3f ms%s\n", float64(res.Elapsed.Microseconds())*float64(cfg.Clients)/float64(totalCnt)/1000, suffix)
	}
	if cfg.Rate > 0 && tot.Count > 0 {
		fmt.Fprintf(w, "rate limit schedule lag: avg %.3f (max %.3f) ms\n", ms(tot.Lag.Sum/float64(tot.Count)), ms(tot.Lag.Max))
	}
	if cfg.Connect {
		fmt.Fprintf(w, "average connection time = %.3f ms\n", float64(res.ConnTime.Microseconds())/1000/float64(max(tot.Count+failures, 1)))
		fmt.Fprintf(w, "tps = %f (including reconnection times)\n", tps)
	} else {
		fmt.Fprintf(w, "initial connection time = %.3f ms\n", float64(res.ConnTime.Microseconds())/1000)
		fmt.Fprintf(w, "tps = %f (without initial connection time)\n", tps)
	}
	perScript := len(cfg.Scripts) > 1
	totalWeight := 0
	for _, s := range cfg.Scripts {
		totalWeight += s.Weight
	}
	if perScript || cfg.PerCommand {
		for i, sc := range cfg.Scripts {
			ss := &res.Totals.Scripts[i]
			if perScript {
				sf := ss.Failures()
				stot := ss.Total()
				fmt.Fprintf(w, "SQL script %d: %s\n - weight: %d (targets %.1f%% of total)\n - %d transactions (%.1f%% of total, tps = %f)\n",
					i+1, sc.Name, sc.Weight, 100*float64(sc.Weight)/float64(totalWeight), stot, pct(stot, totalCnt), float64(ss.Count)/benchSecs)
				if stot > 0 {
					fmt.Fprintf(w, " - number of failed transactions: %d (%.3f%%)\n", sf, pct(sf, stot))
					if r.opts.failuresDetailed {
						fmt.Fprintf(w, " - number of serialization failures: %d (%.3f%%)\n", ss.SerializationFailures, pct(ss.SerializationFailures, stot))
						fmt.Fprintf(w, " - number of deadlock failures: %d (%.3f%%)\n", ss.DeadlockFailures, pct(ss.DeadlockFailures, stot))
					}
					if cfg.MaxTries != 1 {
						fmt.Fprintf(w, " - number of transactions retried: %d (%.3f%%)\n", ss.Retried, pct(ss.Retried, stot))
						fmt.Fprintf(w, " - total number of retries: %d\n", ss.Retries)
					}
					if cfg.Rate > 0 && cfg.LatencyLimit > 0 {
						fmt.Fprintf(w, " - number of transactions skipped: %d (%.3f%%)\n", ss.Skipped, pct(ss.Skipped, stot))
					}
				}
				printSimple(w, " - latency", &ss.Latency)
			}
			if cfg.PerCommand {
				prefix := ""
				if perScript {
					prefix = " - "
				}
				what := " and failures"
				if cfg.MaxTries != 1 {
					what = ", failures and retries"
				}
				fmt.Fprintf(w, "%sstatement latencies in milliseconds%s:\n", prefix, what)
				for j, c := range sc.Commands {
					cs := &ss.Commands[j]
					if cfg.MaxTries == 1 {
						fmt.Fprintf(w, "   %11.3f  %10d  %s\n", ms(cs.MeanUS()), cs.Failures, c.Text)
					} else {
						fmt.Fprintf(w, "   %11.3f  %10d  %10d  %s\n", ms(cs.MeanUS()), cs.Failures, cs.Retries, c.Text)
					}
				}
			}
		}
	}

	// What pgbench does not print: percentiles from the HDR histograms.
	fmt.Fprintf(w, "latency percentiles: %s\n", formatPercentiles(res.Totals.Hist.Percentiles()))
	if perScript {
		for i := range cfg.Scripts {
			fmt.Fprintf(w, "SQL script %d latency percentiles: %s\n", i+1, formatPercentiles(res.Totals.Scripts[i].Hist.Percentiles()))
		}
	}
	if cfg.PerCommand {
		fmt.Fprintln(w, "statement latency percentiles in milliseconds (p50, p90, p99, p99.9, max):")
		for i, sc := range cfg.Scripts {
			if perScript {
				fmt.Fprintf(w, " - SQL script %d:\n", i+1)
			}
			for j, c := range sc.Commands {
				p := res.Totals.Scripts[i].Commands[j].Latency
				fmt.Fprintf(w, "   %9.3f %9.3f %9.3f %9.3f %9.3f  %s\n",
					ms(float64(p.P50)), ms(float64(p.P90)), ms(float64(p.P99)), ms(float64(p.P999)), ms(float64(p.Max)), c.Text)
			}
		}
	}
}

func printSimple(w io.Writer, prefix string, s *engine.Simple) {
	if s.Count > 0 {
		fmt.Fprintf(w, "%s average = %.3f ms\n", prefix, ms(s.Mean()))
		fmt.Fprintf(w, "%s stddev = %.3f ms\n", prefix, ms(s.StdDev()))
	}
}

func formatPercentiles(p timeline.Percentiles) string {
	return fmt.Sprintf("p50 = %.3f ms, p90 = %.3f ms, p95 = %.3f ms, p99 = %.3f ms, p99.9 = %.3f ms, max = %.3f ms",
		ms(float64(p.P50)), ms(float64(p.P90)), ms(float64(p.P95)), ms(float64(p.P99)), ms(float64(p.P999)), ms(float64(p.Max)))
}

// pgbenchJSON is the --json document (schema "firedrill.pgbench/v1").
type pgbenchJSON struct {
	Schema          string              `json:"schema"`
	TransactionType string              `json:"transaction_type"`
	Scale           int                 `json:"scaling_factor"`
	QueryMode       string              `json:"query_mode"`
	Clients         int                 `json:"clients"`
	Threads         int                 `json:"threads"`
	MaxTries        int                 `json:"max_tries"`
	DurationS       float64             `json:"duration_s"`
	Rate            float64             `json:"rate,omitempty"`
	LatencyLimitMS  float64             `json:"latency_limit_ms,omitempty"`
	ConnTimeMS      float64             `json:"initial_connection_time_ms"`
	TPS             float64             `json:"tps"`
	Interrupted     bool                `json:"interrupted"`
	AbortedClients  int                 `json:"aborted_clients"`
	Totals          jsonStats           `json:"totals"`
	Scripts         []jsonScriptSummary `json:"scripts"`
}

type jsonStats struct {
	Transactions          int64           `json:"transactions"`
	Failed                int64           `json:"failed"`
	SerializationFailures int64           `json:"serialization_failures"`
	DeadlockFailures      int64           `json:"deadlock_failures"`
	Retried               int64           `json:"retried"`
	Retries               int64           `json:"retries"`
	Skipped               int64           `json:"skipped"`
	Late                  int64           `json:"late"`
	LatencyAvgMS          float64         `json:"latency_avg_ms"`
	LatencyStddevMS       float64         `json:"latency_stddev_ms"`
	LagAvgMS              float64         `json:"lag_avg_ms,omitempty"`
	LagMaxMS              float64         `json:"lag_max_ms,omitempty"`
	Percentiles           jsonPercentiles `json:"latency_percentiles_ms"`
}

type jsonPercentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

type jsonScriptSummary struct {
	Name     string        `json:"name"`
	Weight   int           `json:"weight"`
	TPS      float64       `json:"tps"`
	Stats    jsonStats     `json:"stats"`
	Commands []jsonCommand `json:"commands,omitempty"`
}

type jsonCommand struct {
	Text         string           `json:"text"`
	LatencyAvgMS float64          `json:"latency_avg_ms"`
	Failures     int64            `json:"failures"`
	Retries      int64            `json:"retries"`
	Percentiles  *jsonPercentiles `json:"latency_percentiles_ms,omitempty"`
}

func toJSONPercentiles(p timeline.Percentiles) jsonPercentiles {
	return jsonPercentiles{ms(float64(p.P50)), ms(float64(p.P90)), ms(float64(p.P95)), ms(float64(p.P99)), ms(float64(p.P999)), ms(float64(p.Max))}
}

func toJSONStats(s *engine.Stats, h *timeline.Histogram) jsonStats {
	return jsonStats{
		Transactions: s.Count, Failed: s.Failures(), SerializationFailures: s.SerializationFailures,
		DeadlockFailures: s.DeadlockFailures, Retried: s.Retried, Retries: s.Retries, Skipped: s.Skipped, Late: s.Late,
		LatencyAvgMS: ms(s.Latency.Mean()), LatencyStddevMS: ms(s.Latency.StdDev()),
		LagAvgMS: ms(s.Lag.Mean()), LagMaxMS: ms(s.Lag.Max), Percentiles: toJSONPercentiles(h.Percentiles()),
	}
}

func (r *pgbenchReport) buildJSON(res *engine.Result) *pgbenchJSON {
	cfg := r.cfg
	secs := res.Elapsed.Seconds()
	doc := &pgbenchJSON{
		Schema: "firedrill.pgbench/v1", TransactionType: r.scriptName(), Scale: r.scale, QueryMode: r.mode.String(),
		Clients: cfg.Clients, Threads: r.opts.jobs, MaxTries: cfg.MaxTries, DurationS: secs, Rate: cfg.Rate,
		LatencyLimitMS: float64(cfg.LatencyLimit) / float64(time.Millisecond),
		ConnTimeMS:     float64(res.ConnTime.Microseconds()) / 1000, TPS: float64(res.Totals.Total.Count) / secs,
		Interrupted: res.Interrupted, AbortedClients: res.AbortedClient,
		Totals: toJSONStats(&res.Totals.Total, res.Totals.Hist),
	}
	for i, sc := range cfg.Scripts {
		ss := &res.Totals.Scripts[i]
		js := jsonScriptSummary{Name: sc.Name, Weight: sc.Weight, TPS: float64(ss.Count) / secs, Stats: toJSONStats(&ss.Stats, ss.Hist)}
		if cfg.PerCommand {
			for j, c := range sc.Commands {
				cs := &ss.Commands[j]
				jc := jsonCommand{Text: c.Text, LatencyAvgMS: ms(cs.MeanUS()), Failures: cs.Failures, Retries: cs.Retries}
				p := toJSONPercentiles(cs.Latency)
				jc.Percentiles = &p
				js.Commands = append(js.Commands, jc)
			}
		}
		doc.Scripts = append(doc.Scripts, js)
	}
	return doc
}

func (r *pgbenchReport) writeJSON(write func([]byte) error, res *engine.Result) error {
	b, err := json.MarshalIndent(r.buildJSON(res), "", "  ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	return write(append(b, '\n')) // clikit.Env.ForJSON: the file, or stdout for -
}
