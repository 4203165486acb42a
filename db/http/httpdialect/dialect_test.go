package httpdialect_test

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/script"
)

func parse(t *testing.T, src string) (*script.Script, *script.Symbols, error) {
	t.Helper()
	syms := script.NewSymbols()
	s, err := script.ParseDialect("s.http", []byte(src), syms, httpdialect.Script())
	return s, syms, err
}

func TestParseRequests(t *testing.T) {
	t.Parallel()
	s, syms, err := parse(t, `\set uid random(1, 10000)
GET /journals?user=:uid&limit=20
Accept: application/json
X-Trace: a:uid-12:30
\check status == 200
\gset cursor = $.next_cursor
\gset rid = header X-Request-Id
# a comment
POST /journals/:uid/entries
Content-Type: application/json

{"user": :uid,
 "text": "at 12:30"}
\check $.ok == true
\check body contains "saved"
\if :uid > 5
DELETE /journals/:uid
\endif
`)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*httpdialect.Request
	for _, c := range s.Commands {
		if c.Kind == script.KindCustom {
			reqs = append(reqs, c.Custom.(*httpdialect.Request))
		}
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	get, post, del := reqs[0], reqs[1], reqs[2]
	if get.Endpoint != "GET /journals" || post.Endpoint != "POST /journals/:uid/entries" || del.Endpoint != "DELETE /journals/:uid" {
		t.Errorf("endpoints %q %q %q", get.Endpoint, post.Endpoint, del.Endpoint)
	}
	if len(get.Headers) != 2 || get.Headers[1].Name != "X-Trace" || !get.Headers[1].Value.Literal() {
		t.Errorf("GET headers %+v (a:uid and 12:30 are text)", get.Headers)
	}
	if !get.StatusChecked || len(get.Checks) != 1 || len(get.Gsets) != 2 || get.Gsets[1].Header != "X-Request-Id" {
		t.Errorf("GET checks %+v gsets %+v", get.Checks, get.Gsets)
	}
	if !post.HasBody || post.StatusChecked || len(post.Checks) != 2 {
		t.Errorf("POST body %v checks %+v", post.HasBody, post.Checks)
	}
	vars := script.NewVars(syms)
	vars.SetInt(syms.Ref("uid"), 42)
	body, unset := post.Body.Append(nil, vars, httpdialect.Raw)
	if unset != script.NoVar || string(body) != "{\"user\": 42,\n \"text\": \"at 12:30\"}" {
		t.Errorf("body %q", body)
	}
	vars.SetString(syms.Ref("uid"), "a b/é")
	path, _ := get.Target.Append(nil, vars, httpdialect.Percent)
	if string(path) != "/journals?user=a%20b%2F%C3%A9&limit=20" {
		t.Errorf("path %q", path)
	}
}

// Every line the dialect cannot read is named at its file:line:col.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"get /x\n", "s.http:1:1: not an HTTP request line"},
		{"GET x\n", "s.http:1:5: the request's path \"x\" must start with '/'"},
		{"GET /x\nnot a header\n", "s.http:2:1: want a header line"},
		{"GET /x\nContent-Length: 3\n", "s.http:2:1: header Content-Length is firedrill's"},
		{"\\check status == 200\n", "s.http:1:1: \\check must follow an HTTP request"},
		{"GET /x\n\\check status = 200\n", "s.http:2:15: \\check status: \"=\" is not a comparison"},
		{"GET /x\n\\check status == 20\n", "s.http:2:18: \\check status: \"20\" is not a status code"},
		{"GET /x\n\\check $.a. == 1\n", "s.http:2:8: JSON path"},
		{"GET /x\n\\check body contains ok\n", "s.http:2:22: \\check body contains: want a quoted text"},
		{"GET /x\n\\gset v $.a\n", "s.http:2:9: \\gset v: want ="},
		{"GET /x\n\\gset v = cookie\n", "s.http:2:11: \\gset v = cookie"},
		{"GET /x\n\\startpipeline\n", "s.http:2:1: \\startpipeline: HTTP requests are not pipelined"},
		{"GET /a b\n", "s.http:1:7: a space in the request's path"},
	} {
		_, _, err := parse(t, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestChecks(t *testing.T) {
	t.Parallel()
	s, syms, err := parse(t, `GET /x
\check status in 2xx
\check $.items[1].id == 7
\check $.name == "a\"b"
\check $.ok == true
\check $.n >= 2.5
\check $.missing != 1
\check $.who == :who
\check body contains "id"
`)
	if err != nil {
		t.Fatal(err)
	}
	req := s.Commands[0].Custom.(*httpdialect.Request)
	vars := script.NewVars(syms)
	vars.SetString(syms.Ref("who"), "me")
	body := []byte(` {"items": [{"id": 1}, {"id": 7, "x": [1,{"y":null}]}], "name": "a\"b", "ok": true, "n": 3, "who": "me"} `)
	if !req.Checks[0].StatusOK(204) || req.Checks[0].StatusOK(301) {
		t.Error("status in 2xx")
	}
	for _, c := range req.Checks[1:] {
		if ok, _ := c.BodyOK(body, vars, nil); !ok {
			t.Errorf("%s failed on %s", c.Describe(), body)
		}
	}
	if ok, _ := req.Checks[4].BodyOK([]byte(`{"n": 1}`), vars, nil); ok {
		t.Error("$.n >= 2.5 passed on 1")
	}
}
