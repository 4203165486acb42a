package http

import (
	hm "github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/report/present"
)

var (
	_ present.Presenter = Backend{}
	_ promexport.Named  = Backend{}
)

// Presentation is how the report shows an HTTP run: the workloads'
// throughput and latency, then the service's charts (charts.go); compare
// weighs the replies by class and the requests without a reply.
func (Backend) Presentation() present.Kind {
	return present.Kind{
		Product: product,
		Charts:  append([]present.Chart{{Drawn: present.DrawnThroughput}, {Drawn: present.DrawnLatency}}, httpCharts()...),
		Load:    httpLoad(),
		Compare: &present.Compare{
			StallMS: 1000, // a service that answers nothing for a second has stalled
			Counters: []present.Counter{
				{Source: hm.Source, Key: hm.RequestsPerS, Label: "replies per second", Unit: "/s", Agg: present.Mean},
				{Source: hm.Source, Key: hm.Status5xx, Label: "5xx replies per second", Unit: "/s", Agg: present.Mean},
				{Source: hm.Source, Key: hm.Status4xx, Label: "4xx replies per second", Unit: "/s", Agg: present.Mean},
				{Source: hm.Source, Key: hm.ErrorsPerS, Label: "requests without a reply per second", Unit: "/s", Agg: present.Mean},
				{Source: hm.Source, Key: hm.MaxMS, Label: "longest request", Unit: "ms", Agg: present.Max},
			},
		},
		InstanceSettings: []string{"url"},
	}
}

// MetricNames are the http kind's keys, for the names and units of its
// series on /metrics (an endpoint becomes a label).
func (Backend) MetricNames() promexport.Names {
	var n promexport.Names
	for _, k := range hm.Keys {
		n.Keys = append(n.Keys, promexport.Key{Source: k.Source, Key: k.Key, Unit: k.Unit, Doc: k.Doc})
	}
	return n
}
