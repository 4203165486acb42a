// Package journalapi is the journal story's feed service (INCIDENTS.md
// §2) in front of PostgreSQL: the service examples/http-journal.yaml
// loads, compiled into firedrill so that a target of kind http can start
// it as an embedded service (embedded: journal-api, database: db), and
// run on its own by examples/journal-api.
//
//	GET /journals?user=N&limit=20            the user's newest journals, and a cursor
//	GET /journals?user=N&cursor=C&limit=20   the page after the cursor, in everyone's feed
//	GET /healthz                             200 once the database answers
//
// The first page reads the user's journals through the index on
// journals (user_id). The cursor page is the story's query, cursor
// pagination over the whole feed (`WHERE deleted_at IS NULL AND posted_at
// < $1 ORDER BY posted_at DESC LIMIT n`), which no index serves: every
// call is a sequential scan of the table and a top-N sort, so the
// database's time, and the service's latency, grow with the request rate.
//
// Two knobs put the time outside the database, for the "elsewhere" case
// of the HTTP latency finding: Workers bounds the requests handled at
// once, the others queue, as a small thread pool does; Render adds that
// much time per request after the query, as a slow template or a
// downstream call would.
package journalapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Name is the service's name: the embedded: value that starts it, its
// application_name on the database.
const Name = "journal-api"

// Version names the service in run.json.
const Version = "firedrill journal-api 1"

// DefaultPool is the database connections it holds unless told.
const DefaultPool = 8

// Queries are named so that pg_stat_statements and the findings show them
// as the service sends them.
const (
	// userQuery checks the user, by primary key.
	userQuery = `SELECT name FROM users WHERE id = $1`
	// firstPageQuery is a user's newest journals: the index on user_id
	// finds them.
	firstPageQuery = `SELECT id, user_id, posted_at, title FROM journals
WHERE user_id = $1 AND deleted_at IS NULL ORDER BY posted_at DESC LIMIT $2`
	// cursorPageQuery is the page after a cursor in everyone's feed: no
	// index on posted_at, so a sequential scan and a top-N sort.
	cursorPageQuery = `SELECT id, user_id, posted_at, title FROM journals
WHERE deleted_at IS NULL AND posted_at < $1 ORDER BY posted_at DESC LIMIT $2`
)

// Config is how the service runs.
type Config struct {
	// DSN is the database's connection string (a secret: never printed).
	DSN string
	// Pool is the database connections (0: DefaultPool).
	Pool int
	// Workers bounds the requests handled at once (0: no limit).
	Workers int
	// Render is time added to every request after its query.
	Render time.Duration
	// Log receives the service's one line when it listens; may be nil.
	Log io.Writer
}

// Service is a running journal API.
type Service struct {
	srv  *http.Server
	db   *pool
	addr string
	done chan error
	stop context.CancelFunc
}

// Start connects to the database (once, so that a wrong connection
// string fails here), listens on a free port of 127.0.0.1 and serves
// until Stop.
func Start(ctx context.Context, cfg Config) (*Service, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	s, err := newService(ctx, ln, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	go func() { s.done <- s.serve(ln) }()
	return s, nil
}

// Serve answers on ln until ctx ends (examples/journal-api's main).
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	s, err := newService(ctx, ln, cfg)
	if err != nil {
		ln.Close()
		return err
	}
	go func() { s.done <- s.serve(ln) }()
	select {
	case <-ctx.Done():
		return s.Stop()
	case err := <-s.done:
		s.done <- nil // for Stop, which waits for the server's end
		return errors.Join(err, s.Stop())
	}
}

func newService(ctx context.Context, ln net.Listener, c Config) (*Service, error) {
	if c.Pool == 0 {
		c.Pool = DefaultPool
	}
	cfg, err := pgx.ParseConfig(c.DSN)
	if err != nil {
		// pgx's message may quote the string, password and all.
		return nil, fmt.Errorf("%s: the database's connection string cannot be read", Name)
	}
	cfg.RuntimeParams["application_name"] = Name
	db, err := openPool(ctx, cfg, c.Pool)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	api := &journalAPI{db: db, render: c.Render}
	if c.Workers > 0 {
		api.workers = make(chan struct{}, c.Workers)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /journals", api.journals)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := db.ping(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// Requests' contexts end when the service stops, so that a query
	// still running is cancelled rather than waited for.
	base, stop := context.WithCancel(context.Background())
	// Connections stay open while idle: a load test's clients open theirs
	// first and may send their first request many seconds later (at a low
	// rate), and net/http bounds the wait for a connection's first
	// request by ReadHeaderTimeout and for later ones by IdleTimeout.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Minute, IdleTimeout: 5 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return base }}
	if c.Log != nil {
		fmt.Fprintf(c.Log, "%s: listening on http://%s (pool %d, workers %d, render %s)\n", Name, ln.Addr(), c.Pool, c.Workers, c.Render)
	}
	return &Service{srv: srv, db: db, addr: ln.Addr().String(), done: make(chan error, 1), stop: stop}, nil
}

func (s *Service) serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// URL is the service's base URL.
func (s *Service) URL() string { return "http://" + s.addr }

// Addr is its host:port.
func (s *Service) Addr() string { return s.addr }

// Stop cancels the requests in flight, closes the service's connections
// and then its database connections.
func (s *Service) Stop() error {
	s.stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(shutdown)
	if err != nil {
		err = s.srv.Close()
	}
	err = errors.Join(err, <-s.done)
	s.db.close()
	return err
}

// journalAPI serves the feed.
type journalAPI struct {
	db      *pool
	workers chan struct{} // nil: no limit
	render  time.Duration
}

// journal is one item of a page.
type journal struct {
	ID       int64     `json:"id"`
	UserID   int       `json:"user_id"`
	PostedAt time.Time `json:"posted_at"`
	Title    string    `json:"title"`
}

// page is what /journals answers; NextCursor is empty on the last page.
type page struct {
	User       string    `json:"user"`
	Items      []journal `json:"items"`
	NextCursor string    `json:"next_cursor"`
}

func (a *journalAPI) journals(w http.ResponseWriter, r *http.Request) {
	if a.workers != nil {
		select {
		case a.workers <- struct{}{}:
			defer func() { <-a.workers }()
		case <-r.Context().Done():
			return
		}
	}
	q := r.URL.Query()
	user, err := strconv.Atoi(q.Get("user"))
	if err != nil || user < 1 {
		http.Error(w, "user: a positive number is needed", http.StatusBadRequest)
		return
	}
	limit := 20
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 100 {
			http.Error(w, "limit: 1 to 100", http.StatusBadRequest)
			return
		}
	}
	ctx := r.Context()
	conn, err := a.db.acquire(ctx)
	if err != nil {
		serverError(w, err)
		return
	}
	defer a.db.release(conn)
	var p page
	if err := conn.QueryRow(ctx, userQuery, user).Scan(&p.User); errors.Is(err, pgx.ErrNoRows) {
		http.Error(w, "no such user", http.StatusNotFound)
		return
	} else if err != nil {
		serverError(w, err)
		return
	}
	var rows pgx.Rows
	if cursor := q.Get("cursor"); cursor != "" {
		micros, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			http.Error(w, "cursor: not one of ours", http.StatusBadRequest)
			return
		}
		rows, err = conn.Query(ctx, cursorPageQuery, time.UnixMicro(micros), limit)
		if err != nil {
			serverError(w, err)
			return
		}
	} else if rows, err = conn.Query(ctx, firstPageQuery, user, limit); err != nil {
		serverError(w, err)
		return
	}
	if p.Items, err = pgx.CollectRows(rows, pgx.RowToStructByPos[journal]); err != nil {
		serverError(w, err)
		return
	}
	if len(p.Items) == limit {
		p.NextCursor = strconv.FormatInt(p.Items[len(p.Items)-1].PostedAt.UnixMicro(), 10)
	} else if p.Items == nil {
		p.Items = []journal{}
	}
	if a.render > 0 {
		time.Sleep(a.render)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p)
}

// pool is the service's connections to the database: a request takes one
// for its queries and waits while all are taken, as an application's
// pool does.
type pool struct {
	cfg  *pgx.ConnConfig
	idle chan *pgx.Conn // nil entries: connections not opened yet
}

func openPool(ctx context.Context, cfg *pgx.ConnConfig, size int) (*pool, error) {
	if size < 1 {
		return nil, fmt.Errorf("pool: %d connections", size)
	}
	p := &pool{cfg: cfg, idle: make(chan *pgx.Conn, size)}
	for range size {
		p.idle <- nil
	}
	// One connection now, so that a wrong connection string fails at once.
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	p.release(c)
	return p, nil
}

// acquire takes a connection, opening it on first use.
func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case c := <-p.idle:
		if c != nil && !c.IsClosed() {
			return c, nil
		}
		c, err := pgx.ConnectConfig(ctx, p.cfg)
		if err != nil {
			p.idle <- nil
			return nil, fmt.Errorf("connect to the database: %w", err)
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// release gives a connection back; one whose query was cancelled midway
// is closed (pgx closes it) and reopened by the next acquire.
func (p *pool) release(c *pgx.Conn) { p.idle <- c }

func (p *pool) ping(ctx context.Context) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(c)
	return c.Ping(ctx)
}

// close closes the connections given back within a second; the process's
// exit closes any other.
func (p *pool) close() {
	deadline := time.After(time.Second)
	for range cap(p.idle) {
		select {
		case c := <-p.idle:
			if c != nil {
				_ = c.Close(context.Background())
			}
		case <-deadline:
			return
		}
	}
}

// serverError answers 500, or 503 when the client went away first.
func serverError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		code = http.StatusServiceUnavailable
	}
	http.Error(w, err.Error(), code)
}
