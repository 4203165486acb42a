package engine

import (
	"bufio"
	"io"
	"strconv"
	"sync"

	"github.com/firedrill/firedrill/script"
)

// TxRecord is one transaction as written to pgbench's per-transaction log.
type TxRecord struct {
	Client    int
	TxNo      int64
	Script    int
	LatencyUS int64
	LagUS     int64
	Retries   int
	Skipped   bool
	Failure   FailureKind
	EndUnixUS int64
}

// TxLogger receives every finished transaction (pgbench -l).
type TxLogger interface {
	Log(tx *TxRecord)
}

// PgbenchLog writes pgbench's transaction log format, either one line per
// transaction or, with an aggregate interval, one line per interval.
type PgbenchLog struct {
	mu           sync.Mutex
	w            *bufio.Writer
	line         []byte
	throttled    bool        // --rate was given: the lag column is written
	retries      bool        // --max-tries != 1: the retries column is written
	detailed     bool        // --failures-detailed
	latencyLimit bool        // -L: skipped counts are written
	sampleRate   float64     // 0 or 1 = log everything
	sample       script.Rand // pgbench's ts_sample_rs
	aggUS        int64       // aggregate interval; 0 = per transaction
	agg          aggState
}

type aggState struct {
	startUS                 int64
	count                   int64
	lat, lag                Simple
	skipped                 int64
	retried, retries        int64
	serialization, deadlock int64
}

// PgbenchLogOptions say which optional columns pgbench would write.
type PgbenchLogOptions struct {
	Throttled, Retries, FailuresDetailed, LatencyLimit bool
	SampleRate                                         float64
	AggregateSeconds                                   int
	// Seed seeds the --sampling-rate draws: pgbench seeds them per thread
	// (script.PgbenchSeeds' Threads[t].Sample); with thread 0's seed and
	// one client, the same transactions are logged as by pgbench.
	Seed uint64
}

// NewPgbenchLog writes the log to w; call Close to flush it.
func NewPgbenchLog(w io.Writer, o PgbenchLogOptions) *PgbenchLog {
	l := &PgbenchLog{
		w: bufio.NewWriterSize(w, 64<<10), throttled: o.Throttled, retries: o.Retries,
		detailed: o.FailuresDetailed, latencyLimit: o.LatencyLimit, sampleRate: o.SampleRate,
		aggUS: int64(o.AggregateSeconds) * 1e6,
	}
	l.sample.Seed(o.Seed)
	return l
}

// Log writes (or aggregates) one transaction.
func (l *PgbenchLog) Log(tx *TxRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sampleRate > 0 && l.sample.Float64() > l.sampleRate {
		return
	}
	if l.aggUS > 0 {
		l.aggregate(tx)
		return
	}
	b := l.line[:0]
	b = strconv.AppendInt(b, int64(tx.Client), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, tx.TxNo, 10)
	b = append(b, ' ')
	switch {
	case tx.Skipped:
		b = append(b, "skipped"...)
	case tx.Failure != 0 && !l.detailed:
		b = append(b, "failed"...)
	case tx.Failure == Serialization:
		b = append(b, "serialization"...)
	case tx.Failure == Deadlock:
		b = append(b, "deadlock"...)
	default:
		b = strconv.AppendInt(b, tx.LatencyUS, 10)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(tx.Script), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, tx.EndUnixUS/1e6, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, tx.EndUnixUS%1e6, 10)
	if l.throttled {
		b = append(b, ' ')
		b = strconv.AppendInt(b, tx.LagUS, 10)
	}
	if l.retries {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(tx.Retries), 10)
	}
	b = append(b, '\n')
	l.line = b
	_, _ = l.w.Write(b)
}

func (l *PgbenchLog) aggregate(tx *TxRecord) {
	a := &l.agg
	if a.startUS == 0 {
		a.startUS = tx.EndUnixUS - tx.EndUnixUS%1e6
	}
	for tx.EndUnixUS >= a.startUS+l.aggUS {
		l.writeAgg()
		*a = aggState{startUS: a.startUS + l.aggUS}
	}
	if tx.Retries > 0 {
		a.retried++
		a.retries += int64(tx.Retries)
	}
	switch {
	case tx.Skipped:
		a.skipped++
	case tx.Failure == Serialization:
		a.serialization++
	case tx.Failure == Deadlock:
		a.deadlock++
	default:
		a.count++
		a.lat.Add(float64(tx.LatencyUS))
		a.lag.Add(float64(tx.LagUS))
	}
}

// writeAgg writes pgbench 15's aggregate line: interval_start
// num_transactions sum_latency sum_latency_2 min_latency max_latency sum_lag
// sum_lag_2 min_lag max_lag skipped retried retries serialization_failures
// deadlock_failures.
func (l *PgbenchLog) writeAgg() {
	a := &l.agg
	b := l.line[:0]
	num := func(v int64) { b = append(b, ' '); b = strconv.AppendInt(b, v, 10) }
	flt := func(v float64) { b = append(b, ' '); b = strconv.AppendFloat(b, v, 'f', 0, 64) }
	b = strconv.AppendInt(b, a.startUS/1e6, 10)
	num(a.count)
	flt(a.lat.Sum)
	flt(a.lat.Sum2)
	flt(a.lat.Min)
	flt(a.lat.Max)
	if l.throttled {
		flt(a.lag.Sum)
		flt(a.lag.Sum2)
		flt(a.lag.Min)
		flt(a.lag.Max)
	} else {
		b = append(b, " 0 0 0 0"...)
	}
	if l.latencyLimit {
		num(a.skipped)
	} else {
		num(0)
	}
	if l.retries {
		num(a.retried)
		num(a.retries)
	} else {
		b = append(b, " 0 0"...)
	}
	if l.detailed {
		num(a.serialization)
		num(a.deadlock)
	} else {
		b = append(b, " 0 0"...)
	}
	b = append(b, '\n')
	l.line = b
	_, _ = l.w.Write(b)
}

// Close writes the last (partial) aggregate and flushes the log.
func (l *PgbenchLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.aggUS > 0 && l.agg.startUS != 0 && (l.agg.count > 0 || l.agg.skipped > 0 || l.agg.serialization+l.agg.deadlock > 0) {
		l.writeAgg()
	}
	return l.w.Flush()
}
