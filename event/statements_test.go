package event

import (
	"strings"
	"testing"
)

func TestSummarizeSQL(t *testing.T) {
	t.Parallel()
	if got, want := SummarizeSQL("CREATE INDEX CONCURRENTLY i\n\t ON t (v)"), "CREATE INDEX CONCURRENTLY i ON t (v)"; got != want {
		t.Errorf("SummarizeSQL = %q, want %q", got, want)
	}
	long := SummarizeSQL(strings.Repeat("x ", 100))
	if n := len([]rune(long)); n != 60 || !strings.HasSuffix(long, "…") {
		t.Errorf("SummarizeSQL(long) = %q (%d characters)", long, n)
	}
}
