package scenario

import (
	"errors"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "s.yaml", Pos: Pos{3, 5}, Msg: "bad"}, "s.yaml:3:5: bad"},
		{Error{File: "s.yaml", Pos: Pos{3, 5}, Msg: "bad", Hint: "fix it"}, "s.yaml:3:5: bad (fix it)"},
		{Error{File: "s.yaml", Pos: Pos{Line: 3}, Msg: "bad"}, "s.yaml:3: bad"}, // a YAML syntax error has no column
		{Error{File: "s.yaml", Msg: "bad"}, "s.yaml: bad"},
		{Error{Pos: Pos{3, 5}, Msg: "bad"}, "3:5: bad"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestErrorsOrder prints each file's problems together, by position.
func TestErrorsOrder(t *testing.T) {
	t.Parallel()
	errs := Errors{
		{File: "s.yaml", Pos: Pos{9, 1}, Msg: "c"},
		{File: "a.sql", Pos: Pos{2, 1}, Msg: "x"},
		{File: "s.yaml", Pos: Pos{2, 7}, Msg: "b"},
		{File: "s.yaml", Pos: Pos{2, 3}, Msg: "a"},
		{File: "a.sql", Pos: Pos{1, 1}, Msg: "w"},
	}
	want := "s.yaml:2:3: a\ns.yaml:2:7: b\ns.yaml:9:1: c\na.sql:1:1: w\na.sql:2:1: x"
	if got := errs.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	if errs[0].Msg != "c" {
		t.Error("Error() reordered the slice itself")
	}
	// finish puts the scenario file first even when a script's problem
	// came first, and drops exact repeats.
	errs = append(Errors{{File: "s.yaml", Pos: Pos{9, 1}, Msg: "c"}}, errs...)
	got := errs.finish("s.yaml")
	if len(got) != 5 || got[0].Msg != "a" || got[3].File != "a.sql" {
		t.Errorf("finish = %v", got)
	}
	var one *Error
	if !errors.As(error(errs), &one) || one.Msg != "c" {
		t.Errorf("errors.As found %v", one)
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	keys := []string{"name", "description", "target", "setup", "sample_interval", "duration", "workloads", "events", "thresholds"}
	tests := []struct{ word, want string }{
		{"worklods", "workloads"},              // a letter left out
		{"descripton", "description"},          //
		{"sampleInterval", "sample_interval"},  // camel case
		{"sample-interval", "sample_interval"}, // dashes
		{"Name", "name"},                       // case
		{"evnets", "events"},                   // transposed
		{"threshold", "thresholds"},            // singular
		{"nmae", "name"},                       // transposed in a short word
		{"colour", ""},                         // nothing close
		{"x", ""},                              //
		{"ramp", ""},                           // two edits are too many for four letters
		{"", ""},
	}
	for _, tt := range tests {
		if got := closest(tt.word, keys); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if got := closest("ramp", []string{"duration", "clients", "rate"}); got != "" {
		t.Errorf("closest(ramp) = %q, want none", got)
	}
}
