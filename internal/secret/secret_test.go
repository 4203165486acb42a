package secret

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedactSyntax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"URL userinfo", "postgres://app:s3cret@db:5432/stage", "postgres://app:xxxxx@db:5432/stage"},
		{"MySQL URL userinfo", "mysql://app:s3cret@127.0.0.1:3306/shop", "mysql://app:xxxxx@127.0.0.1:3306/shop"},
		{"MariaDB URL userinfo", "mariadb://app:s3cret@db/shop", "mariadb://app:xxxxx@db/shop"},
		{"postgresql scheme, any case", "PostgreSQL://app:s3cret@db/stage", "PostgreSQL://app:xxxxx@db/stage"},
		{"URL without password keeps the user", "postgres://app@db/stage", "postgres://app@db/stage"},
		{"URL with an encoded password", "postgres://app:p%40ss%2Fw@db/x", "postgres://app:xxxxx@db/x"},
		{"unencoded @ in the password: the last @ ends it", "postgres://app:p@ss@db/x", "postgres://app:xxxxx@db/x"},
		{"unencoded / in the password", "postgres://app:pa/ss@db/x", "postgres://app:xxxxx@db/x"},
		{"unencoded ? in the password", "postgres://app:pa?ss@db/x", "postgres://app:xxxxx@db/x"},
		{"@ in a query value is not userinfo", "postgres://db:5432/x?application_name=me@example.com", "postgres://db:5432/x?application_name=me@example.com"},
		{"password query parameter", "postgres://app@db/x?sslmode=disable&password=s3cret&connect_timeout=5", "postgres://app@db/x?sslmode=disable&password=xxxxx&connect_timeout=5"},
		{"sslpassword query parameter", "postgres://db/x?sslpassword=s3cret", "postgres://db/x?sslpassword=xxxxx"},
		{"percent-encoded key", "postgres://db/x?pass%77ord=s3cret&a=b", "postgres://db/x?pass%77ord=xxxxx&a=b"},
		{"both", "postgres://u:one@db/x?password=two", "postgres://u:xxxxx@db/x?password=xxxxx"},
		{"URL in an error ends at whitespace", `connect postgres://u:pw@h/x: refused`, `connect postgres://u:xxxxx@h/x: refused`},
		{"key/value", "host=db password=s3cret dbname=x", "host=db password=xxxxx dbname=x"},
		{"key/value with spaces", "host=db password = s3cret dbname=x", "host=db password = xxxxx dbname=x"},
		{"key/value quoted", `host=db password = 'a b\' c' dbname=x`, `host=db password = xxxxx dbname=x`},
		{"key/value escaped space", `password=a\ b host=db`, `password=xxxxx host=db`},
		{"key/value empty value takes the next word, as libpq", "password= host=db", "password= xxxxx"},
		{"sslpassword key/value", "sslpassword=s3cret host=db", "sslpassword=xxxxx host=db"},
		{"unterminated quote masks to the end", "password='abc def", "password=xxxxx"},
		{"environment style", `PGPASSWORD="a b" firedrill run`, `PGPASSWORD=xxxxx firedrill run`},
		{"prose is left alone", "password authentication failed for user \"app\"", "password authentication failed for user \"app\""},
		{"keys inside words are not keys", "nopasswordhere=1", "nopasswordhere=1"},
		{"IPv6 host", "postgres://u:pw@[::1]:5432/x", "postgres://u:xxxxx@[::1]:5432/x"},
		{"multi-host", "postgres://u:pw@h1:5432,h2:5433/x", "postgres://u:xxxxx@h1:5432,h2:5433/x"},
		{"MySQL URL with TLS parameters", "mysql://app:s3cret@db:3306/shop?tls=true&ssl-ca=/etc/ssl/ca.pem", "mysql://app:xxxxx@db:3306/shop?tls=true&ssl-ca=/etc/ssl/ca.pem"},
		// Any scheme's userinfo: the syntactic pass knows no kind.
		{"Redis URL, password only", "redis://:pw@cache:6379/0", "redis://:xxxxx@cache:6379/0"},
		{"another kind's URL", "kv+tls://u:pw@h:1/0 up", "kv+tls://u:xxxxx@h:1/0 up"},
		{"a scheme inside a word is read from its start", "jdbc:postgresql://u:pw@h/x", "jdbc:postgresql://u:xxxxx@h/x"},
		{"a URL without userinfo", "see https://www.postgresql.org/docs/current/mvcc.html", "see https://www.postgresql.org/docs/current/mvcc.html"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGSSLPASSWORD", "")
	r := New("postgres://u@h/x?password=s3cret%20word")
	got := r.Args([]string{"firedrill", "run", "s.yaml", "--dsn", "postgres://u@h/x?password=s3cret word",
		"--dsn=host=h password='a b'", "-d", "password=short", "s3cret word"})
	want := []string{"firedrill", "run", "s.yaml", "--dsn", "postgres://u@h/x?password=xxxxx",
		"--dsn=host=h password=xxxxx", "-d", "password=xxxxx", "xxxxx"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Args\n got %q\nwant %q", got, want)
	}
}

// Passwords a driver resolves outside the string (Resolve: a passfile, a
// service file), and those in the environment, are masked wherever they
// appear, for connection strings learned before and after the resolver;
// short ones only by syntax.
func TestLearnResolvedPasswords(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGSSLPASSWORD", "env-ssl-pw")
	passfile := map[string]string{"host=h port=5432 dbname=x user=u": "from-passfile-9", "host=later": "later-pass-7", "": "default-pass-5"}
	r := New("host=h port=5432 dbname=x user=u")
	r.Resolve(func(cs string) string { return passfile[cs] })
	r.Learn("host=later")
	text := "auth: from-passfile-9 / env-ssl-pw / postgres://u:from-passfile-9@h / later-pass-7 / default-pass-5"
	if got := r.Redact(text); strings.Contains(got, "pass-") || strings.Contains(got, "passfile") || strings.Contains(got, "env-ssl") {
		t.Errorf("Redact(%q) = %q", text, got)
	}

	t.Setenv("PGPASSWORD", "from-env-1")
	r = New()
	if got := r.Redact("said from-env-1"); got != "said xxxxx" {
		t.Errorf("PGPASSWORD not masked: %q", got)
	}
	t.Setenv("PGPASSWORD", "ab")
	if got := New().Redact("a tab"); got != "a tab" {
		t.Errorf("a 2-byte password is masked as a substring: %q", got)
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	base := errors.New("dial postgres://u:pw@h/x")
	err := (&Redactor{}).Error(fmt.Errorf("run: %w", base))
	if err.Error() != "run: dial postgres://u:xxxxx@h/x" || !errors.Is(err, base) {
		t.Errorf("Error: %q, Is %v", err, errors.Is(err, base))
	}
	if (&Redactor{}).Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

// FuzzRedact checks the property that matters: a password written into
// a connection string, in any form, and that string into any text, does
// not survive redaction by syntax alone, nor as a command-line argument.
func FuzzRedact(f *testing.F) {
	f.Add("s3cret", "failed to connect to", ": refused", uint8(0))
	f.Add("a b'c\\d", "", "", uint8(2))
	f.Add("p@ss/w?r#d&x=y", "dial", "", uint8(1))
	f.Add("pa ss", "x", "y", uint8(3))
	f.Add("=", "", "", uint8(2))
	f.Fuzz(func(t *testing.T, password, prefix, suffix string, form uint8) {
		if password == "" || strings.Contains(Mask, password) {
			t.Skip()
		}
		for _, s := range []string{prefix, suffix} {
			for _, c := range []byte(s) {
				if !(isWord(c) || strings.IndexByte(" :,.()\"", c) >= 0) {
					t.Skip() // text around a DSN is prose, not more conninfo
				}
			}
			if isPasswordKey(strings.TrimRight(prefix, " ")) || strings.Contains(strings.ToLower(s), "postgres") {
				t.Skip()
			}
		}
		dsn, frame, encoded := buildDSN(password, form)
		text := prefix + " " + dsn + " " + suffix
		frameText := prefix + " " + frame + " " + suffix
		out := Redact(text)
		for _, p := range []string{password, encoded} {
			if strings.Contains(out, p) && !strings.Contains(frameText, p) {
				t.Fatalf("password %q survives in %q (from %q)", p, out, text)
			}
		}
		args := (&Redactor{}).Args([]string{"firedrill", "run", "--dsn", dsn, "--dsn=" + dsn})
		joined := strings.Join(args, "\x00")
		for _, p := range []string{password, encoded} {
			if strings.Contains(joined, p) && !strings.Contains("firedrill\x00run\x00--dsn\x00"+frame+"\x00--dsn="+frame, p) {
				t.Fatalf("password %q survives in args %q", p, args)
			}
		}
		// Learned, it is masked even outside any syntax.
		r := New(dsn)
		if len(password) >= MinLiteral {
			if got := r.Redact("x " + password + " y"); strings.Contains(got, password) && !strings.Contains("x "+Mask+" y", password) {
				t.Fatalf("learned password %q survives in %q", password, got)
			}
		}
	})
}

// buildDSN writes password into a connection string the way a user
// would (properly encoded or quoted), in one of four forms; frame is the
// same string with the password replaced by the mask, encoded the
// password as written.
func buildDSN(password string, form uint8) (dsn, frame, encoded string) {
	switch form % 4 {
	case 0:
		u := url.URL{Scheme: "postgres", User: url.UserPassword("app", password), Host: "127.0.0.1:5432", Path: "/db"}
		encoded = strings.TrimPrefix(url.UserPassword("", password).String(), ":")
		encoded = strings.TrimSuffix(encoded, "@")
		return u.String(), "postgres://app:" + Mask + "@127.0.0.1:5432/db", encoded
	case 1:
		encoded = url.QueryEscape(password)
		return "postgres://app@127.0.0.1/db?sslmode=disable&password=" + encoded + "&application_name=t",
			"postgres://app@127.0.0.1/db?sslmode=disable&password=" + Mask + "&application_name=t", encoded
	case 2:
		encoded = quoteConn(password)
		return "host=127.0.0.1 password=" + encoded + " dbname=db", "host=127.0.0.1 password=" + Mask + " dbname=db", encoded
	default:
		encoded = quoteConn(password)
		return "host=127.0.0.1 password = " + encoded + " dbname=db", "host=127.0.0.1 password = " + Mask + " dbname=db", encoded
	}
}

// quoteConn quotes a conninfo value as libpq's documentation says.
func quoteConn(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// BenchmarkRedactLine is the cost the redacting writer adds to one
// progress line of firedrill run.
func BenchmarkRedactLine(b *testing.B) {
	r := New("postgres://app:s3cret-word@db:5432/stage")
	line := "firedrill:   12.0 s  w          1234 tps  p50 0.41 ms  p99 2.10 ms  failed 0  clients 8 | active 3, top wait Lock:transactionid\n"
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		_ = r.Redact(line)
	}
}
