package present

// Compare is what compare weighs for one kind of target beyond the
// workloads' throughput and latency percentiles: the worst latency (a
// server that stops for a moment shows there, not in p99), and the
// server's own counters that tell why.
type Compare struct {
	// StallMS is the latency (ms) past which a transaction counts as
	// stalled rather than slow.
	StallMS float64
	// Counters are the kind's key series, each summed or maximised over
	// the whole run.
	Counters []Counter
}

// Counter is one sampled series compare sets side by side.
type Counter struct {
	Source, Key string
	Label       string
	Unit        string
	Agg         string // Sum (a count per interval), Max, Mean (a rate or level)
}

// How a counter is taken over a run.
const (
	Sum  = "sum"
	Max  = "max"
	Mean = "mean"
)
