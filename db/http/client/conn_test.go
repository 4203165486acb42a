package httptarget_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/http/client"
	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// service is a local HTTP service that counts the connections it accepted.
type service struct {
	*httptest.Server
	accepted atomic.Int64
}

func newService(t *testing.T, h http.Handler, tlsOn bool) *service {
	t.Helper()
	s := &service{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.accepted.Add(1)
		}
	}
	if tlsOn {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// run runs src against the service for n transactions per client.
func run(t *testing.T, target *httptarget.Target, src string, clients, n int, goroutines bool) *engine.Result {
	t.Helper()
	syms := script.NewSymbols()
	s, err := script.ParseDialect("t.http", []byte(src), syms, httpdialect.Script())
	if err != nil {
		t.Fatal(err)
	}
	target.Prepare([]*script.Script{s})
	res, err := engine.Run(context.Background(), target, engine.Config{
		Scripts: []*script.Script{s}, Symbols: syms, Clients: clients, Transactions: n, MaxTries: 1,
		ContinueOnError: true, Goroutines: goroutines, Threads: 1,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func newTarget(t *testing.T, url string, mod func(*httptarget.Config)) *httptarget.Target {
	t.Helper()
	cfg := httptarget.Config{URL: url, Headers: []httptarget.Header{{Name: "Authorization", Value: "Bearer tok"}}}
	if mod != nil {
		mod(&cfg)
	}
	tgt, err := httptarget.NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

// Keep-alive: each client opens one connection and sends every request
// on it, on the event loop and on goroutines; chunked and Content-Length
// bodies are read whole (the next request on the connection is answered).
func TestKeepAliveReuse(t *testing.T) {
	t.Parallel()
	for _, goroutines := range []bool{false, true} {
		t.Run(fmt.Sprintf("goroutines=%v", goroutines), func(t *testing.T) {
			t.Parallel()
			var auth atomic.Value
			svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth.Store(r.Header.Get("Authorization"))
				if r.URL.Path == "/chunked" {
					w.Write([]byte(`{"a": [`))
					w.(http.Flusher).Flush() // no Content-Length: chunked
					w.Write([]byte(strings.Repeat(`1,`, 5000) + `2]}`))
					return
				}
				fmt.Fprintf(w, `{"id": %s}`, r.URL.Query().Get("id"))
			}), false)
			tgt := newTarget(t, svc.URL, nil)
			res := run(t, tgt, `\set id random(1, 1000)
GET /one?id=:id
\check $.id == :id
GET /chunked
\check $.a[5000] == 2
`, 4, 50, goroutines)
			if res.Totals.Total.Count != 200 || res.Totals.Total.Failures() != 0 {
				t.Fatalf("%d transactions, %d failed: %+v", res.Totals.Total.Count, res.Totals.Total.Failures(), res.Errors)
			}
			if n := svc.accepted.Load(); n != 4 {
				t.Errorf("%d connections accepted for 4 clients", n)
			}
			if a := auth.Load(); a != "Bearer tok" {
				t.Errorf("Authorization %q", a)
			}
			eps := tgt.Stats().Endpoints()
			if len(eps) != 2 || eps[0].Name != "GET /one" || eps[0].Status[2].Load() != 200 || eps[1].Replies.Load() != 200 {
				t.Errorf("endpoints %v", eps)
			}
		})
	}
}

// A status of 400 or more fails the transaction with its code unless a
// \check of the status accepts it; the classes are counted.
func TestStatusCounting(t *testing.T) {
	t.Parallel()
	svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscanf(r.URL.Path, "/status/%d", &code)
		if code == 302 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(code)
	}), false)
	tgt := newTarget(t, svc.URL, nil)
	res := run(t, tgt, `\set r random(1, 4)
\if :r = 1
GET /status/503
\elif :r = 2
GET /status/404
\check status == 404
\elif :r = 3
GET /status/302
\else
GET /status/201
\check status in 2xx
\endif
`, 2, 100, false)
	st := &tgt.Stats().All
	c2, c3, c4, c5 := st.Status[2].Load(), st.Status[3].Load(), st.Status[4].Load(), st.Status[5].Load()
	if c2+c3+c4+c5 != 200 || c2 == 0 || c3 == 0 || c4 == 0 || c5 == 0 {
		t.Fatalf("classes 2xx %d 3xx %d 4xx %d 5xx %d", c2, c3, c4, c5)
	}
	if res.Totals.Errors["http-503"] != c5 || res.Totals.Total.Failures() != c5 {
		t.Errorf("failures %d, errors %v, want %d http-503 only (404 is checked, 302 is an answer)", res.Totals.Total.Failures(), res.Totals.Errors, c5)
	}
	if svc.accepted.Load() != 2 {
		t.Errorf("%d connections for 2 clients: a failed status must not cost the connection", svc.accepted.Load())
	}
}

// \gset from a JSON body and from a header feed the next request; a
// failed \check fails the transaction by reason.
func TestGsetAndChecks(t *testing.T) {
	t.Parallel()
	svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/first":
			w.Header().Set("X-Next", "n-"+r.URL.Query().Get("i"))
			fmt.Fprintf(w, `{"cursor": "c\"%s", "n": 2.5}`, r.URL.Query().Get("i"))
		case "/second":
			fmt.Fprintf(w, `{"echo": %q, "next": %q, "ok": %v}`, r.URL.Query().Get("cursor"), r.Header.Get("X-Prev"), r.URL.Query().Get("cursor") != `c"3`)
		}
	}), false)
	tgt := newTarget(t, svc.URL, nil)
	res := run(t, tgt, `\set i random(1, 4)
GET /first?i=:i
\gset cursor = $.cursor
\gset nxt = header X-Next
\gset n = $.n
GET /second?cursor=:cursor
X-Prev: :nxt
\check $.echo == :cursor
\check $.next == :nxt
\check $.ok == true
`, 2, 100, false)
	failed := res.Totals.Total.Failures()
	if failed == 0 || failed == 200 || res.Totals.Errors[httpmetric.CodeCheck] != failed {
		t.Fatalf("%d failed, errors %v: want only the i=3 transactions failed by check", failed, res.Totals.Errors)
	}
	if !strings.Contains(res.Errors[0].Message, `\check $.ok == true (line 10) failed: $.ok is false`) {
		t.Errorf("message %q", res.Errors[0].Message)
	}
}

// A slow reply fails by timeout, the connection is reopened, and the
// client goes on.
func TestTimeout(t *testing.T) {
	t.Parallel()
	var slow atomic.Bool
	svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" && !slow.Swap(true) {
			time.Sleep(time.Second)
		}
		w.Write([]byte("ok"))
	}), false)
	for _, goroutines := range []bool{false, true} {
		slow.Store(false)
		tgt := newTarget(t, svc.URL, func(c *httptarget.Config) { c.Timeout = 200 * time.Millisecond })
		res := run(t, tgt, "GET /slow\n\\check body contains \"ok\"\n", 1, 5, goroutines)
		if res.Totals.Errors[httpmetric.CodeTimeout] != 1 || res.Totals.Total.Count != 4 {
			t.Errorf("goroutines=%v: errors %v, %d ok, want 1 timeout and 4 ok", goroutines, res.Totals.Errors, res.Totals.Total.Count)
		}
	}
}

// A connection lost mid-request (the service hangs up before replying)
// fails the transaction as Lost; the client reconnects and goes on.
func TestConnectionLost(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
			buf.Flush()
			conn.Close()
			return
		}
		w.Write([]byte("ok"))
	}), false)
	tgt := newTarget(t, svc.URL, nil)
	res := run(t, tgt, "GET /x\n", 1, 9, false)
	if res.Totals.Lost[engine.CodeConnection] != 3 || res.Totals.Total.Count != 6 {
		t.Errorf("lost %v, %d ok, errors %v: want 3 lost and 6 ok", res.Totals.Lost, res.Totals.Total.Count, res.Totals.Errors)
	}
}

// Connection: close after each reply: the next request opens another
// connection without failing.
func TestServiceCloses(t *testing.T) {
	t.Parallel()
	svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("bye"))
	}), false)
	tgt := newTarget(t, svc.URL, nil)
	res := run(t, tgt, "GET /x\n\\check body contains \"bye\"\n", 1, 5, false)
	if res.Totals.Total.Count != 5 || svc.accepted.Load() != 5 {
		t.Errorf("%d ok over %d connections; errors %v", res.Totals.Total.Count, svc.accepted.Load(), res.Totals.Errors)
	}
}

// HTTPS through crypto/tls: the clients run on goroutines and reuse
// their connections.
func TestTLS(t *testing.T) {
	t.Parallel()
	svc := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"tls": true}`))
	}), true)
	tgt := newTarget(t, svc.URL, func(c *httptarget.Config) { c.TLS = svc.Client().Transport.(*http.Transport).TLSClientConfig })
	res := run(t, tgt, "GET /\n\\check $.tls == true\n", 2, 20, false)
	if res.Totals.Total.Count != 40 || svc.accepted.Load() != 2 {
		t.Errorf("%d ok over %d connections; errors %v", res.Totals.Total.Count, svc.accepted.Load(), res.Totals.Errors)
	}
	// Untrusted: the error says what to do.
	plain := newTarget(t, svc.URL, nil)
	if _, err := plain.Connect(context.Background(), 0); err == nil || !strings.Contains(err.Error(), svc.Listener.Addr().String()) || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
		t.Errorf("untrusted certificate: %v", err)
	}
	// https to a plain service.
	http1 := newService(t, http.NotFoundHandler(), false)
	wrong := newTarget(t, strings.Replace(http1.URL, "http:", "https:", 1), nil)
	if _, err := wrong.Connect(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "use http://") {
		t.Errorf("https to a plain service: %v", err)
	}
}

// A refused service names host:port and what to do.
func TestRefused(t *testing.T) {
	t.Parallel()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	tgt := newTarget(t, "http://"+addr, nil)
	_, err := tgt.Connect(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "is the service running") || engine.FaultOf(err) != engine.Unavailable {
		t.Errorf("refused: %v", err)
	}
}

// A connection the service closed before its first request (Go's servers
// close one whose request is slower than ReadHeaderTimeout) is dialled
// again and the request sent on the new one, as Go's client and wrk do:
// the request never reached the service, so nothing fails.
func TestIdleCloseBeforeFirstRequest(t *testing.T) {
	t.Parallel()
	svc := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	svc.Config.ReadHeaderTimeout = 100 * time.Millisecond
	svc.Start()
	t.Cleanup(svc.Close)
	tgt := newTarget(t, svc.URL, nil)
	for _, goroutines := range []bool{false, true} {
		res := run(t, tgt, "\\sleep 400 ms\nGET /x\n\\check status == 200\n", 2, 2, goroutines)
		if res.Totals.Total.Count != 4 || len(res.Totals.Errors) != 0 {
			t.Errorf("goroutines %v: %d ok of 4; errors %v", goroutines, res.Totals.Total.Count, res.Totals.Errors)
		}
	}
}
