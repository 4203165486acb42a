package timeline

// Bars calls fn for each range of equivalent values the histogram holds
// values in, in increasing order: [fromUS, toUS] (µs) and how many values
// fell in it. It is for exporters that rebucket the histogram (Prometheus
// buckets) once per interval; it allocates one slice of bars per call.
func (h *Histogram) Bars(fn func(fromUS, toUS, count int64)) {
	if h.hist().TotalCount() == 0 {
		return
	}
	for _, b := range h.hist().Distribution() {
		if b.Count > 0 {
			fn(b.From, b.To, b.Count)
		}
	}
}
