package runner

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pgbackend "github.com/firedrill/firedrill/db/postgres"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// TestRecordWithExplains records a scenario's run directory with the
// end-of-run plans in it, for the diagnosis rules' fixtures:
//
//	FIREDRILL_RECORD=path/to/scenario.yaml FIREDRILL_RECORD_DIR=/tmp/run go test -run RecordWithExplains ./runner
//
// The plans are captured from the live server two ticks before the end
// and appended to the timeline, as the runner does after the load.
func TestRecordWithExplains(t *testing.T) {
	path, dir := os.Getenv("FIREDRILL_RECORD"), os.Getenv("FIREDRILL_RECORD_DIR")
	if path == "" || dir == "" {
		t.Skip("set FIREDRILL_RECORD and FIREDRILL_RECORD_DIR to record")
	}
	sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	var (
		once    sync.Once
		done    = make(chan struct{})
		smp     timeline.Sample
		capture error
	)
	end := sc.Duration.Seconds() - 2*sc.SampleInterval.Seconds()
	res, err := Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: dir, Log: os.Stderr,
		OnTick: func(now float64, _ []timeline.Interval, _ []timeline.Sample) {
			if now < end {
				return
			}
			once.Do(func() {
				go func() {
					defer close(done)
					var man timeline.Manifest
					b, err := os.ReadFile(filepath.Join(dir, timeline.ManifestFile))
					if err == nil {
						err = json.Unmarshal(b, &man)
					}
					if err != nil {
						capture = err
						return
					}
					host, port, _ := strings.Cut(man.Target.Address, ":")
					conn := fmt.Sprintf("host=%s port=%s user=firedrill dbname=%s sslmode=disable", host, port, man.Target.Database)
					smp, capture = pgbackend.CaptureExplains(context.Background(), conn, 10)
					smp.T = now
				}()
			})
		}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("no capture")
	}
	if capture != nil {
		t.Fatal(capture)
	}
	if err := appendPlain(res.Dir, timeline.Record{Sample: &smp}); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s with %v", res.Dir, smp.Values)
}

// appendPlain appends a record to a run's timeline, leaving it as plain
// timeline.jsonl (what fixtures keep, and readers accept).
func appendPlain(dir string, rec timeline.Record) error {
	plain := filepath.Join(dir, timeline.PlainTimelineFile)
	if gz, err := os.Open(filepath.Join(dir, timeline.TimelineFile)); err == nil {
		zr, err := gzip.NewReader(gz)
		if err != nil {
			gz.Close()
			return err
		}
		b, err := io.ReadAll(zr)
		gz.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		if err := os.WriteFile(plain, b, 0o644); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(dir, timeline.TimelineFile)); err != nil {
			return err
		}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(plain, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
