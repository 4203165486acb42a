package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// grantPassword is the admin's password in the DSNs the grant tests give:
// no output may show it.
const grantPassword = "Adm1n-pw-n0t-in-output"

// Every kind that confines by privileges prints, for firedrill grant,
// statements that make the account with PASSWORD for its password, and
// never the --dsn's password; a kind that does not says so.
func TestGrantEveryKind(t *testing.T) {
	t.Parallel()
	granters := 0
	for _, be := range kinds.Registry().Backends() {
		schemed, ok := be.(backend.Schemed)
		if !ok {
			continue
		}
		// A database path every kind's URL takes (Redis's is a number).
		dsn := schemed.Schemes()[0] + "://admin:" + grantPassword + "@127.0.0.1:1/0"
		env, stdout, stderr := clikit.MemoryEnv("")
		code := Main(env, kinds.Registry(), []string{"grant", "--dsn", dsn, "--schema", "drills"})
		out := stdout.String() + stderr.String()
		if strings.Contains(out, grantPassword) {
			t.Errorf("%s: the --dsn's password was printed:\n%s", be.Kind(), out)
		}
		g, ok := be.(backend.Granter)
		if !ok {
			if code != clikit.ExitUsage || !strings.Contains(stderr.String(), "makes no confined account on a "+be.Kind()+" server") {
				t.Errorf("%s has no Granter: exit %d, stderr %q", be.Kind(), code, stderr)
			}
			continue
		}
		granters++
		text, err := g.Grant(dsn, "drills")
		if err != nil {
			t.Errorf("%s: Grant: %v", be.Kind(), err)
			continue
		}
		// The text itself, not only the masked output, keeps the
		// password out: it may be saved and passed around.
		if strings.TrimSpace(text) == "" || !strings.Contains(text, "PASSWORD") || strings.Contains(text, grantPassword) {
			t.Errorf("%s: Grant text lacks PASSWORD, or holds the --dsn's password:\n%s", be.Kind(), text)
		}
		if code != 0 || !strings.Contains(stdout.String(), strings.TrimSpace(text)) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the Grant text", be.Kind(), code, stdout, stderr)
		}
	}
	t.Logf("%d kinds confine by privileges", granters)
}

// grant without --dsn, or with a server of no known kind, is a usage
// error that says what to give.
func TestGrantRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"grant"}, "grant needs --dsn"},
		{[]string{"grant", "--dsn", "mongodb://admin:" + grantPassword + "@db/x"}, "no backend takes mongodb:// URLs"},
		{[]string{"grant", "--dsn", "postgres://db/x", "extra"}, "firedrill grant takes no arguments, got \"extra\""},
	} {
		env, stdout, stderr := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), tt.args); code != clikit.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
		if strings.Contains(stdout.String()+stderr.String(), grantPassword) {
			t.Errorf("%v: the password was printed", tt.args)
		}
	}
}

// fakeKind is a backend of the tests' own, with a Granter when grant is
// set, so that writeGrant is tested whichever real kinds have one.
type fakeKind struct {
	kind  string
	grant func(dsn, schema string) (string, error)
}

func (f fakeKind) Kind() string      { return f.kind }
func (f fakeKind) Schemes() []string { return []string{f.kind} }
func (f fakeKind) Open(context.Context, backend.Spec) (backend.Target, error) {
	return nil, errors.New("the grant tests open nothing")
}

type fakeGranter struct{ fakeKind }

func (f fakeGranter) Grant(dsn, schema string) (string, error) { return f.grant(dsn, schema) }

var _ backend.Granter = fakeGranter{}

// writeGrant prints the kind's text (with a final newline), passes
// --schema on, and names the kind that has none.
func TestWriteGrant(t *testing.T) {
	t.Parallel()
	var gotSchema string
	reg := backend.NewRegistry(
		fakeGranter{fakeKind{kind: "confined", grant: func(dsn, schema string) (string, error) {
			gotSchema = schema
			return "CREATE USER firedrill_runner PASSWORD 'PASSWORD';", nil
		}}},
		fakeGranter{fakeKind{kind: "failing", grant: func(string, string) (string, error) {
			return "", errors.New("no database in the URL")
		}}},
		fakeKind{kind: "plain"},
	)
	var buf bytes.Buffer
	if err := writeGrant(&buf, reg, "confined://admin@h/db", "drills"); err != nil || buf.String() != "CREATE USER firedrill_runner PASSWORD 'PASSWORD';\n" || gotSchema != "drills" {
		t.Errorf("confined: %q, %v, schema %q", buf.String(), err, gotSchema)
	}
	for _, tt := range []struct{ dsn, want string }{
		{"failing://admin@h", "grant: no database in the URL"},
		{"plain://admin@h/db", "grant: firedrill makes no confined account on a plain server"},
		{"other://h", "no backend takes other:// URLs"},
	} {
		buf.Reset()
		err := writeGrant(&buf, reg, tt.dsn, "firedrill")
		if err == nil || !strings.Contains(err.Error(), tt.want) || buf.Len() != 0 {
			t.Errorf("%s: %v, output %q; want %q", tt.dsn, err, buf.String(), tt.want)
		}
	}
}
