package scenario

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/secret"
)

// The copy of a scenario kept in a run directory has target.dsn's
// password masked and every other byte as written, whatever the YAML
// style of the value.
func TestRedactedSource(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain with a comment",
			"name: x # the run\ntarget:\n  dsn: postgres://app:s3cret@db/x # staging\nduration: 1s\n",
			"name: x # the run\ntarget:\n  dsn: \"postgres://app:xxxxx@db/x\" # staging\nduration: 1s\n"},
		{"double quoted with escapes",
			"target:\n  dsn: \"host=db password='a \\\"b' dbname=x\"\nduration: 1s\n",
			"target:\n  dsn: \"host=db password=xxxxx dbname=x\"\nduration: 1s\n"},
		{"single quoted",
			"target: \n  dsn: 'host=db password = ''a b'''\n",
			"target: \n  dsn: \"host=db password = xxxxx\"\n"},
		{"flow mapping",
			"target: {dsn: postgres://u:s3cret@db/x, settings: {}}\n",
			"target: {dsn: \"postgres://u:xxxxx@db/x\", settings: {}}\n"},
		{"block scalar: the value's lines are redacted as text",
			"target:\n  dsn: >-\n    host=db\n    password=s3cret\nduration: 1s\n",
			"target:\n  dsn: >-\n    host=db\n    password=xxxxx\nduration: 1s\n"},
		{"no password: untouched",
			"target:\n  dsn: 'postgres://app@db/x'   # kept as is\n",
			"target:\n  dsn: 'postgres://app@db/x'   # kept as is\n"},
		{"no target",
			"name: x\nsetup: {sql: [\"select 'password=1'\"]}\n",
			"name: x\nsetup: {sql: [\"select 'password=1'\"]}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Scenario{Source: []byte(tc.in)}
			got := string(s.RedactedSource(secret.Redact))
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, "a b") {
				t.Errorf("password survives:\n%s", got)
			}
		})
	}
}
