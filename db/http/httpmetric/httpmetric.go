// Package httpmetric names everything the http kind records: its timeline
// source, the value keys (for all requests and per endpoint) and the
// error codes of failed transactions. It is the one owner of those names:
// db/http/sampler writes them, and the rules, reports and /metrics read
// them through this package.
//
// It is a leaf: it imports nothing of firedrill's.
package httpmetric

// Source is the timeline source of the HTTP requests' series.
const Source = "http"

// Value keys of Source for all requests of the target; each also exists
// per endpoint as <endpoint><key-as-suffix> (EndpointKey).
const (
	RequestsPerS = "requests_per_s" // replies per second
	Status1xx    = "status_1xx"     // replies per second by status class
	Status2xx    = "status_2xx"
	Status3xx    = "status_3xx"
	Status4xx    = "status_4xx"
	Status5xx    = "status_5xx"
	ErrorsPerS   = "errors_per_s" // requests with no reply (timeout, lost, refused) per second
	P50MS        = "p50_ms"       // request latency percentiles in the interval, ms
	P99MS        = "p99_ms"
	MaxMS        = "max_ms"
)

// StatusClass is the key of replies per second of class (1 to 5).
func StatusClass(class int) string {
	return [...]string{"", Status1xx, Status2xx, Status3xx, Status4xx, Status5xx}[class]
}

// The suffixes of the per-endpoint keys: <endpoint>.<key>, e.g.
// "GET /journals.p99_ms". An endpoint is a request's method and its path
// as written, before '?'.
const (
	RequestsPerSSuffix = "." + RequestsPerS
	ErrorsPerSSuffix   = "." + ErrorsPerS
	P50MSSuffix        = "." + P50MS
	P99MSSuffix        = "." + P99MS
	MaxMSSuffix        = "." + MaxMS
	Status1xxSuffix    = "." + Status1xx
	Status2xxSuffix    = "." + Status2xx
	Status3xxSuffix    = "." + Status3xx
	Status4xxSuffix    = "." + Status4xx
	Status5xxSuffix    = "." + Status5xx
)

// EndpointKey is an endpoint's key of one series: EndpointKey("GET
// /journals", P99MS) is "GET /journals.p99_ms".
func EndpointKey(endpoint, key string) string { return endpoint + "." + key }

// Codes of failed transactions (engine.DBError.Code), beside the
// engine's own for connections (08001 refused or unreachable, 08006
// lost).
const (
	// CodeCheck is a \check that failed.
	CodeCheck = "check"
	// CodeTimeout is a request without its whole reply within the
	// target's timeout.
	CodeTimeout = "timeout"
	// CodeStatusPrefix + the status ("http-503") is a status of 400 or
	// more on a request with no \check of its status.
	CodeStatusPrefix = "http-"
	// CodeProtocol is a reply that is not HTTP/1.x.
	CodeProtocol = "http-protocol"
)

// Key describes one value key for /metrics and the docs.
type Key struct {
	Source, Key, Unit, Doc string
}

// Keys lists every key, the per-endpoint ones with the placeholder
// <endpoint>.
var Keys = func() []Key {
	all := []Key{
		{Source, RequestsPerS, "1/s", "HTTP replies per second"},
		{Source, Status1xx, "1/s", "HTTP replies with a 1xx status per second"},
		{Source, Status2xx, "1/s", "HTTP replies with a 2xx status per second"},
		{Source, Status3xx, "1/s", "HTTP replies with a 3xx status per second"},
		{Source, Status4xx, "1/s", "HTTP replies with a 4xx status per second"},
		{Source, Status5xx, "1/s", "HTTP replies with a 5xx status per second"},
		{Source, ErrorsPerS, "1/s", "HTTP requests without a reply (timeout, lost or refused connection) per second"},
		{Source, P50MS, "ms", "median HTTP request latency in the interval"},
		{Source, P99MS, "ms", "99th percentile HTTP request latency in the interval"},
		{Source, MaxMS, "ms", "longest HTTP request in the interval"},
	}
	n := len(all)
	for _, k := range all[:n] {
		all = append(all, Key{Source, "<endpoint>." + k.Key, k.Unit, k.Doc + ", per endpoint"})
	}
	return all
}()
