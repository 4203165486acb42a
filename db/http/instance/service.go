// Package httpinstance is the http kind's throwaway service: a small
// HTTP/1.1 server of firedrill's own on 127.0.0.1, started when a target
// of kind http names no url, as the databases' kinds start a throwaway
// server. It answers a few fixed endpoints, enough to try a scenario and
// to test the kind end to end:
//
//	GET  /              {"ok": true}
//	GET  /status/<code> an empty reply with that status
//	GET  /delay/<ms>    {"ok": true} after ms milliseconds
//	GET  /json?n=<n>    {"items": [{"id": 1} …], "next_cursor": "c<n>"}
//	POST /echo          the request's body, as sent
package httpinstance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Version names the service in run.json.
const Version = "firedrill-http 1"

// Instance is a running throwaway service.
type Instance struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// Start listens on a free port of 127.0.0.1 and serves until Stop.
func Start(context.Context) (*Instance, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("throwaway http service: %w", err)
	}
	inst := &Instance{addr: l.Addr().String(), done: make(chan struct{}),
		srv: &http.Server{Handler: handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(inst.done)
		if err := inst.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // Stop reports nothing of a server that failed on its own: its clients see it
		}
	}()
	return inst, nil
}

// URL is the service's base URL.
func (i *Instance) URL() string { return "http://" + i.addr }

// Addr is its host:port.
func (i *Instance) Addr() string { return i.addr }

// Stop closes the service and its connections.
func (i *Instance) Stop() error {
	err := i.srv.Close()
	<-i.done
	return err
}

func handler() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok": true}`)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		ok(w)
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil || code < 200 || code > 599 {
			http.Error(w, "want /status/<200-599>", http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
	})
	mux.HandleFunc("/delay/", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/delay/"))
		if err != nil || ms < 0 || ms > 60_000 {
			http.Error(w, "want /delay/<0-60000>", http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			ok(w)
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		n = min(max(n, 1), 1000)
		var b strings.Builder
		b.WriteString(`{"items": [`)
		for i := 1; i <= n; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id": %d}`, i)
		}
		fmt.Fprintf(&b, `], "next_cursor": "c%d"}`, n)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, b.String())
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		io.Copy(w, io.LimitReader(r.Body, 16<<20))
	})
	return mux
}
