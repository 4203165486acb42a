package httpbench

import (
	"context"
	"fmt"
	"os"
	"time"

	httptarget "github.com/firedrill/firedrill/db/http/client"
	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// Load is one run of firedrill's side against the bench server.
type Load struct {
	URL      string // the server's base URL
	Clients  int    // keep-alive connections, one per client
	Threads  int    // event loops (-j)
	Duration time.Duration
	// Rate is the open model's requests per second (Poisson arrivals, as
	// `firedrill run`'s rate:); 0 is the closed model, each client
	// sending its next request once the last reply is read.
	Rate float64
	// Seed is the run's random seed (0 is 1): under a rate, which
	// Poisson schedule it draws.
	Seed uint64
}

// Result is what a run of firedrill's side did: requests answered and
// failed, over how long, and the latency's percentiles (from each
// request's intended start under a rate, as firedrill reports it).
type Result struct {
	Requests int64   `json:"requests"`
	Failed   int64   `json:"failed"`
	Seconds  float64 `json:"seconds"`
	// SendSeconds is the span the requests were sent over: an open-model
	// run's duration (its schedule ends there; Seconds adds the wait for
	// the last replies), as vegeta's rate counts from its first send to
	// its last.
	SendSeconds float64 `json:"send_seconds,omitempty"`
	// Scheduled is how many requests an open-model run's Poisson
	// schedule placed in the duration (engine.ScheduledStarts): a fixed
	// seed draws the same count every run, ±√N around rate × duration.
	Scheduled int64   `json:"scheduled,omitempty"`
	MeanMS    float64 `json:"mean_ms"`
	P50MS     float64 `json:"p50_ms"`
	P90MS     float64 `json:"p90_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
}

// benchScript is the request each transaction sends.
const benchScript = "GET /\n"

// appName names firedrill's side to the server.
const appName = "firedrill-bench"

// UserAgent is the header firedrill's side sends besides Host
// (db/http/client's "firedrill (APP)"): a tool compared on throughput
// sends it too (wrk -H), so that the server parses the same request from
// both. Go's server spends a map entry and strings on each header, and
// its CPU per request is what the comparison is mostly made of.
const UserAgent = "firedrill (" + appName + ")"

// Firedrill runs the engine with the HTTP target on its event loops, as a
// workload of `firedrill run` does, without samplers.
func Firedrill(l Load) (Result, error) {
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("bench.http", []byte(benchScript), syms, httpdialect.Script())
	if err != nil {
		return Result{}, err
	}
	target, err := httptarget.NewTarget(httptarget.Config{URL: l.URL, AppName: appName})
	if err != nil {
		return Result{}, err
	}
	seed := l.Seed
	if seed == 0 {
		seed = 1
	}
	cfg := engine.Config{
		Scripts: []*script.Script{sc}, Symbols: syms, Clients: l.Clients, Threads: l.Threads,
		Duration: l.Duration, Rate: l.Rate, Stderr: os.Stderr, RandomSeed: seed,
	}
	res, err := engine.Run(context.Background(), target, cfg)
	if err != nil {
		return Result{}, err
	}
	if res.AbortedClient > 0 {
		return Result{}, fmt.Errorf("%d clients aborted", res.AbortedClient)
	}
	t := res.Totals
	q := func(p float64) float64 { return float64(t.Hist.Quantile(p)) / 1000 }
	out := Result{
		Requests: t.Total.Count,
		Failed:   t.Total.Failures(),
		Seconds:  res.Elapsed.Seconds(),
		MeanMS:   t.Total.Latency.Mean() / 1000,
		P50MS:    q(50), P90MS: q(90), P99MS: q(99),
		MaxMS: float64(t.Hist.Max()) / 1000,
	}
	if l.Rate > 0 {
		out.SendSeconds, out.Scheduled = l.Duration.Seconds(), engine.ScheduledStarts(cfg)
	}
	return out, nil
}
