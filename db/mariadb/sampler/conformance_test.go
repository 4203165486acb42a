package mariadb

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
)

// TestConformance runs every sampler of a Set for a few ticks with some
// of everything going on (writes, a cached read, an open transaction, a
// lock wait): each returns without error, names are unique and known,
// every value is finite and one of mariadbmetric.Keys under its source
// (sampler/conformance_test.go holds those keys to README.md and to the
// doc comments), and every detail marshals to JSON.
func TestConformance(t *testing.T) {
	set := newSet(t)
	work := openSession(t)
	exec(t, work, "CREATE TABLE cf_test (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO cf_test (v) VALUES (0), (0)")
	t.Cleanup(func() { exec(t, work, "DROP TABLE cf_test") })
	holder := openSession(t)
	exec(t, holder, "BEGIN", "UPDATE cf_test SET v = 1 WHERE id = 1")
	blocked := openSession(t)
	done := background(blocked, "UPDATE cf_test SET v = 2 WHERE id = 1")
	t.Cleanup(func() {
		exec(t, holder, "ROLLBACK")
		<-done
	})

	placeholder := regexp.MustCompile(`<[^>]+>`)
	type pattern struct {
		source string
		re     *regexp.Regexp
	}
	var keys []pattern
	for _, k := range mariadbmetric.Keys {
		keys = append(keys, pattern{k.Source, regexp.MustCompile("^" + placeholder.ReplaceAllString(regexp.QuoteMeta(k.Key), ".+") + "$")})
	}
	names := map[string]bool{}
	for _, smp := range set.Samplers() {
		if names[smp.Name()] || !slices.Contains(mariadbmetric.Sources, smp.Name()) {
			t.Errorf("sampler %q: a second one, or not in mariadbmetric.Sources", smp.Name())
		}
		names[smp.Name()] = true
	}
	for tick := range 3 {
		exec(t, work, "INSERT INTO cf_test (v) SELECT v FROM cf_test WHERE id = 2", "SELECT COUNT(*) FROM cf_test")
		for _, smp := range set.Samplers() {
			values, detail, err := smp.Sample(t.Context())
			if err != nil {
				t.Errorf("tick %d: sampler %s: %v", tick, smp.Name(), err)
				continue
			}
			if _, err := json.Marshal(detail); err != nil {
				t.Errorf("tick %d: sampler %s: detail %T does not marshal: %v", tick, smp.Name(), detail, err)
			}
			for key, v := range values {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("tick %d: %s %q = %v", tick, smp.Name(), key, v)
				}
				if !slices.ContainsFunc(keys, func(p pattern) bool { return p.source == smp.Name() && p.re.MatchString(key) }) {
					t.Errorf("sampler %s emits %q, which mariadbmetric.Keys does not list", smp.Name(), key)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}
