package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// junitDoc is JUnit XML as CI tools read it (the Ant/Surefire shape), to
// decode what --junit writes and check it against that shape.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    string   `xml:"tests,attr"`
	Failures string   `xml:"failures,attr"`
	Errors   string   `xml:"errors,attr"`
	Skipped  string   `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      string `xml:"tests,attr"`
		Failures   string `xml:"failures,attr"`
		Errors     string `xml:"errors,attr"`
		Skipped    string `xml:"skipped,attr"`
		Time       string `xml:"time,attr"`
		Timestamp  string `xml:"timestamp,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit decodes a --junit file and checks it has the shape CI tools
// require: the counts as attributes that add up, times as seconds, an
// xs:dateTime timestamp, every test case named and classed, every
// failure with a message.
func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML declaration:\n%s", b)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s is not XML of <testsuites>: %v\n%s", path, err, b)
	}
	num := func(what, s string) int {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Errorf("%s = %q, want a count", what, s)
		}
		return n
	}
	secs := func(what, s string) {
		if v, err := strconv.ParseFloat(s, 64); err != nil || v < 0 {
			t.Errorf("%s = %q, want seconds", what, s)
		}
	}
	tests, failures, skipped := 0, 0, 0
	for _, s := range doc.Suites {
		if s.Name == "" {
			t.Error("a testsuite without a name")
		}
		if _, err := time.Parse("2006-01-02T15:04:05", s.Timestamp); err != nil {
			t.Errorf("suite %s: timestamp %q is not an xs:dateTime without zone", s.Name, s.Timestamp)
		}
		secs("suite time", s.Time)
		f, sk := 0, 0
		for _, c := range s.Cases {
			if c.Name == "" || c.Classname == "" {
				t.Errorf("suite %s: a testcase without name or classname: %+v", s.Name, c)
			}
			secs("testcase time", c.Time)
			if c.Failure != nil {
				f++
				if c.Failure.Message == "" {
					t.Errorf("testcase %s: failure without message", c.Name)
				}
			}
			if c.Skipped != nil {
				sk++
			}
		}
		if num("tests", s.Tests) != len(s.Cases) || num("failures", s.Failures) != f || num("skipped", s.Skipped) != sk || num("errors", s.Errors) != 0 {
			t.Errorf("suite %s: attributes tests=%s failures=%s skipped=%s errors=%s, counted %d, %d, %d",
				s.Name, s.Tests, s.Failures, s.Skipped, s.Errors, len(s.Cases), f, sk)
		}
		tests, failures, skipped = tests+len(s.Cases), failures+f, skipped+sk
	}
	if num("tests", doc.Tests) != tests || num("failures", doc.Failures) != failures || num("skipped", doc.Skipped) != skipped {
		t.Errorf("testsuites: tests=%s failures=%s skipped=%s, counted %d, %d, %d", doc.Tests, doc.Failures, doc.Skipped, tests, failures, skipped)
	}
	secs("testsuites time", doc.Time)
	return doc
}

// A real run on the embedded server with the command line a CI job would
// use: --set sizes the workload and adds thresholds, ${VAR:-default} fills
// the file, --json - puts JSON (only JSON) on stdout and the summary on
// stderr, --junit writes one test case per threshold with the failed
// one's message, and run.json keeps the command as typed with the
// password in a --set masked.
func TestRunForCI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	dir := t.TempDir()
	sc := filepath.Join(dir, "ci.yaml")
	if err := os.WriteFile(sc, []byte(`name: ci
duration: ${CI_DURATION:-4s}
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "junit.xml")
	args := []string{"run", sc, "--out", filepath.Join(dir, "runs"), "--progress", "30s",
		"--set", "workloads.w.clients=2",
		"--set", "thresholds.w.tps=>= 1",
		"--set", "thresholds.w.p99=< 1us", // fails
		"--set", "description=copied from postgres://app:s3cret-pw@db.example/x",
		"--json", "-", "--junit", junit}
	env, stdout, stderr := clikit.MemoryEnv("")
	code := Main(env, kinds.Registry(), args)
	if code != clikit.ExitThresholds {
		t.Fatalf("exit %d, want %d (one threshold fails)\nstdout:\n%s\nstderr:\n%s", code, clikit.ExitThresholds, stdout, tail(stderr.String(), 30))
	}
	var result struct {
		Passed     bool `json:"passed"`
		RunDir     string
		Thresholds []struct {
			Metric string `json:"metric"`
			Pass   bool   `json:"pass"`
		} `json:"thresholds"`
		Workloads []struct {
			Name string `json:"name"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &result); err != nil {
		t.Fatalf("stdout is not only JSON: %v\n%s", err, stdout)
	}
	if result.Passed || len(result.Thresholds) != 2 {
		t.Errorf("JSON: passed %v, thresholds %+v", result.Passed, result.Thresholds)
	}
	for _, want := range []string{"thresholds:", "FAIL w.p99 < 1us", "ok   w.tps >= 1", "run directory:"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, tail(stderr.String(), 20))
		}
	}

	doc := readJUnit(t, junit)
	if len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 2 {
		t.Fatalf("junit: %+v", doc)
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Classname != "firedrill.ci.thresholds" {
			t.Errorf("testcase %s: classname %q", c.Name, c.Classname)
		}
		switch c.Name {
		case "w.tps >= 1":
			if c.Failure != nil {
				t.Errorf("w.tps failed: %+v", c.Failure)
			}
		case "w.p99 < 1us":
			if c.Failure == nil || !strings.Contains(c.Failure.Message, "w.p99 < 1us: ") || !strings.Contains(c.Failure.Message, "FAILED") {
				t.Errorf("w.p99: failure %+v", c.Failure)
			}
		default:
			t.Errorf("unexpected testcase %q", c.Name)
		}
	}

	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*-ci"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v", runs)
	}
	run, err := timeline.Open(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary == nil || run.Summary.Duration < 3 || run.Summary.Duration > 6 {
		t.Errorf("the run did not last ${CI_DURATION:-4s}: %+v", run.Summary)
	}
	cmd := run.Manifest.Command
	if len(cmd) != len(args)+1 || cmd[0] != "firedrill" || !slices.Equal(cmd[1:4], args[:3]) || !slices.Contains(cmd, "thresholds.w.p99=< 1us") {
		t.Errorf("run.json command %q, want firedrill and the arguments as typed %q", cmd, args)
	}
	b, _ := os.ReadFile(filepath.Join(runs[0], timeline.ManifestFile))
	if strings.Contains(string(b), "s3cret-pw") {
		t.Errorf("run.json holds the password given in --set:\n%s", b)
	}
	// The scenario kept is the file as written: a variable's value may be
	// a secret.
	if kept, _ := os.ReadFile(filepath.Join(runs[0], timeline.ScenarioFile)); !strings.Contains(string(kept), "${CI_DURATION:-4s}") {
		t.Errorf("the run's scenario.yaml is not the file as written:\n%s", kept)
	}
}

// drill --junit: one suite per variant, one test case per expectation,
// judged as the terminal's PASS/FAIL/SKIP lines say.
func TestDrillJUnit(t *testing.T) {
	t.Parallel()
	dir := recordedStockDrill(t)
	junit := filepath.Join(t.TempDir(), "drill.xml")
	env, out, errb := clikit.MemoryEnv("")
	code := Main(env, kinds.Registry(), []string{"drill", "stock", "--check", dir, "--junit", junit})
	if code != ExitExpectationFailed && code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errb)
	}
	text := out.String()
	var pass, fail, skip int
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "  PASS  "):
			pass++
		case strings.HasPrefix(line, "  FAIL  "):
			fail++
		case strings.HasPrefix(line, "  SKIP  "):
			skip++
		}
	}
	doc := readJUnit(t, junit)
	if len(doc.Suites) != 2 || doc.Suites[0].Name != "drill stock broken" || doc.Suites[1].Name != "drill stock fixed" {
		t.Fatalf("suites: %+v", doc.Suites)
	}
	tests, _ := strconv.Atoi(doc.Tests)
	failures, _ := strconv.Atoi(doc.Failures)
	if tests != pass+fail+skip || failures != fail || pass == 0 {
		t.Errorf("junit tests=%s failures=%s; the terminal says %d PASS, %d FAIL, %d SKIP:\n%s", doc.Tests, doc.Failures, pass, fail, skip, text)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil && !strings.Contains(text, c.Name) {
				t.Errorf("failed testcase %q is not an expectation the terminal shows", c.Name)
			}
		}
	}
}

// compare --json -: the JSON alone on stdout, the comparison on stderr.
func TestCompareJSONToStdout(t *testing.T) {
	t.Parallel()
	env, out, errb := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"compare", compareRunBase, compareRunSlow, "--json", "-", "--warmup", "5s"}); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc["format"] != "firedrill.compare/v1" {
		t.Errorf("stdout is not the comparison's JSON alone (%v):\n%s", err, firstLines(out.String(), 5))
	}
	if !strings.Contains(errb.String(), "A: ") {
		t.Errorf("the comparison is not on stderr:\n%s", firstLines(errb.String(), 5))
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error("a file named - was written")
	}
}
