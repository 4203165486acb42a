package timeline

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Small JSON files are indented for people; one larger than
// indentJSONLimit is written compact, and both read back the same.
func TestWriteJSONIndentsOnlySmallFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := map[string]int{"a": 1}
	large := make([]string, 0, 100_000)
	for len(large) < cap(large) {
		large = append(large, strings.Repeat("x", 50))
	}
	for _, tc := range []struct {
		name     string
		v        any
		indented bool
	}{{"small.json", small, true}, {"large.json", large, false}} {
		if err := WriteJSON(dir, tc.name, tc.v); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(b, []byte("\n  ")); got != tc.indented {
			t.Errorf("%s: indented = %v, want %v", tc.name, got, tc.indented)
		}
		want, _ := json.Marshal(tc.v)
		var back any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, _ := json.Marshal(back); !bytes.Equal(got, want) {
			t.Errorf("%s does not read back as written", tc.name)
		}
	}
}
