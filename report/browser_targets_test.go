//go:build unix

package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTMLInBrowserTargets: a run of two targets (PostgreSQL as db, Redis
// as cache) draws each target's kind's charts from its own samples under
// the target's name, on one time axis, lists both servers in the header
// and names each finding's target.
func TestHTMLInBrowserTargets(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	run, findings := twoTargets(t)
	dir := artifactDir(t)
	file := writeReport(t, run, findings, dir)
	dom := dumpDOM(t, chromium, file, 2*time.Minute)
	st := checkSelftest(t, dom, omittedSet(nil))
	ids := map[string]bool{}
	for _, c := range st.Charts {
		ids[c.ID] = true
	}
	for _, id := range []string{"db-throughput", "db-latency", "db-aas", "cache-throughput", "cache-redis-aof", "cache-redis-latency", "hostcpu"} {
		if !ids[id] {
			t.Errorf("no chart %s; charts: %s", id, chartStates(st))
		}
	}
	for _, id := range []string{"cache-aas", "db-redis-aof", "throughput", "aas"} {
		if ids[id] {
			t.Errorf("chart %s drawn: a target's charts are its own kind's, under its name", id)
		}
	}
	for _, want := range []string{
		`<strong>db</strong> PostgreSQL 15.18 at`,
		`<strong>cache</strong> Redis 7.0.15 at`,
		`id="group-db">db: PostgreSQL 15.18</h2>`,
		`id="group-cache">cache: Redis 7.0.15</h2>`,
		`id="group-host">`,
		`· target <strong>cache</strong>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The groups come in the scenario's order, the host's last.
	if a, b, c := strings.Index(dom, `id="group-db"`), strings.Index(dom, `id="group-cache"`), strings.Index(dom, `id="group-host"`); !(a < b && b < c) {
		t.Errorf("groups out of order: db %d, cache %d, host %d", a, b, c)
	}
	// The DOM as Chromium writes it escapes only &, < and > in text.
	text := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for _, f := range findings {
		if !strings.Contains(dom, text.Replace(f.Target+": "+f.Headline)) {
			t.Errorf("page lacks the finding %q under its target %s", f.Headline, f.Target)
		}
	}
	t.Logf("rendered in %d ms: %s; screenshot %s", st.MS, chartStates(st),
		screenshot(t, chromium, file, filepath.Join(dir, "full-page.png"), 1400, 6000))
}
