// Package measure declares the metrics a kind of target offers drills'
// expectations beyond the clients' numbers (deadlocks, a cache's hit
// rate …), as data each kind's folder hands over (Measured) and package
// drills measures. It is a leaf so that a kind can declare them without
// linking the drills.
package measure

// Metric is a value of a run's sampled series that drill expectations
// may name, declared by the kind whose samplers record it (Measured), as
// data: the series to sum, or a hit rate to pool.
type Metric struct {
	// Name is what an expectation writes; a family's ends in a
	// placeholder ("slru_hit_rate.<cache>") that one of Members fills.
	Name    string
	Unit    string
	Members []string
	// Sum are series summed over the window. Metrics of one name from
	// several kinds add up (deadlocks: PostgreSQL's and InnoDB's).
	Sum []Series
	// Trailing says a sample at t counts the tick before it: it falls in
	// a window (From, To] rather than [From, To).
	Trailing bool
	// ErrorCodes are counted from the clients' errors instead when the
	// run sampled none of Sum.
	ErrorCodes []string
	// HitRate pools a family member's hits and reads over the window.
	HitRate *HitRate
}

// Series is one sampled series: a source's value key.
type Series struct{ Source, Key string }

// HitRate is a cache's hit rate pooled over a window's samples, from the
// per-second rates of its hits and of its reads (misses): the keys are
// the member's name followed by HitsSuffix and ReadsSuffix.
type HitRate struct {
	Source                  string
	HitsSuffix, ReadsSuffix string
}

// Measured is a kind (a backend) with metrics of its own for drills'
// expectations.
type Measured interface {
	DrillMetrics() []Metric
}
