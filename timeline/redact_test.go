package timeline

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run directory is private to its owner: 0700, files 0600, whatever
// the umask.
func TestRunDirectoryIsPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	w := writeRun(t, dir, 2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, ReportFile, []byte("<html>")); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := FileMode
		if d.IsDir() {
			want = DirMode
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A password that reached a run directory (one written before firedrill
// redacted, or by hand) is masked in the run read back, and a writer with
// a redactor never writes one.
func TestOpenAndWriterRedact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(Record{Mark: &Mark{Event: "old", Error: "connect postgres://u:old-secret-1@h/x: refused",
		Detail: map[string]any{"cause": "host=h password=old-secret-2"}}})
	w.Add(Record{Sample: &Sample{Source: "s", Error: "dial postgres://h/x?password=old-secret-3"}})
	w.RedactWith(func(s string) string { return strings.ReplaceAll(s, "new-secret", "xxxxx") })
	m := &Mark{Event: "new", Error: "new-secret", Outcome: "new-secret", Detail: map[string]any{"k": "new-secret", "n": 1.0}}
	w.Add(Record{Mark: m})
	if m.Error != "xxxxx" || m.Detail["k"] != "xxxxx" {
		t.Errorf("the mark given to Add is not redacted in place: %+v", m)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	man := &Manifest{Format: Format, Name: "t", Started: time.Now(), Error: "cannot parse `password = 'old secret 4'`",
		Command:  []string{"firedrill", "run", "--dsn", "postgres://u:old-secret-5@h/x"},
		Target:   Target{Address: "host=h password=old-secret-6"},
		Settings: map[string]string{"primary_conninfo": "user=rep password=old-secret-8 host=p"}}
	if err := WriteJSON(dir, ManifestFile, man); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(dir, SummaryFile, &Summary{Workloads: []WorkloadSummary{{Name: "w",
		Errors: []ErrorSummary{{Code: "08006", Message: "postgres://u:old-secret-7@h"}}}}}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(append(r.Manifest.Command, r.Manifest.Error, r.Manifest.Target.Address,
		r.Summary.Workloads[0].Errors[0].Message, r.Marks[0].Error, r.Marks[0].Detail["cause"].(string),
		r.Samples[0].Error, r.Manifest.Settings["primary_conninfo"]), "\n")
	for _, leak := range []string{"old-secret", "old secret", "new-secret"} {
		if strings.Contains(all, leak) {
			t.Errorf("%q survives reading back:\n%s", leak, all)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if !strings.Contains(string(b), "old-secret-5") {
		t.Error("the file itself was rewritten: Open must only read")
	}
}
