package http

import (
	"github.com/firedrill/firedrill/backend"
	httprules "github.com/firedrill/firedrill/db/http/rules"
	"github.com/firedrill/firedrill/diagnose"
)

var _ backend.Ruled = Backend{}

// Rules are the HTTP rules (db/http/rules): failed requests and status
// classes by endpoint, and the latency, with where its time went.
func (Backend) Rules() []diagnose.Rule { return httprules.Rules() }
