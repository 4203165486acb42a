package timeline

// Outage is one outage of a workload, from its marks (kind MarkOutage):
// when its connections failed, why, and for how long.
type Outage struct {
	Name     string // the marks' event name, outage-N
	Workload string
	Start    float64 // seconds since the run's start
	// End is when a transaction succeeded again, or the last record of
	// the run if the outage never ended (Ended false).
	End     float64
	Code    string // the error code that opened it (08001, 57P03 …)
	Cause   string // its message
	Outcome string // the end mark's: recovered after …, or not
	Ended   bool
}

// Outages pairs the run's outage marks, in the order outages started.
func (r *Run) Outages() []Outage {
	var out []Outage
	index := map[string]int{}
	for _, mk := range r.Marks {
		if mk.Kind != MarkOutage {
			continue
		}
		i, ok := index[mk.Event]
		if !ok {
			i = len(out)
			index[mk.Event] = i
			out = append(out, Outage{Name: mk.Event, Start: mk.T, End: r.lastT()})
		}
		o := &out[i]
		if s, ok := mk.Detail["workload"].(string); ok {
			o.Workload = s
		}
		if s, ok := mk.Detail["code"].(string); ok && o.Code == "" {
			o.Code = s
		}
		switch mk.Phase {
		case PhaseStart:
			o.Start = mk.T
			o.Cause, _ = mk.Detail["cause"].(string)
		case PhaseEnd:
			o.End, o.Outcome, o.Ended = mk.T, mk.Outcome, true
		}
	}
	return out
}

// lastT is the time of the run's last record.
func (r *Run) lastT() float64 {
	end := 0.0
	if r.Summary != nil {
		end = r.Summary.Duration
	}
	for _, iv := range r.Intervals {
		end = max(end, iv.End)
	}
	for _, s := range r.Samples {
		end = max(end, s.T)
	}
	for _, m := range r.Marks {
		end = max(end, m.T)
	}
	return end
}

// Duration is how long the outage lasted, in seconds.
func (o Outage) Duration() float64 { return o.End - o.Start }
