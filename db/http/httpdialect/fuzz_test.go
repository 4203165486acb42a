package httpdialect_test

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/script"
)

// The dialect's parser never panics, places every error in the script,
// and what it accepts renders without variables left unset once every
// variable has a value.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"GET /x\n",
		"\\set uid random(1, 10000)\nGET /journals?user=:uid&limit=20\nAccept: application/json\n\\check status == 200\n\\gset cursor = $.next_cursor\n",
		"POST /a/:id\nContent-Type: application/json\n\n{\"a\": :id, \"t\": \"12:30\"}\n\\check $.ok == true\n\\check body contains \"x\"\n",
		"GET /x HTTP/1.1\nX-A: \\:b\n\n\\gset h = header X-A\n",
		"GET /x\n\\check status in 2xx\n\\check $[\"a b\"][0] >= 2.5\n\\check $.v != :w\n",
		"\\if :a = 1\nDELETE /x\n\\else\nPUT /y\n\n body\n\\endif\n",
		"get /x\n", "GET x\n", "GET /x\n\\check\n", "GET /x\n\\gset a = $..b\n", "\\check status == 200\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		syms := script.NewSymbols()
		s, err := script.ParseDialect("f.http", []byte(src), syms, httpdialect.Script())
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.http:") {
				t.Fatalf("error not placed: %v", err)
			}
			return
		}
		vars := script.NewVars(syms)
		for i := range syms.Len() {
			vars.SetString(script.VarRef(i), "v 1")
		}
		for _, cmd := range s.Commands {
			req, ok := cmd.Custom.(*httpdialect.Request)
			if !ok {
				continue
			}
			if !strings.HasPrefix(req.Endpoint, req.Method+" /") {
				t.Fatalf("endpoint %q of %q", req.Endpoint, cmd.Text)
			}
			out, unset := req.Target.Append(nil, vars, httpdialect.Percent)
			if unset != script.NoVar || strings.ContainsAny(string(out), " \r\n") {
				t.Fatalf("target %q from %q", out, req.Target.String())
			}
			for _, c := range req.Checks {
				c.BodyOK([]byte(`{"a": [1, "x"], "b": null}`), vars, nil)
			}
		}
	})
}

// Lookup never panics and returns a part of the document.
func FuzzLookup(f *testing.F) {
	f.Add(`{"a": {"b": [1, {"c": "x\"y"}]}}`, "$.a.b[1].c")
	f.Add(`[1, 2, [3]]`, "$[2][0]")
	f.Add(`{"k\u0041": true}`, `$["kA"]`)
	f.Add(`{"a": 1e5, "b": -0.5}`, "$.b")
	f.Fuzz(func(t *testing.T, doc, path string) {
		p, err := httpdialect.ParsePath(path)
		if err != nil {
			return
		}
		raw, ok := httpdialect.Lookup([]byte(doc), p)
		if ok && !strings.Contains(doc, string(raw)) {
			t.Fatalf("%q is not in the document", raw)
		}
		if ok && len(raw) > 0 && raw[0] == '"' {
			httpdialect.AppendUnquoted(nil, raw)
		}
	})
}
