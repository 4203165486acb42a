package capacity

import (
	"encoding/json"
	"io"
	"math"
)

// JSONFile is the result a capacity search writes into its directory.
const JSONFile = "capacity.json"

// JSONSchema names the format of capacity.json and --json.
const JSONSchema = "firedrill.capacity-result/v1"

type jsonUSL struct {
	Sigma  float64  `json:"sigma"`
	Kappa  float64  `json:"kappa"`
	Lambda float64  `json:"lambda"`
	R2     float64  `json:"r2"`
	MinN   float64  `json:"min_n"`
	MaxN   float64  `json:"max_n"`
	PeakN  *float64 `json:"peak_n,omitempty"`   // absent beyond 2× the measured range
	PeakX  *float64 `json:"peak_tps,omitempty"` // likewise
}

type jsonResult struct {
	Schema   string   `json:"schema"`
	Scenario string   `json:"scenario"`
	Workload string   `json:"workload"`
	SLOs     []string `json:"slos"`
	Server   string   `json:"server"`
	Dir      string   `json:"dir"`
	*Result
	Knee   float64  `json:"knee_tps,omitempty"`
	USL    *jsonUSL `json:"usl,omitempty"`
	FitErr string   `json:"usl_error,omitempty"`
}

// WriteJSON writes the report as JSON (schema JSONSchema): the steps
// with their measures and what bound them, the result, the fit.
func WriteJSON(w io.Writer, r *Report) error {
	out := jsonResult{Schema: JSONSchema, Scenario: r.Scenario, Workload: r.Workload, Server: r.Server, Dir: r.Dir,
		Result: r.Result, Knee: r.Result.Knee(), FitErr: r.FitErr, SLOs: []string{}}
	for _, o := range r.SLOs {
		out.SLOs = append(out.SLOs, o.Text)
	}
	if u := r.USL; u != nil {
		j := &jsonUSL{Sigma: u.Sigma, Kappa: u.Kappa, Lambda: u.Lambda, R2: u.R2, MinN: u.MinN, MaxN: u.MaxN}
		if n, x, ok := u.Peak(); ok && !math.IsInf(n, 0) {
			j.PeakN, j.PeakX = &n, &x
		}
		out.USL = j
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
