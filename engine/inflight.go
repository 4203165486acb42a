package engine

import "time"

// A transaction that does not end (a lock wait, a server that stopped
// answering) records nothing until it does: its interval's histogram has
// no sample of it, and a chart of latency shows a gap or a calm line
// where the incident is. Each client therefore publishes when its
// transaction in flight began, and every progress tick reports the age
// of the oldest one, so that a 25 s wait is a line rising for 25 s.
//
// The cost on the hot path is two atomic stores per transaction on the
// client's own struct (no allocation, no shared cache line); the
// supervisor reads them once per tick.

// startInFlight marks the client's transaction as running since
// scheduled (µs since the run's start; stored +1 so zero means idle).
func (c *client) startInFlight(scheduled int64) { c.inFlightSince.Store(scheduled + 1) }

// endInFlight marks the client idle.
func (c *client) endInFlight() { c.inFlightSince.Store(0) }

// oldestInFlight is the age at nowUS of the oldest transaction any of
// clients is running, zero when none is.
func oldestInFlight(clients []*client, nowUS int64) time.Duration {
	oldest := int64(0)
	for _, c := range clients {
		since := c.inFlightSince.Load()
		if since == 0 {
			continue
		}
		if age := nowUS - (since - 1); age > oldest {
			oldest = age
		}
	}
	return time.Duration(oldest) * time.Microsecond
}
