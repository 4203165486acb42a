package redis

import (
	"context"
	"fmt"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler"
)

// Source "redis_slowlog" reads the slow log once a second: its length and
// the entries added since the previous reading (commands whose execution
// took longer than slowlog-log-slower-than, 10 ms by default). The slow
// log times the command's execution only: a client stalled by an AOF
// write, a fork or a full socket adds nothing to it.
//
//	length count
//	new_entries count
//	new_max_ms ms
//
// Detail: the new entries (at most slowlogGet, newest first),
// []redismetric.SlowlogEntry.
type slowlog struct {
	session *session
	lastID  int64 // the newest entry read; -1 before the first reading
	started bool
}

var _ sampler.Sampler = (*slowlog)(nil)

func (*slowlog) Name() string { return rm.Slowlog }

// slowlogGet is how many entries a reading fetches: more new ones in a
// second are counted by their ids, not detailed.
const slowlogGet = 32

// slowlogArgLen shortens each argument of an entry (Redis already cuts
// them at 128 bytes and 32 arguments).
const slowlogArgLen = 64

func (s *slowlog) Sample(ctx context.Context) (map[string]float64, any, error) {
	lenReply, err := s.session.do(ctx, "SLOWLOG", "LEN")
	if err != nil {
		return nil, nil, err
	}
	if lenReply.Type != redisconn.Integer {
		return nil, nil, fmt.Errorf("SLOWLOG LEN: %w", errShape)
	}
	reply, err := s.session.do(ctx, "SLOWLOG", "GET", fmt.Sprint(slowlogGet))
	if err != nil {
		return nil, nil, err
	}
	entries, err := parseSlowlog(reply)
	if err != nil {
		return nil, nil, err
	}
	values := map[string]float64{rm.SlowlogLength: float64(lenReply.Int)}
	newest := int64(-1)
	for _, e := range entries {
		newest = max(newest, e.ID)
	}
	if !s.started {
		s.started, s.lastID = true, newest
		return values, nil, nil
	}
	var fresh []rm.SlowlogEntry
	maxUS := int64(-1)
	fetched := int64(0) // new entries among those read, the samplers' own included
	for _, e := range entries {
		if e.ID <= s.lastID {
			continue
		}
		fetched++
		if e.ClientName != s.session.config.Name {
			fresh = append(fresh, e)
			maxUS = max(maxUS, e.DurationUS)
		}
	}
	// Ids number every entry, also those beyond the slowlogGet read, which
	// are counted but not detailed. SLOWLOG RESET does not restart the
	// ids, so a newest id below the last one only means an emptied log.
	added := int64(len(fresh))
	if newest > s.lastID {
		added += max(newest-s.lastID-fetched, 0)
		s.lastID = newest
	}
	values[rm.SlowlogNewEntries] = float64(added)
	if maxUS >= 0 {
		values[rm.SlowlogNewMaxMS] = float64(maxUS) / 1000
	}
	if len(fresh) == 0 {
		return values, nil, nil
	}
	return values, fresh, nil
}

// parseSlowlog reads SLOWLOG GET: an array of [id, unix time, duration
// µs, [args…]] with, since Redis 4.0, the client's address and name.
func parseSlowlog(r redisconn.Reply) ([]rm.SlowlogEntry, error) {
	if r.Type != redisconn.Array {
		return nil, fmt.Errorf("SLOWLOG GET: %w: %c", errShape, r.Type)
	}
	out := make([]rm.SlowlogEntry, 0, len(r.Elems))
	for _, row := range r.Elems {
		if row.Type != redisconn.Array || len(row.Elems) < 4 {
			return nil, fmt.Errorf("SLOWLOG GET: %w: an entry is not [id, time, duration, args …]", errShape)
		}
		for i := range 3 {
			if row.Elems[i].Type != redisconn.Integer || row.Elems[i].Int < 0 {
				return nil, fmt.Errorf("SLOWLOG GET: %w: element %d of an entry is not a count", errShape, i+1)
			}
		}
		args := row.Elems[3]
		if args.Type != redisconn.Array {
			return nil, fmt.Errorf("SLOWLOG GET: %w: an entry's arguments are not an array", errShape)
		}
		e := rm.SlowlogEntry{ID: row.Elems[0].Int, Unix: row.Elems[1].Int, DurationUS: row.Elems[2].Int}
		for _, a := range args.Elems {
			e.Args = append(e.Args, shorten(a.Text(), slowlogArgLen))
		}
		if len(row.Elems) >= 6 {
			e.Client, e.ClientName = row.Elems[4].Text(), row.Elems[5].Text()
		}
		out = append(out, e)
	}
	return out, nil
}

// shorten cuts text to at most n bytes (on a character boundary when it
// is UTF-8), marking the cut with "…".
func shorten(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := n
	for cut > 0 && cut < len(text) && text[cut]&0xC0 == 0x80 {
		cut--
	}
	return text[:cut] + "…"
}
