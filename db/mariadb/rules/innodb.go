package mariadbrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sqlcheck"
	"regexp"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// What the MariaDB rules share: reading per-tick sessions of a source
// whose keys are left out when zero, the workloads' isolation level, and
// the shape of the statements they blame.

// meanPerSample is a key's mean over the samples of source taken in
// [from, to), counting the samples that left the key out (zero) too;
// peak is its largest value and when.
func meanPerSample(run *timeline.Run, source string, from, to float64, keys ...string) (mean float64, peak timeline.Point, samples int) {
	sum := 0.0
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != source || s.Error != "" || s.T < from || s.T >= to {
			continue
		}
		samples++
		v := 0.0
		for _, k := range keys {
			v += s.Values[k]
		}
		sum += v
		if v > peak.V {
			peak = timeline.Point{T: s.T, V: v}
		}
	}
	if samples == 0 {
		return 0, peak, 0
	}
	return sum / float64(samples), peak, samples
}

// isolationOf is a workload's transaction isolation as its session
// settings give it, else the server's, in MariaDB's spelling
// ("REPEATABLE-READ").
func isolationOf(run *timeline.Run, w timeline.WorkloadInfo) string {
	for _, name := range []string{"tx_isolation", "transaction_isolation"} {
		if v := w.Settings[name]; v != "" {
			return strings.ToUpper(strings.ReplaceAll(strings.Trim(v, `'"`), " ", "-"))
		}
	}
	for _, name := range []string{"tx_isolation", "transaction_isolation"} {
		if v := run.Manifest.Settings[name]; v != "" {
			return strings.ToUpper(strings.ReplaceAll(v, " ", "-"))
		}
	}
	return "REPEATABLE-READ" // InnoDB's default
}

// isolations lists the isolation levels of the run's workloads, each once.
func isolations(run *timeline.Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range run.Manifest.Workloads {
		iso := isolationOf(run, w)
		if !seen[iso] {
			seen[iso] = true
			out = append(out, iso)
		}
	}
	sort.Strings(out)
	return out
}

// bulkInsert matches the statements InnoDB counts as bulk inserts: the
// number of rows is not known when the statement starts.
var bulkInsert = regexp.MustCompile(`(?is)^\s*(?:/\*.*?\*/\s*)*(?:(?:INSERT|REPLACE)\b.*\bSELECT\b|LOAD\s+DATA\b)`)

// notExistsInsert matches INSERT … SELECT … WHERE NOT EXISTS (…): a
// conditional insert whose check is a locking read under REPEATABLE READ.
var notExistsInsert = regexp.MustCompile(`(?is)^\s*(?:/\*.*?\*/\s*)*INSERT\b.*\bSELECT\b.*\bNOT\s+EXISTS\b`)

// statementCount counts normalised statements, for "the statement most
// seen".
type statementCount map[string]int

func (c statementCount) add(q string) {
	if q = diagnose.OneLine(q, 200); q != "" {
		c[sqlcheck.NormalizeLiterals(q)]++
	}
}

func (c statementCount) top() (string, int) {
	best, n := "", 0
	for q, k := range c {
		if k > n || (k == n && q < best) {
			best, n = q, k
		}
	}
	return best, n
}

// autoIncSetting is innodb_autoinc_lock_mode as the run recorded it.
func autoIncSetting(run *timeline.Run) string {
	return diagnose.Setting(run, "innodb_autoinc_lock_mode", "")
}
