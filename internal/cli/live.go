package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/timeline"
)

// liveDiagnosis re-reads the run directory now and then while the run goes
// on and prints each finding the moment its evidence is in. The rules read
// only the run directory, so what fires live is what the final report says.
type liveDiagnosis struct {
	w       io.Writer
	dir     func() string // the run directory, once the runner made it
	mu      sync.Mutex
	running bool
	last    time.Time
	printed map[string]bool
}

// every is how often the rules run: each pass re-reads the whole timeline,
// so long runs check less often (about 2 % of the elapsed time).
func (l *liveDiagnosis) every(elapsed float64) time.Duration {
	return max(10*time.Second, time.Duration(elapsed/50*float64(time.Second)))
}

// tick is called on every sample tick; it starts a pass in the background
// when one is due and none is running.
func (l *liveDiagnosis) tick(elapsed float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dir := l.dir()
	if l.running || dir == "" || time.Since(l.last) < l.every(elapsed) {
		return
	}
	l.running, l.last = true, time.Now()
	go func() {
		defer func() {
			l.mu.Lock()
			l.running = false
			l.mu.Unlock()
		}()
		run, err := timeline.Open(dir)
		if err != nil {
			return // the next pass tries again
		}
		for _, f := range diagnose.Diagnose(run) {
			key := f.Rule + "\x00" + f.Workload
			l.mu.Lock()
			seen := l.printed[key]
			if l.printed == nil {
				l.printed = map[string]bool{}
			}
			l.printed[key] = true
			l.mu.Unlock()
			if !seen && f.Severity != diagnose.Info {
				fmt.Fprintf(l.w, "%7.1f s  finding:", f.End)
				report.WriteFinding(l.w, f)
			}
		}
	}()
}

// wait lets a pass in flight finish, so its lines do not mix with the
// final summary.
func (l *liveDiagnosis) wait() {
	for {
		l.mu.Lock()
		r := l.running
		l.mu.Unlock()
		if !r {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
