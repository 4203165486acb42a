package promexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the exposition is served.
const Path = "/metrics"

// Server serves an exporter's /metrics over HTTP.
type Server struct {
	srv      *http.Server
	addr     string
	done     chan struct{}
	serveErr error // why Serve stopped, if not by Shutdown; read after done
}

// Listen binds addr (host:port) now, so that a busy port is an error
// before the run starts, and serves e on it until Shutdown.
func Listen(addr string, e *Exporter) (*Server, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("--metrics-addr %q: %w: give host:port, e.g. 127.0.0.1:9464 (or :9464 for every interface)", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: cannot listen: %w: choose a free port or stop what uses it", addr, err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(e); err != nil {
		ln.Close()
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	// ContinueOnError: a series the registry rejects costs that series,
	// not the scrape.
	mux.Handle(Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "firedrill: the run's metrics are at %s\n", Path)
	})
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			// Serve fails only if the listener does; the run goes on
			// without its metrics, and Shutdown says why.
			s.serveErr = fmt.Errorf("metrics server on %s: %w", s.addr, err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on (with the port chosen when
// addr's was 0).
func (s *Server) Addr() string { return s.addr }

// URL is the exposition's address for people: on every interface
// (":9464"), the loopback one, which curl on this machine reaches.
func (s *Server) URL() string {
	host, port, err := net.SplitHostPort(s.addr)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(host, port) + Path
	}
	return "http://" + s.addr + Path
}

// Shutdown stops the server: it lets scrapes under way finish for up to
// two seconds, then closes.
func (s *Server) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return errors.Join(s.serveErr, err)
}
