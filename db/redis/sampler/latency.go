package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler"
)

// Source "redis_latency" reads the latency monitor once a second: LATENCY
// LATEST for the events it has seen, then LATENCY HISTORY of each event
// whose latest occurrence is new, and reports the occurrences recorded
// since the previous reading. The monitor records only what lasts at
// least latency-monitor-threshold (firedrill's embedded server: 10 ms; 0,
// Redis's default, records nothing), one record per event per second.
//
//	<event>.max_ms ms
//	<event>.count count
//
// Detail: the new occurrences, []redismetric.LatencyEvent.
type latency struct {
	session *session
	// seen is the Unix second of the newest occurrence read, per event;
	// nil before the first reading, which only takes the baseline.
	seen map[string]int64
}

var _ sampler.Sampler = (*latency)(nil)

func (*latency) Name() string { return rm.Latency }

// latestEntry is one row of LATENCY LATEST.
type latestEntry struct {
	event  string
	unix   int64 // its latest occurrence
	latest int64 // ms
	max    int64 // ms, since the server started or LATENCY RESET
}

// historyPoint is one row of LATENCY HISTORY.
type historyPoint struct {
	unix int64
	ms   int64
}

func (s *latency) Sample(ctx context.Context) (map[string]float64, any, error) {
	reply, err := s.session.do(ctx, "LATENCY", "LATEST")
	if err != nil {
		return nil, nil, err
	}
	latest, err := parseLatencyLatest(reply)
	if err != nil {
		return nil, nil, err
	}
	first := s.seen == nil
	if first {
		s.seen = map[string]int64{}
	}
	values := map[string]float64{}
	var occurrences []rm.LatencyEvent
	for _, e := range latest {
		before, known := s.seen[e.event]
		if first {
			s.seen[e.event] = e.unix
			continue
		}
		if known && e.unix <= before {
			values[rm.LatencyCount(e.event)] = 0
			continue
		}
		reply, err := s.session.do(ctx, "LATENCY", "HISTORY", e.event)
		if err != nil {
			return nil, nil, err
		}
		history, err := parseLatencyHistory(reply)
		if err != nil {
			return nil, nil, fmt.Errorf("LATENCY HISTORY %s: %w", e.event, err)
		}
		count, maxMS := 0, int64(0)
		for _, p := range history {
			if p.unix > before {
				count++
				maxMS = max(maxMS, p.ms)
				occurrences = append(occurrences, rm.LatencyEvent{Event: e.event, Unix: p.unix, MS: float64(p.ms)})
			}
		}
		if count == 0 {
			// The history keeps 160 records; the newest one is in LATEST.
			count, maxMS = 1, e.latest
			occurrences = append(occurrences, rm.LatencyEvent{Event: e.event, Unix: e.unix, MS: float64(e.latest)})
		}
		values[rm.LatencyCount(e.event)] = float64(count)
		values[rm.LatencyMax(e.event)] = float64(maxMS)
		s.seen[e.event] = max(before, e.unix)
	}
	slices.SortFunc(occurrences, func(a, b rm.LatencyEvent) int { return cmp.Compare(a.Unix, b.Unix) })
	if len(occurrences) == 0 {
		return values, nil, nil
	}
	// The occurrences carry the server's wall clock; the reading's own
	// time on that clock places them on the run's (one more round trip,
	// only when something new was recorded).
	reply, err = s.session.do(ctx, "TIME")
	if err != nil {
		return nil, nil, err
	}
	now, err := parseTime(reply)
	if err != nil {
		return nil, nil, fmt.Errorf("TIME: %w", err)
	}
	for i := range occurrences {
		occurrences[i].AgeS = max(0, now-float64(occurrences[i].Unix))
	}
	return values, occurrences, nil
}

// parseTime reads TIME: [unix seconds, microseconds] as bulk strings.
func parseTime(r redisconn.Reply) (float64, error) {
	if r.Type != redisconn.Array || len(r.Elems) != 2 {
		return 0, fmt.Errorf("%w: not [seconds, microseconds]", errShape)
	}
	var parts [2]int64
	for i, e := range r.Elems {
		if e.Type != redisconn.Bulk {
			return 0, fmt.Errorf("%w: element %d is not a string", errShape, i+1)
		}
		n, err := strconv.ParseInt(e.Str, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: element %d is not a count: %q", errShape, i+1, e.Str)
		}
		parts[i] = n
	}
	return float64(parts[0]) + float64(parts[1])/1e6, nil
}

// errShape marks a reply whose shape is not what the command returns.
var errShape = errors.New("unexpected reply shape")

// parseLatencyLatest reads LATENCY LATEST: an array of [event, unix
// time, latest ms, max ms] (Redis 7.2 adds a fifth element, the sum).
func parseLatencyLatest(r redisconn.Reply) ([]latestEntry, error) {
	if r.Type != redisconn.Array {
		return nil, fmt.Errorf("LATENCY LATEST: %w: %c", errShape, r.Type)
	}
	out := make([]latestEntry, 0, len(r.Elems))
	for _, row := range r.Elems {
		if row.Type != redisconn.Array || len(row.Elems) < 4 || row.Elems[0].Type != redisconn.Bulk || row.Elems[0].Str == "" {
			return nil, fmt.Errorf("LATENCY LATEST: %w: a row is not [event, time, latest, max]", errShape)
		}
		var numbers [3]int64
		for i := range numbers {
			e := row.Elems[i+1]
			if e.Type != redisconn.Integer || e.Int < 0 {
				return nil, fmt.Errorf("LATENCY LATEST %s: %w: element %d is not a count", row.Elems[0].Str, errShape, i+2)
			}
			numbers[i] = e.Int
		}
		out = append(out, latestEntry{event: row.Elems[0].Str, unix: numbers[0], latest: numbers[1], max: numbers[2]})
	}
	return out, nil
}

// parseLatencyHistory reads LATENCY HISTORY: an array of [unix time, ms].
func parseLatencyHistory(r redisconn.Reply) ([]historyPoint, error) {
	if r.Type != redisconn.Array {
		return nil, fmt.Errorf("%w: %c", errShape, r.Type)
	}
	out := make([]historyPoint, 0, len(r.Elems))
	for _, row := range r.Elems {
		if row.Type != redisconn.Array || len(row.Elems) != 2 ||
			row.Elems[0].Type != redisconn.Integer || row.Elems[1].Type != redisconn.Integer || row.Elems[1].Int < 0 {
			return nil, fmt.Errorf("%w: a row is not [time, ms]", errShape)
		}
		out = append(out, historyPoint{unix: row.Elems[0].Int, ms: row.Elems[1].Int})
	}
	return out, nil
}
