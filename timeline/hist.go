// Package timeline holds what a run measured, interval by interval:
// latency histograms, counters and (later) sampled database series with
// event marks. The engine writes into it; reports and rules only read it.
package timeline

import (
	"encoding/json"
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: latencies are recorded in microseconds, from 1 µs to one
// hour, with three significant digits (0.1 % value precision). Larger values
// are clamped to the maximum rather than lost.
const (
	HistLowest  = 1
	HistHighest = 3_600_000_000
	HistDigits  = 3
)

// Histogram is an HDR latency histogram in microseconds.
type Histogram struct {
	h *hdr.Histogram
}

// NewHistogram returns an empty latency histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdr.New(HistLowest, HistHighest, HistDigits)}
}

// Record adds one latency in microseconds; it never allocates.
func (h *Histogram) Record(us int64) {
	if us < HistLowest {
		us = HistLowest
	} else if us > HistHighest {
		us = HistHighest
	}
	_ = h.h.RecordValue(us) // cannot fail: the value is within bounds
}

// Merge adds every value of other into h.
func (h *Histogram) Merge(other *Histogram) { h.h.Merge(other.h) }

// Reset empties the histogram for reuse.
func (h *Histogram) Reset() { h.h.Reset() }

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Quantile returns the value (µs) at quantile q in [0, 100].
func (h *Histogram) Quantile(q float64) int64 {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return h.h.ValueAtQuantile(q)
}

// Max returns the largest recorded value (µs), 0 if empty.
func (h *Histogram) Max() int64 {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return h.h.Max()
}

// Min returns the smallest recorded value (µs), 0 if empty.
func (h *Histogram) Min() int64 {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return h.h.Min()
}

// Snapshot exports the histogram for serialization (JSON, run directories).
func (h *Histogram) Snapshot() *hdr.Snapshot { return h.h.Export() }

// StandardQuantiles are the percentiles firedrill reports everywhere.
var StandardQuantiles = [...]float64{50, 90, 95, 99, 99.9}

// Percentiles summarises a histogram with the standard quantiles and max.
type Percentiles struct {
	P50, P90, P95, P99, P999, Max int64 // microseconds
}

// Percentiles computes the standard summary of h.
func (h *Histogram) Percentiles() Percentiles {
	if h.h.TotalCount() == 0 {
		return Percentiles{}
	}
	v := h.h.ValueAtPercentilesSlice(StandardQuantiles[:])
	return Percentiles{P50: v[0], P90: v[1], P95: v[2], P99: v[3], P999: v[4], Max: h.h.Max()}
}

// MarshalJSON encodes the histogram as a string in HdrHistogram's compressed
// base64 format (the one every HdrHistogram library reads), a few hundred
// bytes for a typical interval.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	d, err := hdr.Decode([]byte(s))
	if err != nil {
		return fmt.Errorf("decode histogram: %w", err)
	}
	h.h = hdr.New(HistLowest, HistHighest, HistDigits)
	h.h.Merge(d)
	return nil
}

// Clone returns an independent copy of h.
func (h *Histogram) Clone() *Histogram {
	c := NewHistogram()
	c.h.Merge(h.h)
	return c
}
