package report

import (
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// Between two embedded runs of one kind, the settings that say where
// each throwaway server lives (the kind's InstanceSettings: ports,
// sockets, data directories) are not "settings that differ"; a real
// change is, and between given servers the port is too.
func TestCompareSettingsLeavesOutInstanceSettings(t *testing.T) {
	t.Parallel()
	run := func(kind string, embedded bool, settings map[string]string) *timeline.Run {
		return &timeline.Run{Manifest: timeline.Manifest{Target: timeline.Target{Kind: kind, Embedded: embedded}, Settings: settings}}
	}
	for _, c := range []struct {
		name string
		a, b *timeline.Run
		want []string // names that differ
	}{
		{"embedded MariaDB",
			run("mariadb", true, map[string]string{"port": "36425", "socket": "/tmp/a/mysqld.sock", "datadir": "/tmp/a/data/", "innodb_autoinc_lock_mode": "1"}),
			run("mariadb", true, map[string]string{"port": "40001", "socket": "/tmp/b/mysqld.sock", "datadir": "/tmp/b/data/", "innodb_autoinc_lock_mode": "2"}),
			[]string{"innodb_autoinc_lock_mode"}},
		{"embedded PostgreSQL",
			run("postgres", true, map[string]string{"port": "5433", "data_directory": "/tmp/a", "work_mem": "4MB"}),
			run("postgres", true, map[string]string{"port": "5434", "data_directory": "/tmp/b", "work_mem": "4MB"}),
			nil},
		{"given servers: the port says they are different servers",
			run("postgres", false, map[string]string{"port": "5432"}),
			run("postgres", false, map[string]string{"port": "6432"}),
			[]string{"port"}},
	} {
		var got []string
		for _, s := range compareSettings(c.a, c.b, testKinds()) {
			got = append(got, s.Name)
		}
		if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
			t.Errorf("%s: settings that differ %v, want %v", c.name, got, c.want)
		}
	}
}
