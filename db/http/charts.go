package http

import (
	hm "github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/report/present"
)

// httpCharts are an HTTP run's service charts: replies by status class,
// and each endpoint's rate and p99.
func httpCharts() []present.Chart {
	return []present.Chart{
		{
			ID: "http-status", Title: "Replies by status class",
			Help: "The service's replies per second by status class (stacked), and requests that got no reply (a timeout, a lost or refused connection; red, right). A status of 400 or more fails its transaction unless the script checks the status itself (\\check status …).",
			Axes: []present.Axis{{Label: "replies/s", Unit: "rate", Min: present.Zero()}, {Label: "no reply/s", Unit: "rate", Min: present.Zero(), Headroom: 2}},
			What: "HTTP replies",
			Series: []present.Series{
				{Source: hm.Source, Key: hm.Status2xx, Label: "2xx", Color: "#2ca02c", Stack: true, Width: 1, ZeroWhenAbsent: true},
				{Source: hm.Source, Key: hm.Status3xx, Label: "3xx", Color: "#1f77b4", Stack: true, Width: 1, SkipIfZero: true},
				{Source: hm.Source, Key: hm.Status4xx, Label: "4xx", Color: "#ff7f0e", Stack: true, Width: 1, SkipIfZero: true},
				{Source: hm.Source, Key: hm.Status5xx, Label: "5xx", Color: "#d62728", Stack: true, Width: 1, SkipIfZero: true},
				{Source: hm.Source, Key: hm.Status1xx, Label: "1xx", Color: "#7f7f7f", Stack: true, Width: 1, SkipIfZero: true},
				{Source: hm.Source, Key: hm.ErrorsPerS, Label: "no reply", Color: "#d62728", Style: "dash", Width: 2, Axis: 1, SkipIfZero: true},
			},
		},
		{
			ID: "http-endpoint-rate", Title: "Requests per endpoint",
			Help: "Replies per second of each endpoint (the method and the path as the script writes it, :variables unexpanded).",
			Axes: []present.Axis{{Label: "replies/s", Unit: "rate", Min: present.Zero()}},
			What: "HTTP replies per endpoint",
			Series: []present.Series{
				{Source: hm.Source, Suffix: hm.RequestsPerSSuffix, Top: 8, Width: 1.5},
			},
		},
		{
			ID: "http-endpoint-p99", Title: "p99 latency per endpoint",
			Help: "The 99th percentile of each endpoint's request latency in each interval (from sending the request to its reply's last byte; the transaction's latency, from its intended start, is in the latency chart above), and the median of all requests (dashed).",
			Axes: []present.Axis{{Label: "p99", Unit: "ms", Min: present.Zero()}},
			Log:  true,
			What: "HTTP request latency per endpoint",
			Series: []present.Series{
				{Source: hm.Source, Suffix: hm.P99MSSuffix, Top: 8, Width: 1.5},
				{Source: hm.Source, Key: hm.P50MS, Label: "median, all endpoints", Color: "#555555", Style: "dash", Width: 1},
			},
		},
		{
			ID: "http-endpoint-errors", Title: "Failing replies per endpoint",
			Help: "Replies per second with a 5xx status (solid) and requests without a reply (timeouts, lost connections) of each endpoint.",
			Axes: []present.Axis{{Label: "per second", Unit: "rate", Min: present.Zero()}},
			What: "5xx replies and requests without a reply",
			Series: []present.Series{
				{Source: hm.Source, Suffix: hm.Status5xxSuffix, Top: 6, Width: 1.5, SkipIfZero: true},
				{Source: hm.Source, Suffix: hm.ErrorsPerSSuffix, Top: 6, Width: 1, Style: "dash", SkipIfZero: true},
			},
		},
	}
}

// httpLoad is the compare page's load: the service's replies per second.
func httpLoad() *present.Load {
	return &present.Load{
		Title:  "HTTP replies per second",
		Help:   "The service's replies per second, all endpoints; each run from its own start.",
		Axis:   present.Axis{Label: "replies/s", Unit: "rate", Min: present.Zero()},
		Source: hm.Source, Key: hm.RequestsPerS,
	}
}
