package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"time"
)

// JUnit XML (--junit FILE) makes a run's thresholds and a drill's
// expectations test results that CI systems (Jenkins, GitLab, GitHub
// Actions' test reporters) show and count: one testcase per threshold or
// expectation, a failure with its message. The shape is the common one
// those tools read (Ant/Surefire's): <testsuites> of <testsuite>s with
// name, tests, failures, errors, skipped, time and timestamp, each of
// <testcase name classname time> with an optional <failure message type>
// or <skipped message>.

// JUnitSuite is one group of checks: a run's thresholds, or one drill
// variant's expectations.
type JUnitSuite struct {
	Name      string
	Timestamp time.Time
	Duration  time.Duration // how long the run behind the checks took
	// Properties describe the run (its directory, scenario, status), in order.
	Properties [][2]string
	Cases      []JUnitCase
}

// JUnitCase is one check.
type JUnitCase struct {
	Class string // the group it belongs to, dotted: "firedrill.oltp.thresholds"
	Name  string // the check as written: "oltp.p99 < 50ms"
	// Failure, when not empty, is why the check failed; Skipped, when not
	// empty, why it was not judged.
	Failure, Skipped string
	// Output is what was measured, for the test's standard output.
	Output string
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Timestamp  string           `xml:"timestamp,attr"`
	Hostname   string           `xml:"hostname,attr,omitempty"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes suites as one JUnit XML document.
func WriteJUnit(w io.Writer, suites []JUnitSuite) error {
	host, _ := os.Hostname()
	doc := junitSuites{Name: "firedrill"}
	var total time.Duration
	for _, s := range suites {
		js := junitSuite{
			Name: s.Name, Time: seconds(s.Duration), Hostname: host,
			Timestamp: s.Timestamp.UTC().Format("2006-01-02T15:04:05"), // the schema's xs:dateTime without a zone
		}
		if len(s.Properties) > 0 {
			js.Properties = &junitProperties{}
			for _, p := range s.Properties {
				js.Properties.Property = append(js.Properties.Property, junitProperty{Name: p[0], Value: p[1]})
			}
		}
		for _, c := range s.Cases {
			jc := junitCase{Name: c.Name, Classname: c.Class, Time: "0", SystemOut: c.Output}
			switch {
			case c.Failure != "":
				jc.Failure = &junitMessage{Message: c.Failure, Type: "failed", Text: c.Failure}
				js.Failures++
			case c.Skipped != "":
				jc.Skipped = &junitMessage{Message: c.Skipped}
				js.Skipped++
			}
			js.Tests++
			js.Cases = append(js.Cases, jc)
		}
		doc.Tests += js.Tests
		doc.Failures += js.Failures
		doc.Skipped += js.Skipped
		total += s.Duration
		doc.Suites = append(doc.Suites, js)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// ThresholdCases are a run's threshold results as JUnit test cases, in
// class firedrill.<scenario>.thresholds.
func ThresholdCases(scenarioName string, results []ThresholdResult) []JUnitCase {
	cases := make([]JUnitCase, 0, len(results))
	for _, r := range results {
		c := JUnitCase{Class: "firedrill." + scenarioName + ".thresholds", Name: r.Metric + " " + r.Condition, Output: r.String()}
		if !r.Pass {
			c.Failure = r.String()
		}
		cases = append(cases, c)
	}
	return cases
}
