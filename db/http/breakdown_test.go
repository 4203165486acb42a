package http

import (
	"slices"
	"testing"

	httptarget "github.com/firedrill/firedrill/db/http/client"
	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/script"
)

// Each workload's endpoints are rows of their own, counted from that
// workload's counters alone; an endpoint no request reached has no row.
// (Percentiles are the histogram buckets' upper bounds, within 3.2 %.)
func TestBreakdownPerWorkload(t *testing.T) {
	t.Parallel()
	var ws []workloadStats
	for _, name := range []string{"browse", "health"} {
		tgt, err := httptarget.NewTarget(httptarget.Config{URL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := script.ParseDialect("s", []byte("GET /journals\nPOST /never\n"), script.NewSymbols(), httpdialect.Script())
		if err != nil {
			t.Fatal(err)
		}
		tgt.Prepare([]*script.Script{s})
		ws = append(ws, workloadStats{name: name, stats: tgt.Stats()})
	}
	browse := ws[0].stats.Endpoints()[0]
	for i := range 99 {
		browse.Record(200, int64(1000+i))
	}
	browse.Record(404, 250_000)
	browse.Errors.Add(2)
	ws[1].stats.Endpoints()[0].Record(200, 3000)
	b := breakdown(ws)
	if len(b.Rows) != 2 {
		t.Fatalf("rows %+v: want browse's and health's GET /journals", b.Rows)
	}
	want := map[string][]string{
		"browse": {"102", "99", "0", "1", "0", "2", "1.05 ms", "1.12 ms", "250 ms"},
		"health": {"1", "1", "0", "0", "0", "0", "3.01 ms", "3.01 ms", "3.00 ms"},
	}
	for _, r := range b.Rows {
		if r.Name != "GET /journals" || !slices.Equal(r.Cells, want[r.Workload]) {
			t.Errorf("%s %s: %v, want %v (columns %v)", r.Workload, r.Name, r.Cells, want[r.Workload], b.Columns)
		}
	}
}
