package pgbenchcmd_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/firedrill/firedrill/internal/cli"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// lockedBuffer is a bytes.Buffer the test reads while the command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// scrapeValue reads name's value from url's exposition, for the series
// whose labels include want; ok is false if the endpoint does not answer
// or has no such series.
func scrapeValue(url, name string, want map[string]string) (v float64, ok bool) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil || families[name] == nil {
		return 0, false
	}
	for _, m := range families[name].Metric {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.Label {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

var (
	servingAt = regexp.MustCompile(`serving live metrics at (http://\S+/metrics)`)
	processed = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
)

// firedrill pgbench --metrics-addr serves firedrill run's workload
// metrics while the benchmark runs: the transaction counter grows during
// the run and ends at the count pgbench prints, with and without -P (-P's
// last interval ends before the run does: the rest is fed at the end),
// and the printed output keeps pgbench's form.
func TestPgbenchServesMetrics(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	for _, c := range []struct {
		name     string
		progress []string
	}{
		{"no -P: the exporter's own 1 s intervals, nothing printed", nil},
		{"-P 2: -P's intervals, and the last second fed at the end", []string{"-P", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr := &lockedBuffer{}
			var stdout bytes.Buffer
			env := &clikit.Env{
				Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: stderr,
				Getenv:  func(string) string { return "" },
				Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			}
			args := append([]string{"pgbench", "--metrics-addr", "127.0.0.1:0", "--metrics-linger", "2s", "-T", "3", "-c", "2", "-S"}, c.progress...)
			done := make(chan int, 1)
			go func() { done <- cli.Main(env, kinds.Registry(), args) }()

			// Scrape every 200 ms until the run is over (run_finished 1),
			// keeping the counter's values seen while it ran.
			var url string
			var during []float64
			final, finalHist := -1.0, -1.0
			pg := map[string]string{"workload": "pgbench", "scenario": "pgbench", "backend": "postgres"}
			deadline := time.Now().Add(2 * time.Minute)
			for final < 0 && time.Now().Before(deadline) {
				select {
				case code := <-done:
					t.Fatalf("exit %d before the run was seen finished\nstdout:\n%s\nstderr:\n%s", code, &stdout, stderr)
				case <-time.After(200 * time.Millisecond):
				}
				if url == "" {
					if m := servingAt.FindStringSubmatch(stderr.String()); m != nil {
						url = m[1]
					}
					continue
				}
				n, ok := scrapeValue(url, "firedrill_transactions_total", pg)
				if !ok {
					continue
				}
				if fin, _ := scrapeValue(url, "firedrill_run_finished", nil); fin == 1 {
					final = n
					finalHist, _ = scrapeValue(url, "firedrill_latency_seconds", pg)
					if clients, _ := scrapeValue(url, "firedrill_clients", pg); clients != 2 {
						t.Errorf("firedrill_clients = %v, want 2", clients)
					}
					// What the dashboard's variables and client row query.
					for _, name := range []string{"firedrill_transactions_per_second", "firedrill_transactions_failed_total",
						"firedrill_latency_interval_seconds", "firedrill_clients_unconnected", "firedrill_run_info"} {
						labels := pg
						if name == "firedrill_run_info" {
							labels = map[string]string{"scenario": "pgbench", "backend": "postgres"}
						}
						if _, ok := scrapeValue(url, name, labels); !ok {
							t.Errorf("%s%v is not served", name, labels)
						}
					}
					break
				}
				during = append(during, n)
			}
			code := <-done
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, stderr)
			}
			if url == "" || final < 0 {
				t.Fatalf("no finished run scraped (url %q)\nstderr:\n%s", url, stderr)
			}
			// Served while the run went on, and growing: at 1 s intervals
			// during the run; with -P 2 the exporter moves at 2 s and at
			// the end.
			if len(during) == 0 || during[0] <= 0 || final <= during[len(during)-1] {
				t.Errorf("the counter did not grow while the run went on: %v, then %v at the end", during, final)
			}
			for i := 1; i < len(during); i++ {
				if during[i] < during[i-1] {
					t.Errorf("the counter went down during the run: %v", during)
				}
			}
			if c.progress == nil && during[len(during)-1] == during[0] {
				t.Errorf("the counter did not move during the run at 1 s intervals: %v", during)
			}
			m := processed.FindStringSubmatch(stdout.String())
			if m == nil {
				t.Fatalf("no processed count in the summary:\n%s", &stdout)
			}
			printed, _ := strconv.ParseFloat(m[1], 64)
			if final != printed || finalHist != printed {
				t.Errorf("at the end the exporter says %v transactions (latency histogram %v), pgbench printed %v", final, finalHist, printed)
			}
			progressLines := strings.Count(stderr.String(), "progress: ")
			if c.progress == nil && progressLines != 0 || c.progress != nil && progressLines != 1 {
				t.Errorf("%d progress lines with %v, want pgbench's:\n%s", progressLines, c.progress, stderr)
			}
			// The listener is closed after the linger.
			if _, err := http.Get(url); err == nil {
				t.Errorf("%s still answers after the command returned", url)
			}
		})
	}
}

// A busy --metrics-addr is refused before any server starts, naming the
// address and what to do; --metrics-linger alone is a usage error.
func TestPgbenchMetricsAddrBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-addr", busy}, "--metrics-addr " + busy + ": cannot listen"},
		{[]string{"--metrics-addr", "9464"}, "give host:port"},
		{[]string{"--metrics-linger", "5s"}, "--metrics-linger needs --metrics-addr"},
	} {
		env, out, errb := clikit.MemoryEnv("")
		code := cli.Main(env, kinds.Registry(), append([]string{"pgbench", "-S", "-T", "1"}, c.args...))
		if code != clikit.ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb, clikit.ExitUsage, c.want)
		}
		if strings.Contains(errb.String(), "started PostgreSQL") || out.Len() > 0 {
			t.Errorf("%v: something ran before the refusal:\n%s%s", c.args, out, errb)
		}
	}
}
