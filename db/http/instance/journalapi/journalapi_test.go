package journalapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"
)

// exampleSetup is the database setup of examples/http-journal.yaml, so
// that the test holds the service to the schema the example makes.
func exampleSetup(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../../examples/http-journal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Targets map[string]struct {
			Setup struct{ SQL []string }
		}
	}
	if err := yaml.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	sql := sc.Targets["db"].Setup.SQL
	if len(sql) != 1 {
		t.Fatalf("the example's db setup: %d statements' blocks, want 1", len(sql))
	}
	return sql[0]
}

// The service in front of a real throwaway PostgreSQL with the example's
// schema: the first page and the cursor page answer as the example's
// script expects (a next_cursor it can \gset, the page after it older),
// bad requests are 4xx, and the plans are what the example is about — the
// first page through the index on user_id, the cursor page a sequential
// scan of journals.
func TestJournalAPIOnTheExampleSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	conn, err := pgx.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, exampleSetup(t)); err != nil {
		t.Fatalf("the example's setup: %v", err)
	}
	for query, want := range map[string]string{
		firstPageQuery:  "Index Scan",
		cursorPageQuery: "Seq Scan on journals",
	} {
		var plan strings.Builder
		rows, err := conn.Query(ctx, "EXPLAIN "+query, 7, 20)
		if query == cursorPageQuery {
			rows, err = conn.Query(ctx, "EXPLAIN "+query, time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), 20)
		}
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if !strings.Contains(plan.String(), want) {
			t.Errorf("plan of %q has no %q:\n%s", query, want, plan.String())
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	srvCtx, stop := context.WithCancel(ctx)
	go func() { served <- Serve(srvCtx, ln, Config{DSN: inst.ConnString(), Pool: 2}) }()
	base := "http://" + ln.Addr().String()
	get := func(path string, want int) page {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %s, want %d", path, resp.Status, want)
		}
		var p page
		if want == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return p
	}
	first := get("/journals?user=7&limit=20", http.StatusOK)
	if len(first.Items) != 20 || first.NextCursor == "" || first.User != "user 7" {
		t.Fatalf("first page: %d items, cursor %q, user %q", len(first.Items), first.NextCursor, first.User)
	}
	for _, j := range first.Items {
		if j.UserID != 7 {
			t.Errorf("first page of user 7 has a journal of user %d", j.UserID)
		}
	}
	cursor, err := strconv.ParseInt(first.NextCursor, 10, 64)
	if err != nil {
		t.Fatalf("cursor %q: %v", first.NextCursor, err)
	}
	next := get(fmt.Sprintf("/journals?user=7&cursor=%s&limit=20", first.NextCursor), http.StatusOK)
	if len(next.Items) != 20 {
		t.Fatalf("cursor page: %d items", len(next.Items))
	}
	for _, j := range next.Items {
		if !j.PostedAt.Before(time.UnixMicro(cursor)) {
			t.Errorf("cursor page has %v, not before the cursor %v", j.PostedAt, time.UnixMicro(cursor))
		}
	}
	get("/journals?user=x", http.StatusBadRequest)
	get("/journals?user=7&cursor=abc", http.StatusBadRequest)
	get("/journals?user=999999", http.StatusNotFound)

	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the service did not stop with its context")
	}
}
