package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestVersionFromBanner(t *testing.T) {
	t.Parallel()
	tests := []struct{ banner, want string }{
		{"postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", "15.18"},
		{"postgres (PostgreSQL) 17beta1\n", "17beta1"},
		{"postgres (PostgreSQL) 9.6.24\n", "9.6.24"},
		// A rebranded build still prints a version.
		{"postgres (SomeFork) 16.2\n", "16.2"},
	}
	for _, test := range tests {
		if got, ok := versionFromBanner(test.banner); !ok || got != test.want {
			t.Errorf("versionFromBanner(%q) = %q, %v; want %q", test.banner, got, ok, test.want)
		}
	}
	if got, ok := versionFromBanner("no version here"); ok {
		t.Errorf("versionFromBanner without a version = %q, true", got)
	}
}

func TestCompareVersionsIsNumeric(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"10", "9.6", 1}, // a string comparison would get this wrong
		{"15", "15", 0},
		{"15.2", "15.10", -1},
		{"16", "15.18", 1},
	}
	for _, test := range tests {
		a, _ := parseVersion(test.a)
		b, _ := parseVersion(test.b)
		if got := compareVersions(a, b); got != test.want {
			t.Errorf("compareVersions(%s, %s) = %d, want %d", test.a, test.b, got, test.want)
		}
	}
}

func TestQuoteConnValueRoundTrips(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"/tmp/firedrill-pg-1", "/tmp/with space", `/tmp/it's`, `/tmp/back\slash`} {
		config, err := pgconn.ParseConfig("host=" + quoteConnValue(dir) + " port=5433 user=x sslmode=disable")
		if err != nil {
			t.Errorf("parse host %q: %v", dir, err)
			continue
		}
		if config.Host != dir {
			t.Errorf("host %q came back as %q", dir, config.Host)
		}
	}
}
