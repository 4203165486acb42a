package engine

import (
	"testing"
	"time"
)

// The reconnect backoff doubles from reconnectMin to reconnectMax with
// each failure in a row, the second half of each delay random, and stays
// at reconnectMax however long the server refuses.
func TestReconnectDelay(t *testing.T) {
	t.Parallel()
	c := &client{id: 3, r: &run{cfg: &Config{RandomSeed: 1}}}
	for _, tc := range []struct {
		fails int
		full  time.Duration
	}{
		{1, 10 * time.Millisecond},
		{2, 20 * time.Millisecond},
		{4, 80 * time.Millisecond},
		{7, 640 * time.Millisecond},
		{8, time.Second},
		{100, time.Second},
	} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := c.reconnectDelay(tc.fails)
			if d < tc.full/2 || d > tc.full {
				t.Fatalf("after %d failures: %v, want %v–%v", tc.fails, d, tc.full/2, tc.full)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("after %d failures: %d distinct delays in 50: no jitter", tc.fails, len(seen))
		}
	}
}

// FaultOf reads the target's classification, and the engine's own codes
// when a target set none.
func TestFaultOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err            error
		fault, connect ConnFault
	}{
		{&DBError{Code: "53300", Fault: Refused}, Refused, Refused},
		{&DBError{Code: "57P01", Fault: Lost}, Lost, Unavailable},
		{&DBError{Code: CodeConnect}, Unavailable, Unavailable},
		{&DBError{Code: CodeConnection}, Lost, Unavailable},
		{&DBError{Code: "28P01"}, NoFault, NoFault},
		{&Failure{Kind: Deadlock, Err: &DBError{Code: "40P01"}}, NoFault, NoFault},
		{errPoolTimeout, NoFault, NoFault},
	} {
		if got := FaultOf(tc.err); got != tc.fault {
			t.Errorf("FaultOf(%v) = %v, want %v", tc.err, got, tc.fault)
		}
		if got := connectFault(tc.err); got != tc.connect {
			t.Errorf("connectFault(%v) = %v, want %v", tc.err, got, tc.connect)
		}
	}
}
