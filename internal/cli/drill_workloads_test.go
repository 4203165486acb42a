package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// openchat's variants run cheap counts beside its joins: the side-by-side
// table gives each workload its own rows, the joins (which the drill's
// expectations name) first, and never their sum, under which the fix
// (faster joins, fewer counts) read as slower.
func TestDrillTableRowsPerWorkload(t *testing.T) {
	t.Parallel()
	d, err := drills.Get("openchat")
	if err != nil {
		t.Fatal(err)
	}
	var runs []variantRun
	for variant, rec := range map[string]string{"broken": "openchat-broken", "fixed": "openchat-fixed"} {
		v, err := d.Variant(variant)
		if err != nil {
			t.Fatal(err)
		}
		run, err := timeline.Open(filepath.Join("..", "..", "diagnose", "testdata", rec))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, variantRun{variant: v, run: run})
	}
	if runs[0].variant.Name != "broken" {
		runs[0], runs[1] = runs[1], runs[0]
	}
	var out bytes.Buffer
	printComparison(&out, d, runs, true, drillMeasures(kinds.Registry()))
	text := out.String()
	t.Log(text)
	if regexp.MustCompile(`(?m)^tps, whole run  `).MatchString(text) {
		t.Error("the table sums the workloads' transactions into one tps row")
	}
	join, count := strings.Index(text, "tps, whole run: join"), strings.Index(text, "tps, whole run: count")
	if join < 0 || count < 0 || join > count {
		t.Errorf("want a tps row for join, then one for count (join at %d, count at %d)", join, count)
	}
	m := regexp.MustCompile(`tps, whole run: join\s+([\d,.]+)\s+([\d,.]+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no join tps values")
	}
	num := func(s string) float64 {
		var v float64
		for _, c := range strings.ReplaceAll(s, ",", "") {
			if c == '.' {
				break
			}
			v = v*10 + float64(c-'0')
		}
		return v
	}
	if num(m[2]) <= num(m[1]) {
		t.Errorf("join tps broken %s, fixed %s: the fix's gain does not show", m[1], m[2])
	}
}
