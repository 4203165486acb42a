package serverproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLogTailKeepsTheEnd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server.log")
	var lines []string
	for n := range 100 {
		lines = append(lines, "line "+strconv.Itoa(n))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tail := LogTail(path, 0)
	if !strings.Contains(tail, "line 99") || strings.Contains(tail, "line 10\n") {
		t.Errorf("tail is not the last lines:\n%s", tail)
	}
	// Only what was written since the offset (this start attempt) is shown.
	offset := int64(len(strings.Join(lines[:98], "\n")) + 1)
	if tail := LogTail(path, offset); strings.Contains(tail, "line 97") || !strings.Contains(tail, "line 98") {
		t.Errorf("tail from offset shows older lines:\n%s", tail)
	}
}
