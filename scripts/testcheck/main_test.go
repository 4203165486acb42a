package main

import (
	"io"
	"strings"
	"testing"
)

// ev writes one go test -json line.
func ev(action, pkg, test string) string {
	return `{"Action":"` + action + `","Package":"` + pkg + `","Test":"` + test + `"}` + "\n"
}

func TestProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string
		drills []string
		want   []string // substrings, one per problem, in order
	}{
		{"a package that passed tests", ev("run", "a", "TestX") + ev("pass", "a", "TestX") + ev("pass", "a", ""), nil, nil},
		{"no test files", ev("skip", "a", ""), nil, nil},
		{"every test skipped", ev("skip", "a", "TestX") + ev("skip", "a", "TestY") + ev("pass", "a", ""), nil,
			[]string{"a: every test skipped (2)"}},
		{"a skipped test beside a passing one", ev("skip", "a", "TestX") + ev("pass", "a", "TestY") + ev("pass", "a", ""), nil, nil},
		{"no tests to run", ev("pass", "a", ""), nil, []string{"a: no test ran"}},
		{"failed", ev("fail", "a", "TestX") + ev("fail", "a", ""), nil, []string{"a: failed"}},
		{"cut short", ev("run", "a", "TestX"), nil, []string{"a: did not finish"}},
		{"nothing at all", "go vet ./...\n", nil, []string{"no test package ran"}},
		// Drills: each folder's subtest must pass; the parent passing is
		// not enough (a subtest may skip).
		{"every drill ran", ev("pass", "cli", "TestDrillQuick/aof") + ev("pass", "cli", "TestDrillQuick/stock") + ev("pass", "cli", "TestDrillQuick") + ev("pass", "cli", ""),
			[]string{"aof", "stock"}, nil},
		{"a drill missing", ev("pass", "cli", "TestDrillQuick/aof") + ev("skip", "cli", "TestDrillQuick/stock") + ev("pass", "cli", "TestDrillQuick") + ev("pass", "cli", ""),
			[]string{"aof", "stock", "journal"}, []string{"drill stock: ", "drill journal: "}},
	}
	for _, tt := range tests {
		s, err := read(strings.NewReader(tt.stream), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		got := s.problems(tt.drills)
		if len(got) != len(tt.want) {
			t.Errorf("%s: problems %q, want %d", tt.name, got, len(tt.want))
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tt.want[i]) {
				t.Errorf("%s: problem %q, want one with %q", tt.name, got[i], tt.want[i])
			}
		}
	}
}

// The tests' output and the lines that are not events come through as
// go test prints them.
func TestReadCopiesTheOutput(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	in := "go vet ./...\n" + `{"Action":"output","Package":"a","Test":"TestX","Output":"=== RUN   TestX\n"}` + "\n" + `{"Action":"output","Package":"a","Output":"ok  \ta\t0.1s\n"}` + "\n"
	if _, err := read(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if want := "go vet ./...\n=== RUN   TestX\nok  \ta\t0.1s\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// FuzzRead: any input is read without panicking, and its problems listed.
func FuzzRead(f *testing.F) {
	f.Add(ev("pass", "a", "TestX") + ev("pass", "a", ""))
	f.Add(`{"Action":"output"}` + "\n{\n" + `{"Action":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := read(strings.NewReader(in), io.Discard)
		if err != nil {
			return
		}
		_ = s.problems([]string{"x"})
	})
}
