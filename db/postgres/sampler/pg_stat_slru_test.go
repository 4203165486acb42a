package postgres

import (
	"testing"
)

// TestSLRUHitRate commits rows and reads them back in new sessions: the
// readers look up the writers' commit status in the Xact cache, so
// Xact.hit_rate appears; every cache's rates appear from the second tick.
func TestSLRUHitRate(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, slruName)
	setup := openSession(t, server.ConnString(), "slru-setup")
	exec(t, setup, "DROP TABLE IF EXISTS slru_test; CREATE TABLE slru_test (id int)")

	values, _ := sample(t, smp)
	for key := range values {
		t.Errorf("first tick: %s = %v, want no values before there is an interval", key, values[key])
	}
	values, _ = sampleUntil(t, smp, func(values map[string]float64, _ any) bool {
		// Each round's statistics reach the view when its sessions end.
		writer := openSession(t, server.ConnString(), "slru-writer")
		exec(t, writer, "INSERT INTO slru_test SELECT generate_series(1, 100)")
		writer.Close(t.Context())
		reader := openSession(t, server.ConnString(), "slru-reader")
		exec(t, reader, "SELECT count(*) FROM slru_test")
		reader.Close(t.Context())
		_, ok := values["Xact.hit_rate"]
		return ok
	})
	if rate := values["Xact.hit_rate"]; rate < 0 || rate > 1 {
		t.Errorf("Xact.hit_rate = %v, want 0..1", rate)
	}
	for _, name := range []string{"MultiXactMember", "MultiXactOffset", "Subtrans", "Xact", "CommitTs", "Notify", "Serial", "other"} {
		for _, series := range slruSeries {
			if _, ok := values[name+"."+series.key]; !ok {
				t.Errorf("%s.%s missing", name, series.key)
			}
		}
	}
}
