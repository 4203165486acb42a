package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// An error the server sent is an answer, even statement_timeout's; a
// deadline or a timeout on the socket is a server not answering.
func TestUnanswered(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}, false},
		{fmt.Errorf("read locks: %w", &pgconn.PgError{Code: "57014"}), false},
		{fmt.Errorf("read locks: %w", context.DeadlineExceeded), true},
		{errors.New("connect: connection refused"), false},
		{errors.New("write: i/o timeout"), true},
	} {
		if got := unanswered(tt.err); got != tt.want {
			t.Errorf("unanswered(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// The password libpq's rules find outside the connection string (a
// passfile) is what the redactor is taught (backend.Passworder).
func TestPasswordFromPassfile(t *testing.T) {
	passfile := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(passfile, []byte("h:5432:x:u:from-passfile-9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", passfile)
	t.Setenv("PGPASSWORD", "")
	if got := New().Password("host=h port=5432 dbname=x user=u"); got != "from-passfile-9" {
		t.Errorf("Password = %q, want the passfile's", got)
	}
	if got := New().Password("host=other port=5432 dbname=x user=u"); got != "" {
		t.Errorf("Password for another host = %q, want none", got)
	}
}
