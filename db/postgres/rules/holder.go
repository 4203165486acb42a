package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// horizonHold is a stretch where the xmin horizon stayed put: its age (in
// transaction ids) only grew, because something kept an old transaction
// or snapshot open.
type horizonHold struct {
	Series             string // the series it was read from, "source:key"
	Start, End         float64
	StartAge, EndAge   float64 // xids
	EndedBeforeRunEnds bool    // the age fell back: the holder went away
}

// Duration is how long the horizon was seen held.
func (h horizonHold) Duration() float64 { return h.End - h.Start }

// horizonAgeSeries is the xmin horizon's age: xmin_horizon:age, or for a
// run without that sampler the oldest backend_xmin pg_stat_activity saw.
func horizonAgeSeries(run *timeline.Run) (string, []timeline.Point) {
	if pts := run.Series(pgmetric.XminHorizon, pgmetric.HorizonAge); len(pts) > 0 {
		return "xmin_horizon:age", pts
	}
	return pgmetric.Series(pgmetric.Activity, pgmetric.OldestBackendXminAge), run.Series(pgmetric.Activity, pgmetric.OldestBackendXminAge)
}

// horizonHolds finds the stretches where the horizon's age kept growing
// for at least minDuration seconds. A held horizon's age never falls: it
// grows with every transaction id the rest of the server takes, and drops
// only when the holder goes away. Ages of 0 (nothing holds) end a stretch.
func horizonHolds(run *timeline.Run, minDuration float64) []horizonHold {
	series, pts := horizonAgeSeries(run)
	var out []horizonHold
	start := 0
	flush := func(end int, fell bool) {
		// A flat start is a quiet server, not yet a hold: the hold begins
		// where the age last stood still before it grew.
		for start < end && pts[start+1].V == pts[start].V {
			start++
		}
		if end <= start {
			return
		}
		a, b := pts[start], pts[end]
		if b.T-a.T >= minDuration && b.V > a.V {
			out = append(out, horizonHold{Series: series, Start: a.T, End: b.T,
				StartAge: a.V, EndAge: b.V, EndedBeforeRunEnds: fell})
		}
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].V < pts[i-1].V || pts[i].V <= 0 {
			flush(i-1, true)
			start = i
		}
	}
	if len(pts) > 0 {
		flush(len(pts)-1, false)
	}
	return out
}

// holdOverlapping returns the longest hold that overlaps [from, to].
func holdOverlapping(holds []horizonHold, from, to float64) (horizonHold, bool) {
	best, ok := horizonHold{}, false
	for _, h := range holds {
		if h.End < from || h.Start > to {
			continue
		}
		if !ok || h.Duration() > best.Duration() {
			best, ok = h, true
		}
	}
	return best, ok
}

// xminHolder is what holds the horizon: a session, a prepared transaction
// or a replication slot.
type xminHolder struct {
	Kind        string  // backend, prepared or slot
	T           float64 // when it was seen
	AgeXIDs     float64
	PID         int
	App         string
	BackendType string
	State       string
	XactAgeS    float64 // how long its transaction has been open (backend, prepared); -1 unknown
	Query       string
	GID         string
	SlotName    string
	Event       string // the firedrill event that opened it, if one did
	From        string // the evidence that named it: "pg_stat_activity", "xmin_horizon", "event:NAME"
}

// holdsHorizon says whether the session can hold the horizon back at all:
// it has a transaction id or a snapshot. Autovacuum's snapshot does not
// hold back other vacuums.
func holdsHorizon(s pgmetric.ActivitySession) bool {
	return (s.BackendXID != "" || s.BackendXminAge != nil) && s.BackendType != "autovacuum worker"
}

// findHolder names what held the horizon at the hold's oldest moment.
//
// The xmin_horizon sampler names the session with the oldest xmin or xid,
// but when every snapshot's xmin equals the long transaction's xid the
// ages tie and it may name any session. A snapshot's xmin is always a
// transaction that was running when the snapshot was taken, so the true
// holder is the session whose own transaction is the oldest: the
// pg_stat_activity detail (oldest transactions first) decides, and a
// hold_transaction event covering the moment confirms it. No event is
// required.
func findHolder(run *timeline.Run, h horizonHold) (xminHolder, bool) {
	// Every moment of the hold with evidence, latest first.
	var times []float64
	for _, s := range run.SourceSamples(pgmetric.XminHorizon) {
		if s.T >= h.Start && s.T <= h.End+0.01 {
			times = append(times, s.T)
		}
	}
	if len(times) == 0 {
		for _, s := range run.SourceSamples(pgmetric.Activity) {
			if s.T >= h.Start && s.T <= h.End+0.01 {
				times = append(times, s.T)
			}
		}
	}
	// The holder's transaction is the one open longest; taking the best
	// moment also outvotes ticks where the evidence named someone else.
	best, found := xminHolder{}, false
	for i := len(times) - 1; i >= 0; i-- {
		if holder, ok := holderAt(run, times[i], h); ok && (!found || holder.XactAgeS > best.XactAgeS) {
			best, found = holder, true
		}
	}
	return best, found
}

// holderAt names the holder at time t, from whatever evidence that moment has.
func holderAt(run *timeline.Run, t float64, h horizonHold) (xminHolder, bool) {
	tol := 0.6 * diagnose.Tick(run)
	var named *xminHolder
	if s := diagnose.SampleNear(run, pgmetric.XminHorizon, t, tol); s != nil {
		var d pgmetric.XminHolder
		if diagnose.Detail(s, &d) && d.Kind != "" {
			named = &xminHolder{Kind: d.Kind, T: s.T, AgeXIDs: d.Age, PID: d.PID, App: d.ApplicationName,
				BackendType: d.BackendType, State: d.State, XactAgeS: -1, Query: d.Query,
				GID: d.GID, SlotName: d.SlotName, From: "xmin_horizon"}
			if d.XactAgeS != nil {
				named.XactAgeS = *d.XactAgeS
			}
			if named.Kind == "prepared" || named.Kind == "slot" {
				return *named, true
			}
		}
	}
	// The oldest session that has an xid or a snapshot.
	var oldest *pgmetric.ActivitySession
	if s := diagnose.SampleNear(run, pgmetric.Activity, t, tol); s != nil {
		var sessions []pgmetric.ActivitySession
		if diagnose.Detail(s, &sessions) {
			for i := range sessions {
				c := &sessions[i]
				if !holdsHorizon(*c) {
					continue
				}
				if oldest == nil || c.XactAgeS > oldest.XactAgeS ||
					c.XactAgeS == oldest.XactAgeS && xidOlder(c.BackendXID, oldest.BackendXID) {
					oldest = c
				}
			}
		}
	}
	event := eventHolderAt(run, t)
	switch {
	case oldest != nil && (named == nil || named.PID != oldest.PID && named.XactAgeS < oldest.XactAgeS-1):
		// The sampler's tie named a younger session: the oldest transaction is the holder.
		age := 0.0
		if named != nil {
			age = named.AgeXIDs
		}
		holder := xminHolder{Kind: "backend", T: t, AgeXIDs: age, PID: oldest.PID, App: oldest.ApplicationName,
			BackendType: oldest.BackendType, State: oldest.State, XactAgeS: oldest.XactAgeS,
			Query: oldest.Query, From: "pg_stat_activity"}
		if age == 0 {
			_, pts := horizonAgeSeries(run)
			if p, ok := diagnose.PointNear(pts, t, tol); ok {
				holder.AgeXIDs = p.V
			}
		}
		if event != nil && event.PID == holder.PID {
			holder.Event = event.Event
		}
		return holder, true
	case named != nil:
		if event != nil && event.PID != named.PID && named.XactAgeS >= 0 && named.XactAgeS < 0.5*(t-h.Start) {
			// No session list to decide, and the named session is far
			// younger than the hold: the event that opened a transaction
			// before the hold began is the better explanation.
			event.AgeXIDs, event.T = named.AgeXIDs, t
			return *event, true
		}
		if event != nil && event.PID == named.PID {
			named.Event = event.Event
		}
		if oldest != nil && oldest.PID == named.PID && named.Query == "" {
			named.Query = oldest.Query
		}
		return *named, true
	case event != nil:
		event.T = t
		return *event, true
	}
	return xminHolder{}, false
}

// eventHolderAt is the hold_transaction event whose transaction was open
// at t, as a holder, or nil.
func eventHolderAt(run *timeline.Run, t float64) *xminHolder {
	for _, e := range diagnose.Events(run) {
		if e.Kind != "hold_transaction" || t < e.Start || t > e.End {
			continue
		}
		pid, ok := numberOf(e.Started["pid"])
		if !ok {
			continue
		}
		app, _ := e.Started["application_name"].(string)
		return &xminHolder{Kind: "backend", PID: int(pid), App: app, State: "idle in transaction",
			XactAgeS: t - e.Start, Event: e.Name, From: "event:" + e.Name}
	}
	return nil
}

// numberOf reads a number from decoded JSON.
func numberOf(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

// xidOlder compares two 32-bit transaction ids as PostgreSQL does
// (modulo 2^32); an empty or unreadable id is never older.
func xidOlder(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 32)
	y, errB := strconv.ParseUint(b, 10, 32)
	if errA != nil {
		return false
	}
	if errB != nil {
		return true
	}
	return int32(uint32(x)-uint32(y)) < 0
}

// what names the holder's kind in words.
func (x xminHolder) what() string {
	switch x.Kind {
	case "prepared":
		return "prepared transaction"
	case "slot":
		return "replication slot"
	}
	switch {
	case strings.HasPrefix(x.State, "idle in transaction"):
		return "idle-in-transaction session"
	case x.State == "active" || x.State == "fastpath function call":
		return "long-running query"
	case x.BackendType != "" && x.BackendType != "client backend":
		return x.BackendType
	}
	return "long transaction"
}

// describe is the holder in one clause: what, who, how long, what it ran.
func (x xminHolder) describe() string {
	var parts []string
	switch x.Kind {
	case "prepared":
		if x.GID != "" {
			parts = append(parts, fmt.Sprintf("gid '%s'", x.GID))
		}
	case "slot":
		if x.SlotName != "" {
			parts = append(parts, fmt.Sprintf("'%s'", x.SlotName))
		}
		if x.State != "" {
			parts = append(parts, x.State)
		}
	default:
		if x.PID > 0 {
			parts = append(parts, fmt.Sprintf("pid %d", x.PID))
		}
		if x.App != "" {
			parts = append(parts, x.App)
		}
	}
	if x.XactAgeS >= 0 && x.Kind != "slot" {
		parts = append(parts, "open "+diagnose.SecondsText(x.XactAgeS))
	}
	if x.Query != "" {
		parts = append(parts, fmt.Sprintf("last ran `%s`", sqlcheck.Shorten(x.Query, 60)))
	}
	s := x.what()
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// remedy is how to end this holder now and keep it from coming back.
func (x xminHolder) remedy() string {
	switch x.Kind {
	case "prepared":
		gid := x.GID
		if gid == "" {
			gid = "<gid>"
		}
		return fmt.Sprintf("Finish the prepared transaction: `COMMIT PREPARED '%s'` or `ROLLBACK PREPARED '%s'` "+
			"(list them with `SELECT gid, prepared, owner FROM pg_prepared_xacts`), and fix the transaction "+
			"manager that left it; keep max_prepared_transactions at 0 where two-phase commit is not used.", gid, gid)
	case "slot":
		name := x.SlotName
		if name == "" {
			name = "<slot>"
		}
		return fmt.Sprintf("If the slot's consumer is gone, drop it: `SELECT pg_drop_replication_slot('%s')`; "+
			"otherwise make its consumer keep up (or turn off hot_standby_feedback on the standby), and cap "+
			"what a slot may retain with max_slot_wal_keep_size.", name)
	}
	pid := "<pid>"
	if x.PID > 0 {
		pid = strconv.Itoa(x.PID)
	}
	end := fmt.Sprintf("End it now: `SELECT pg_terminate_backend(%s)`.", pid)
	switch x.what() {
	case "idle-in-transaction session":
		return end + " Keep it from coming back: `ALTER ROLE … SET idle_in_transaction_session_timeout = '10s'` " +
			"(or per session), and commit or roll back before waiting on anything outside the database."
	case "long-running query":
		return fmt.Sprintf("Cancel it: `SELECT pg_cancel_backend(%s)` (or pg_terminate_backend). Bound queries with "+
			"`statement_timeout` (e.g. `SET statement_timeout = '30s'` for the application role), and run long "+
			"reports on a replica.", pid)
	}
	return end + " Bound transactions with `idle_in_transaction_session_timeout` and `statement_timeout` " +
		"(PostgreSQL 17: `transaction_timeout`)."
}

// formatCount writes a count with thousands separators: 158,296.
func formatCount(v float64) string {
	n := int64(math.Round(v))
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatPct writes a 0..1 ratio as a percentage: "99.8 %".
func formatPct(r float64) string {
	p := r * 100
	if p >= 99.95 && p < 100 {
		return "99.9 %"
	}
	if p >= 10 || p == 0 {
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.2g %%", p)
}
