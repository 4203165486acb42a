package timeline

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeRun(t *testing.T, dir string, n int) *Writer {
	t.Helper()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(dir, ManifestFile, &Manifest{Format: Format, Name: "t", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		h := NewHistogram()
		h.Record(int64(1000 + i))
		w.Add(Record{Interval: &Interval{Workload: "w", Start: float64(i), End: float64(i + 1), Count: int64(i), Latency: h, LatencyPct: h.Percentiles()}})
		w.Add(Record{Sample: &Sample{Source: "s", T: float64(i + 1), Values: map[string]float64{"k": float64(i)}}})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	w.Add(Record{Mark: &Mark{T: 1.5, Event: "e", Kind: "sql", Phase: PhaseStart}})
	return w
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := writeRun(t, dir, 50)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 50 || len(r.Samples) != 50 || len(r.Marks) != 1 {
		t.Fatalf("read %d intervals, %d samples, %d marks", len(r.Intervals), len(r.Samples), len(r.Marks))
	}
	iv := r.Intervals[49]
	if iv.Count != 49 || iv.Latency.Count() != 1 || iv.Latency.Max() < 1048 || iv.Latency.Max() > 1050 {
		t.Errorf("interval 49 read back as %+v (max %d)", iv, iv.Latency.Max())
	}
	if pts := r.Series("s", "k"); len(pts) != 50 || pts[10].V != 10 || pts[10].T != 11 {
		t.Errorf("series %v", pts[:3])
	}
}

// A run killed mid-write leaves a gzip stream without its trailer, or cut
// inside a block: what was flushed is still read.
func TestKilledRunIsReadUpToTheLastFlush(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := writeRun(t, dir, 20)
	// No Close: the process "died". Cut the last few bytes as well.
	w.f.Sync()
	path := filepath.Join(dir, TimelineFile)
	info, _ := os.Stat(path)
	if err := os.Truncate(path, info.Size()-3); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) < 19 {
		t.Errorf("read %d intervals of the 20 flushed", len(r.Intervals))
	}
}

func TestPlainTimelineIsAccepted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := writeRun(t, dir, 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(dir, TimelineFile))
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.Create(filepath.Join(dir, PlainTimelineFile))
	if _, err := out.ReadFrom(gz); err != nil {
		t.Fatal(err)
	}
	out.Close()
	f.Close()
	os.Remove(filepath.Join(dir, TimelineFile))
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 3 {
		t.Errorf("read %d intervals from the plain timeline", len(r.Intervals))
	}
}

func TestNotARunDirectory(t *testing.T) {
	t.Parallel()
	if _, err := Open(t.TempDir()); err == nil {
		t.Fatal("Open of an empty directory succeeded")
	}
}
