// Command journal-api is the small service in front of PostgreSQL that
// examples/http-journal.yaml loads: the journal story's feed (INCIDENTS.md
// §2) as two HTTP endpoints.
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
// It connects to the database named by FIREDRILL_CONNSTRING (what a
// scenario's shell event is given for its target) or -dsn, listens on
// -addr (JOURNAL_API_ADDR), holds a pool of -pool connections
// (JOURNAL_API_POOL, default 8), and exits at -until (a Unix time: a
// scenario stops it just before its run ends, so that its event ends
// cleanly) or when the process that started it is gone, so that a run
// killed outright leaves no service behind.
//
// Two knobs put the time outside the database, for the "elsewhere" case
// of the HTTP latency finding: -workers (JOURNAL_API_WORKERS) bounds the
// requests handled at once, the others queue, as a small thread pool
// does; -render (JOURNAL_API_RENDER) adds that much time per request after
// the query, as a slow template or a downstream call would.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

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

func main() {
	addr := flag.String("addr", envOr("JOURNAL_API_ADDR", "127.0.0.1:18931"), "address to listen on")
	dsn := flag.String("dsn", os.Getenv("FIREDRILL_CONNSTRING"), "the database's connection string")
	pool := flag.Int("pool", envInt("JOURNAL_API_POOL", 8), "database connections")
	workers := flag.Int("workers", envInt("JOURNAL_API_WORKERS", 0), "requests handled at once, the rest queue (0: no limit)")
	render := flag.Duration("render", envDuration("JOURNAL_API_RENDER", 0), "time added to every request after its query")
	until := flag.Int64("until", 0, "stop at this Unix time, in seconds (0: run until stopped)")
	flag.Parse()
	if *dsn == "" {
		log.Fatal("journal-api: no database: set FIREDRILL_CONNSTRING or -dsn")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *until > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(*until, 0))
		defer cancel()
	}
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go exitWithParent(ctx, orphaned)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("journal-api: listen on %s: %v", *addr, err)
	}
	if err := serve(ctx, ln, *dsn, *pool, *workers, *render); err != nil {
		log.Fatalf("journal-api: %v", err)
	}
}

// serve answers on ln until ctx ends.
func serve(ctx context.Context, ln net.Listener, dsn string, poolSize, workers int, render time.Duration) error {
	defer ln.Close()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("database connection string: %w", err)
	}
	cfg.RuntimeParams["application_name"] = "journal-api"
	db, err := openPool(ctx, cfg, poolSize)
	if err != nil {
		return err
	}
	defer db.close()

	api := &journalAPI{db: db, render: render}
	if workers > 0 {
		api.workers = make(chan struct{}, workers)
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
	// Connections stay open while idle: a load test's clients open theirs
	// first and may send their first request many seconds later (at a low
	// rate), and net/http bounds the wait for a connection's first
	// request by ReadHeaderTimeout and for later ones by IdleTimeout.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Minute, IdleTimeout: 5 * time.Minute}
	log.Printf("journal-api: listening on http://%s (pool %d, workers %d, render %s)", ln.Addr(), poolSize, workers, render)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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

// exitWithParent cancels the service once the process that started it is
// gone (it is then re-parented), so that nothing outlives a run that was
// killed without a chance to stop its events.
func exitWithParent(ctx context.Context, cancel context.CancelFunc) {
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != parent {
				log.Printf("journal-api: parent %d gone, stopping", parent)
				cancel()
				return
			}
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
