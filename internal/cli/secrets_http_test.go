package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// An HTTP service's secrets — the target's headers (from ${ENV}), a
// script's Authorization and Cookie headers, a token in a script's URL and
// the userinfo of --dsn's URL — appear in no byte firedrill prints or
// writes, for a run that worked and one refused; and the service got
// them.
func TestNoHTTPSecretInAnyOutput(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs firedrill against a service")
	}
	const (
		envToken    = "env-t0ken-9f8e7d6c"
		scriptAuth  = "scr1pt-auth-5a4b3c"
		cookie      = "c00kie-val-1q2w3e"
		queryToken  = "qu3ry-tok-0o9i8u"
		urlPassword = "u5erinfo-pw-7y6t"
	)
	seen := map[string]bool{}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen[r.Header.Get("X-Api")+"|"+r.Header.Get("Authorization")+"|"+r.Header.Get("Cookie")+"|"+r.URL.Query().Get("token")] = true
		w.Write([]byte(`{"ok": true}`))
	}))
	defer svc.Close()
	closed := "http://127.0.0.1:" + closedPort(t)
	for _, tc := range []struct {
		name     string
		url      string
		wantCode int
	}{{"served", svc.URL, 0}, {"refused", closed, clikit.ExitUsage}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sc := filepath.Join(dir, "s.yaml")
			writeFile(t, sc, `name: http-secrets
duration: 2s
sample_interval: 500ms
targets:
  api: {kind: http, headers: {X-Api: "Key ${API_TOKEN}"}}
workloads:
  - name: w
    target: api
    clients: 1
    scripts:
      - inline: |
          GET /items?token=`+queryToken+`&n=1
          Authorization: Bearer `+scriptAuth+`
          Cookie: session=`+cookie+`
          \check $.ok == true
`)
			u := strings.Replace(tc.url, "http://", "http://user:"+urlPassword+"@", 1)
			out, jsonPath := filepath.Join(dir, "runs"), filepath.Join(dir, "result.json")
			env, stdout, stderr := clikit.MemoryEnv("")
			env.LookupEnv = func(name string) (string, bool) {
				if name == "API_TOKEN" {
					return envToken, true
				}
				return "", false
			}
			code := Main(env, kinds.Registry(), []string{"run", sc, "--out", out, "--json", jsonPath, "--progress", "500ms", "--dsn", "api=" + u})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			var leaks []string
			for _, s := range []string{envToken, scriptAuth, cookie, queryToken, urlPassword} {
				leaks = append(leaks, secretForms(s)...)
			}
			checkNoLeak(t, "stdout", stdout.Bytes(), leaks)
			checkNoLeak(t, "stderr", stderr.Bytes(), leaks)
			runs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(runs) != 1 {
				t.Fatalf("run directories: %v\nstderr:\n%s", runs, stderr)
			}
			checkPrivateTree(t, runs[0], leaks)
			if tc.wantCode == 0 {
				checkPrivateFile(t, jsonPath, leaks)
				want := fmt.Sprintf("Key %s|Bearer %s|session=%s|%s", envToken, scriptAuth, cookie, queryToken)
				if !seen[want] {
					t.Errorf("the service saw %v, want %q", seen, want)
				}
			}
		})
	}
}
