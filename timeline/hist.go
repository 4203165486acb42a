// Package timeline holds what a run measured, interval by interval:
// latency histograms, counters and (later) sampled database series with
// event marks. The engine writes into it; reports and rules only read it.
package timeline

import (
	"encoding/base64"
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
	// enc is the encoded form read from a run directory, decoded on first
	// use: a decoded histogram takes ~190 kB and ~2 ms to build, and most
	// readers only need the percentiles stored beside it.
	enc []byte
}

// hist returns the decoded histogram (an empty one if the encoding was bad,
// which UnmarshalJSON has already checked).
func (h *Histogram) hist() *hdr.Histogram {
	if h.h == nil {
		if d, err := hdr.Decode(h.enc); err == nil {
			h.h = d
		} else {
			h.h = hdr.New(HistLowest, HistHighest, HistDigits)
		}
		h.enc = nil
	}
	return h.h
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
	_ = h.hist().RecordValue(us) // cannot fail: the value is within bounds
}

// Merge adds every value of other into h.
func (h *Histogram) Merge(other *Histogram) { h.hist().Merge(other.hist()) }

// Subtract removes other's values from h, which must hold them (h is
// other merged with more): what a run measured after the intervals
// already reported, from its totals. A count other has beyond h's is
// taken as zero.
func (h *Histogram) Subtract(other *Histogram) {
	s, o := h.hist().Export(), other.hist().Export()
	for i := range min(len(s.Counts), len(o.Counts)) {
		s.Counts[i] = max(s.Counts[i]-o.Counts[i], 0)
	}
	h.h = hdr.Import(s)
}

// Reset empties the histogram for reuse.
func (h *Histogram) Reset() { h.hist().Reset() }

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.hist().TotalCount() }

// Quantile returns the value (µs) at quantile q in [0, 100].
func (h *Histogram) Quantile(q float64) int64 {
	if h.hist().TotalCount() == 0 {
		return 0
	}
	return h.hist().ValueAtQuantile(q)
}

// Max returns the largest recorded value (µs), 0 if empty.
func (h *Histogram) Max() int64 {
	if h.hist().TotalCount() == 0 {
		return 0
	}
	return h.hist().Max()
}

// Min returns the smallest recorded value (µs), 0 if empty.
func (h *Histogram) Min() int64 {
	if h.hist().TotalCount() == 0 {
		return 0
	}
	return h.hist().Min()
}

// Snapshot exports the histogram for serialization (JSON, run directories).
func (h *Histogram) Snapshot() *hdr.Snapshot { return h.hist().Export() }

// StandardQuantiles are the percentiles firedrill reports everywhere.
var StandardQuantiles = [...]float64{50, 90, 95, 99, 99.9}

// Percentiles summarises a histogram with the standard quantiles and max.
type Percentiles struct {
	P50, P90, P95, P99, P999, Max int64 // microseconds
}

// Percentiles computes the standard summary of h.
func (h *Histogram) Percentiles() Percentiles {
	if h.hist().TotalCount() == 0 {
		return Percentiles{}
	}
	v := h.hist().ValueAtPercentilesSlice(StandardQuantiles[:])
	return Percentiles{P50: v[0], P90: v[1], P95: v[2], P99: v[3], P999: v[4], Max: h.hist().Max()}
}

// MarshalJSON encodes the histogram as a string in HdrHistogram's compressed
// base64 format (the one every HdrHistogram library reads), a few hundred
// bytes for a typical interval.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	if h.h == nil && h.enc != nil {
		return json.Marshal(string(h.enc))
	}
	b, err := h.hist().Encode(hdr.V2CompressedEncodingCookieBase)
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
	// Check the encoding's header now, decode the counts when needed.
	if _, err := base64.StdEncoding.DecodeString(s); err != nil || len(s) < 8 {
		return fmt.Errorf("decode histogram: not an HdrHistogram encoding")
	}
	h.h, h.enc = nil, []byte(s)
	return nil
}

// Clone returns an independent copy of h.
func (h *Histogram) Clone() *Histogram {
	c := NewHistogram()
	c.h.Merge(h.hist())
	return c
}
