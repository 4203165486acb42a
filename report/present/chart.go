package present

// Chart declares one database chart of a kind: series read straight from
// the sampled values, which the samplers already record as levels, rates
// or counts per interval. A chart with Drawn set is drawn in one of the
// report's shapes that declared series cannot express (see Drawn…); its
// Series then say which values the shape reads.
type Chart struct {
	// Drawn names the shape the report draws the chart in ("": from
	// Series as declared).
	Drawn           string
	ID, Title, Help string
	Axes            []Axis
	Log             bool
	Series          []Series
	// What names what the chart shows when none of its series has data
	// ("the AOF's fsync counters"), for the reason it gives.
	What string
	// Sparse says why the chart may hold only a few values (a hit rate
	// exists only in ticks with reads), for the line that leaves it out.
	Sparse string
	// Shades colour a family's lines by the part of their label before
	// ':' (a wait event's type: "Lock" of "Lock:tuple"), a shade each in
	// turn; "" groups fall back to the report's own.
	Shades map[string][]string
}

// The shapes the report draws by code.
const (
	// DrawnThroughput is the workloads' tx/s and errors/s; Series are
	// counters of the server (per tick) drawn as rates beside the errors
	// (the deadlocks it detected).
	DrawnThroughput = "throughput"
	// DrawnLatency is the workloads' latency percentiles.
	DrawnLatency = "latency"
	// DrawnSessions stacks sessions by what they wait on: Series[0] is
	// the family (Prefix, Top), Series[1] the key of sessions running
	// (drawn first, with its Label); Shades colour the waits.
	DrawnSessions = "sessions"
	// DrawnConnections is the server's connections (Series, from one
	// source: a level and its limit) with the workloads' pool waits.
	DrawnConnections = "connections"
	// DrawnLevelAndFamily is one level (Series[0]) on the left axis and a
	// family's largest lines by peak (Series[1]: Top, and a total line
	// "all N <Label>") on the right.
	DrawnLevelAndFamily = "level+family"
)

// Axis is a y axis: the first a chart lists is on the left, the second on
// the right.
type Axis struct {
	Label string
	// Unit is how values are read: rate, ms, s, aas, pct (0..1), pct100,
	// count, bytes, bytesps, cores.
	Unit string
	// Text is the unit as the reader reads it ("tx/s", "xids"); a
	// count's is required, the other units have their own.
	Text string
	Min  *float64
	Max  *float64 // where the scale stops growing
	// Headroom > 1 stretches the scale so the series use the lower
	// 1/Headroom of the plot: errors stay below throughput.
	Headroom float64
	// Fixed draws exactly Min to Max, whatever the data: a share's range.
	Fixed bool
}

// Zero is an axis bound of 0, the usual Min.
func Zero() *float64 { v := 0.0; return &v }

// Series is one line, or a family of lines, of a Chart.
type Series struct {
	Source string
	// Key is one value key; or, when empty, every key that starts with
	// Prefix and ends with Suffix is a line of its own, labelled with
	// what lies between (sorted by total, largest first).
	Key            string
	Prefix, Suffix string
	// Top keeps the family's largest lines on their own (default 6) and
	// sums the rest into one "other" line.
	Top   int
	Label string // Key's label (the family's lines use their own part)
	Axis  int
	Color string // Key's colour (the family's lines use the palette)
	Style string // "", "dash", "dot"
	Width float64
	Alpha float64
	Stack bool
	// ZeroWhenAbsent: a good sample without the key means 0 (an event
	// that did not happen), not a gap.
	ZeroWhenAbsent bool
	// SkipIfZero leaves the line out when it is 0 throughout (a limit
	// that is not set, a counter that never moved).
	SkipIfZero bool
	Hidden     bool
	// Ref marks a limit, not data: a chart of only limits and zeros has
	// nothing to show.
	Ref bool
	// Scale multiplies Key's values into the axis's unit (0.001: ms to
	// s); 0 is 1.
	Scale float64
	// ByName orders a family's lines by their names, not by total.
	ByName bool
	// Name and What are how a shape's notes call the series and what it
	// shows when it has no data ("xmin horizon", "horizon age").
	Name, What string
}

// Load is the one series the compare page overlays of two runs of a kind
// as the database's load.
type Load struct {
	// ID is the chart's id on the page; "" is "load".
	ID          string
	Title, Help string
	Axis        Axis
	Source, Key string
	// MissingIsZero: a good sample without the key means 0, not a gap
	// (and a run that sampled Source at all is drawn).
	MissingIsZero bool
	// SameKindOnly overlays it only when both runs are of this kind: in a
	// comparison with another kind only the other's load is drawn.
	SameKindOnly bool
	// NoData says why neither run has the series ("neither run sampled
	// pg_stat_activity"); "" says that neither sampled Source.
	NoData string
}
