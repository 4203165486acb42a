package pgrules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

func TestMultixactCreationFires(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	fs := findingsOf(multixactCreation{}, run)
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Severity != diagnose.Warning {
		t.Errorf("severity %s, want warning", f.Severity)
	}
	pid := holdEventPID(t, run)
	// The rate, the growth of the mxid age, the cache's span, the holder
	// and the statements that make the MultiXacts.
	for _, s := range []string{"/s while", "mxid age", "16,384", "8 pages", fmt.Sprintf("pid %d", pid),
		"multixact.sql", "FOR UPDATE", "SAVEPOINT"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if f.Workload != "oltp" {
		t.Errorf("workload %q, want oltp", f.Workload)
	}
	if !strings.Contains(f.Remedy, fmt.Sprintf("pg_terminate_backend(%d)", pid)) || !strings.Contains(f.Remedy, "SAVEPOINT") {
		t.Errorf("remedy: %s", f.Remedy)
	}
	// It is the warning before the thrash: the count passed the span
	// before the cache's hit rate fell.
	thrash := findingsOf(multixactSLRUThrash{}, run)
	if len(thrash) != 1 {
		t.Fatalf("multixact-slru-thrash: %d findings", len(thrash))
	}
	passed := -1.0
	for _, e := range f.Evidence {
		if e.Series == "pg_database:mxid_age" && strings.Contains(e.Text, "past the") {
			passed = e.T
		}
	}
	if passed < 0 || passed >= thrash[0].Start {
		t.Errorf("the count passed the span at %.0f s, the thrash began at %.0f s", passed, thrash[0].Start)
	}
}

func TestMultixactCreationQuiet(t *testing.T) {
	t.Parallel()
	// multixact-timeout: the broken script, the hold ended by the server
	// after 5 s; mxfk: foreign-key checks make ~170 MultiXacts/s, fewer
	// than the cache holds over the whole 42 s hold; control and subtrans
	// make none; fklock makes a few with no hold. Every prefix of the
	// run too: a warning shown live must be one the final report keeps.
	for _, name := range []string{"multixact-timeout", "mxfk", "multixact-control", "subtrans", "fklock", "healthy"} {
		run := openRecording(t, name)
		for end := 1.0; end <= diagnose.RunEnd(run)+1; end++ {
			if fs := (multixactCreation{}).Check(upTo(run, end)); len(fs) != 0 {
				t.Errorf("%s up to %.0f s: %d findings, want none: %s", name, end, len(fs), fs[0].Headline)
				break
			}
		}
	}
}

// upTo is the run as recorded up to t seconds.
func upTo(run *timeline.Run, t float64) *timeline.Run {
	v := &timeline.Run{Dir: run.Dir, Manifest: run.Manifest}
	for _, s := range run.Samples {
		if s.T <= t {
			v.Samples = append(v.Samples, s)
		}
	}
	for _, m := range run.Marks {
		if m.T <= t {
			v.Marks = append(v.Marks, m)
		}
	}
	return v
}

func TestOffsetCacheSpan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		settings map[string]string
		pages    int
		mxids    float64
	}{
		// PostgreSQL 15: 8 pages compiled in, 2,048 offsets a page.
		{"15", map[string]string{"server_version_num": "150018", "block_size": "8192"}, 8, 16384},
		// 17 reads the setting (shown in kB, pages of block_size).
		{"17 set", map[string]string{"server_version_num": "170002", "block_size": "8192", "multixact_offset_buffers": "256kB"}, 32, 65536},
		// 17 without the setting recorded: its default, 16 pages.
		{"17 default", map[string]string{"server_version_num": "170002"}, 16, 32768},
		// A 16 kB build holds twice the offsets a page.
		{"16 kB blocks", map[string]string{"server_version_num": "160001", "block_size": "16384"}, 8, 32768},
	} {
		run := &timeline.Run{Manifest: timeline.Manifest{Settings: c.settings}}
		if got := offsetCacheSpan(run); got.Pages != c.pages || got.MXIDs != c.mxids {
			t.Errorf("%s: %d pages, %.0f mxids; want %d, %.0f", c.name, got.Pages, got.MXIDs, c.pages, c.mxids)
		}
	}
}

func TestMXGrowthOver(t *testing.T) {
	t.Parallel()
	pts := []timeline.Point{{T: 0, V: 100}, {T: 1, V: 5000}, {T: 2, V: 9000}, {T: 3, V: 200}, {T: 4, V: 12000}, {T: 5, V: 20000}}
	// The drop at 3 s is vacuum moving datminmxid: it counts nothing,
	// and the rises on either side add up.
	g, ok := mxGrowthOver(pts, 0, 5, 16384)
	if !ok || g.Count != 100+4900+4000+11800+8000-100 || g.PassedT != 4 {
		t.Errorf("got %+v", g)
	}
	if _, ok := mxGrowthOver(pts, 6, 9, 1); ok {
		t.Errorf("no points, yet ok")
	}
}
