package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// A password given to firedrill in any form — URL userinfo, ?password=,
// key/value with spaces and quotes, PGPASSWORD, a scenario's target.dsn —
// appears in no byte firedrill prints or writes, for a run that worked and
// for one that could not connect; the run directory is 0700 and its files
// (and --json) 0600. The embedded server trusts local connections, so the
// password is never checked: what matters is where its text goes.
func TestNoPasswordInAnyOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and runs firedrill against it")
	}
	inst, err := postgres.Start(context.Background(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	host, port, _ := net.SplitHostPort(inst.TCPAddr())
	closed := closedPort(t)
	user, db := inst.User(), inst.Database()
	urlWith := func(port, password string) string {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: net.JoinHostPort(host, port), Path: "/" + db, RawQuery: "sslmode=disable"}
		return u.String()
	}
	queryWith := func(port, password string) string {
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&password=%s&connect_timeout=5", user, net.JoinHostPort(host, port), db, url.QueryEscape(password))
	}
	keyValueWith := func(port, password string) string {
		return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable password = '%s'", host, port, user, db, strings.ReplaceAll(password, "'", `\'`))
	}
	plainWith := func(port, _ string) string {
		return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", host, port, user, db)
	}
	cases := []struct {
		name     string
		dsn      func(port, password string) string
		env      bool // the password in PGPASSWORD, not in the string
		scenario bool // the string in the scenario's target.dsn, not --dsn
		port     string
		wantCode int
	}{
		{"URL userinfo", urlWith, false, false, port, 0},
		{"URL query parameter", queryWith, false, false, port, 0},
		{"key/value with spaces and quotes", keyValueWith, false, false, port, 0},
		{"PGPASSWORD", plainWith, true, false, port, 0},
		{"scenario target.dsn", keyValueWith, false, true, port, 0},
		{"URL userinfo, refused", urlWith, false, false, closed, clikit.ExitUsage},
		{"key/value, refused", keyValueWith, false, false, closed, clikit.ExitUsage},
		{"scenario target.dsn URL, refused", urlWith, false, true, closed, clikit.ExitUsage},
		{"PGPASSWORD, refused", plainWith, true, false, closed, clikit.ExitUsage},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			password := fmt.Sprintf("Pw-%d-un1que s3cr'et@/?&=#%%", i)
			if tc.env {
				password = fmt.Sprintf("env-pw-%d-un1que", i)
				t.Setenv("PGPASSWORD", password)
			}
			dsn := tc.dsn(tc.port, password)
			dir := t.TempDir()
			target := ""
			if tc.scenario {
				target = fmt.Sprintf("target:\n  dsn: %q # the password is in here\n", dsn)
			}
			sc := filepath.Join(dir, "s.yaml")
			writeFile(t, sc, "name: secrets\n"+target+`duration: 2s
sample_interval: 500ms
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
events:
  - {name: note, kind: sql, at: 1s, sql: "SELECT 1"}
`)
			out, jsonPath := filepath.Join(dir, "runs"), filepath.Join(dir, "result.json")
			args := []string{"run", sc, "--out", out, "--json", jsonPath, "--progress", "500ms"}
			if !tc.scenario {
				args = append(args, "--dsn", dsn)
			}
			env, stdout, stderr := clikit.MemoryEnv("")
			code := Main(env, kinds.Registry(), args)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			leaks := secretForms(password)
			checkNoLeak(t, "stdout", stdout.Bytes(), leaks)
			checkNoLeak(t, "stderr", stderr.Bytes(), leaks)
			runs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(runs) != 1 {
				t.Fatalf("run directories: %v\nstderr:\n%s", runs, stderr)
			}
			checkPrivateTree(t, runs[0], leaks)
			if tc.wantCode == 0 {
				checkPrivateFile(t, jsonPath, leaks)
			}
			var m timeline.Manifest
			b, _ := os.ReadFile(filepath.Join(runs[0], timeline.ManifestFile))
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if tc.wantCode != 0 && m.Status != timeline.StatusFailed {
				t.Errorf("status %q, want failed (a connection was refused)", m.Status)
			}
			if !tc.scenario && !tc.env && !strings.Contains(strings.Join(m.Command, " "), secret.Mask) {
				t.Errorf("the command line is not recorded with its password masked: %q", m.Command)
			}
		})
	}
}

// firedrill pgbench's output and --json keep no password either, whether
// it connected or not.
func TestPgbenchNoPasswordInOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	inst, err := postgres.Start(context.Background(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	host, port, _ := net.SplitHostPort(inst.TCPAddr())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "q.sql"), "SELECT 1;\n")
	for _, tc := range []struct {
		name, port string
		wantCode   int
	}{{"connected", port, 0}, {"refused", closedPort(t), clikit.ExitUsage}} {
		t.Run(tc.name, func(t *testing.T) {
			password := "pgbench-pw " + tc.name + " 'q'"
			dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s password='%s'", host, tc.port, inst.User(), inst.Database(), strings.ReplaceAll(password, "'", `\'`))
			jsonPath := filepath.Join(dir, tc.name+".json")
			env, stdout, stderr := clikit.MemoryEnv("")
			code := Main(env, kinds.Registry(), []string{"pgbench", "--dsn", dsn, "-n", "-f", filepath.Join(dir, "q.sql"), "-t", "5", "--json", jsonPath})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			leaks := secretForms(password)
			checkNoLeak(t, "stdout", stdout.Bytes(), leaks)
			checkNoLeak(t, "stderr", stderr.Bytes(), leaks)
			if tc.wantCode == 0 {
				checkPrivateFile(t, jsonPath, leaks)
			}
		})
	}
}

// secretForms are the ways a password can be written: as is, encoded
// for a URL, and its distinctive head before the first character that
// some syntax escapes (YAML, conninfo quotes), in each of those forms.
func secretForms(password string) []string {
	head := password
	if i := strings.IndexAny(password, `'"\@/?&=#%`); i >= 6 {
		head = password[:i]
	}
	var forms []string
	for _, p := range []string{password, head} {
		forms = append(forms, p, url.QueryEscape(p), url.PathEscape(p))
	}
	return forms
}

func checkNoLeak(t *testing.T, what string, data []byte, leaks []string) {
	t.Helper()
	for _, l := range leaks {
		if i := bytes.Index(data, []byte(l)); i >= 0 {
			t.Errorf("%s holds the password %q: …%s…", what, l, data[max(0, i-80):min(len(data), i+len(l)+40)])
		}
	}
}

// checkPrivateTree reads every file under dir (gunzipping the timeline)
// for the password, and checks modes: directories 0700, files 0600.
func checkPrivateTree(t *testing.T, dir string, leaks []string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if info, err := d.Info(); err != nil || info.Mode().Perm() != timeline.DirMode {
				t.Errorf("%s: directory mode %v, want %v", path, info.Mode().Perm(), timeline.DirMode)
			}
			return nil
		}
		files++
		checkPrivateFile(t, path, leaks)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Errorf("only %d files in %s", files, dir)
	}
}

func checkPrivateFile(t *testing.T, path string, leaks []string) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != timeline.FileMode {
		t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), timeline.FileMode)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, path, data, leaks)
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		plain, err := io.ReadAll(gz)
		if err != nil && err != io.ErrUnexpectedEOF {
			t.Fatalf("%s: %v", path, err)
		}
		checkNoLeak(t, path+" (gunzipped)", plain, leaks)
	}
}

// closedPort is a local TCP port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
