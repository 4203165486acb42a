package postgres

import (
	"testing"
)

// TestWALAndCheckpoints writes and checkpoints between ticks and sees WAL
// bytes and a requested checkpoint.
func TestWALAndCheckpoints(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, walName)
	if note := set.Notes()[walName]; note != "" {
		t.Errorf("PostgreSQL %d: unexpected note %q", set.VersionNum(), note)
	}
	sample(t, smp)
	work := openSession(t, server.ConnString(), "wal-work")
	exec(t, work, "DROP TABLE IF EXISTS wal_test; CREATE TABLE wal_test AS SELECT generate_series(1, 10000) AS id")
	exec(t, work, "CHECKPOINT")

	sums := map[string]float64{}
	values, _ := sampleUntil(t, smp, func(values map[string]float64, _ any) bool {
		for _, key := range []string{"wal_bytes_per_s", "wal_records_per_s", "checkpoints_req", "buffers_checkpoint"} {
			sums[key] += values[key]
		}
		return sums["wal_bytes_per_s"] > 0 && sums["wal_records_per_s"] > 0 && sums["checkpoints_req"] >= 1 && sums["buffers_checkpoint"] > 0
	})
	keys := []string{"wal_fpi_per_s", "wal_buffers_full", "wal_write_per_s", "wal_sync_per_s", "wal_write_time_ms",
		"wal_sync_time_ms", "checkpoints_timed", "checkpoint_write_time_ms", "checkpoint_sync_time_ms",
		"buffers_clean", "maxwritten_clean"}
	if set.VersionNum() < 170000 {
		keys = append(keys, "buffers_backend", "buffers_backend_fsync")
	}
	for _, key := range keys {
		if _, ok := values[key]; !ok {
			t.Errorf("%s missing from %v", key, values)
		}
	}
}
