package timeline

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A streamed summary reads back exactly as the one encoded whole, with
// texts that look like the place its commands go.
func TestStreamSummary(t *testing.T) {
	cmd := func(line int, text string) CommandSummary {
		return CommandSummary{Line: line, Text: text, Count: int64(line), MeanUS: 1.5,
			LatencyPct: Percentiles{P50: 10, P90: 20, P95: 30, P99: 40, P999: 50, Max: 60}, Failures: 1}
	}
	sum := &Summary{Duration: 4, Workloads: []WorkloadSummary{
		{Name: "a", Count: 3, Extra: map[string]int64{"commands": 2}, Scripts: []ScriptSummary{
			{Name: "one", Commands: []CommandSummary{cmd(1, `SELECT '"commands":null';`), cmd(2, "<&>")}},
			{Name: "empty"},
		}, Errors: []ErrorSummary{{Code: "40P01", Message: `"commands":null`}}},
		{Name: "b", Scripts: []ScriptSummary{{Name: "two", Commands: []CommandSummary{cmd(3, `\set x 1`)}}}},
		{Name: "none"},
	}}
	var buf bytes.Buffer
	if err := streamSummary(&buf, sum); err != nil {
		t.Fatal(err)
	}
	whole, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var got, want Summary
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("streamed summary is not JSON: %v\n%s", err, buf.String())
	}
	if err := json.Unmarshal(whole, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("streamed summary reads back as\n%+v\nwant\n%+v", got, want)
	}
	// The caller's summary is left as it was.
	if len(sum.Workloads[0].Scripts[0].Commands) != 2 {
		t.Error("streamSummary changed the summary it wrote")
	}
}

// WriteSummary streams a long script's summary and Open reads it back.
func TestWriteSummaryLong(t *testing.T) {
	dir := t.TempDir()
	ss := ScriptSummary{Name: "long"}
	for i := range streamSummaryCommands + 1 {
		ss.Commands = append(ss.Commands, CommandSummary{Line: i + 1, Text: "SELECT 1;", Count: 1})
	}
	sum := &Summary{Duration: 1, Workloads: []WorkloadSummary{{Name: "w", Scripts: []ScriptSummary{ss}}}}
	if err := WriteSummary(dir, sum); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var got Summary
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if n := len(got.Workloads[0].Scripts[0].Commands); n != streamSummaryCommands+1 || got.Workloads[0].Scripts[0].Commands[n-1].Line != n {
		t.Errorf("read back %d commands", n)
	}
	if fi, err := os.Stat(filepath.Join(dir, SummaryFile)); err != nil || fi.Mode().Perm() != FileMode {
		t.Errorf("summary.json: %v, %v", fi, err)
	}
}
