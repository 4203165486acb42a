// Package http is firedrill's kind for HTTP services (kind: http): a
// given service (url:, or --dsn NAME=http://…) or a small throwaway one
// of firedrill's own (db/http/instance), loaded by scripts in the HTTP
// dialect (db/http/httpdialect) on the engine's event loops
// (db/http/client), with the requests' counters sampled on the run's
// clock (db/http/sampler). It is not a database, but it plugs into the
// same seam as the databases' kinds, so it lives beside them under db/.
// Import it as httpkind.
package http

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/firedrill/firedrill/backend"
	httptarget "github.com/firedrill/firedrill/db/http/client"
	"github.com/firedrill/firedrill/db/http/httpdialect"
	httpinstance "github.com/firedrill/firedrill/db/http/instance"
	httprules "github.com/firedrill/firedrill/db/http/rules"
	httpsampler "github.com/firedrill/firedrill/db/http/sampler"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/timeline"
)

// Kind is the kind's name in scenarios and run.json.
const Kind = "http"

// product is what the target is for people (reports).
const product = "HTTP service"

// errorCodes is what the kind calls its error codes.
const errorCodes = "error"

// settingsSource is the timeline source of the target's settings.
const settingsSource = "http_settings"

// Backend is the http kind's backend.Backend.
type Backend struct{}

var (
	_ backend.Backend     = Backend{}
	_ backend.Schemed     = Backend{}
	_ backend.Keyed       = Backend{}
	_ backend.Dialected   = Backend{}
	_ backend.Passworder  = Backend{}
	_ backend.Ruled       = Backend{}
	_ backend.Secreted    = Backend{}
	_ backend.Preflighter = Backend{}
)

// New returns the http kind.
func New() Backend { return Backend{} }

// Kind is "http".
func (Backend) Kind() string { return Kind }

// Rules are the diagnosis rules of HTTP runs (db/http/rules): failed
// requests and status classes by endpoint, and the latency, with where
// its time went.
func (Backend) Rules() []diagnose.Rule { return httprules.Rules() }

// Schemes are the URL schemes of services: http and https.
func (Backend) Schemes() []string { return []string{"http", "https"} }

// Keys are the scenario keys only a target of kind http takes.
func (Backend) Keys() []string {
	return []string{"target.url", "target.headers", "target.connections", "target.timeout", "target.embedded", "target.database"}
}

// Dialect is the HTTP script dialect: requests between the meta-commands.
func (Backend) Dialect() script.Dialect { return httpdialect.Script() }

// Password is a secret a service URL carries in its query (a token=,
// api_key=, access_token= … parameter), so that it is masked too; the
// userinfo of any URL is masked without the kind.
func (Backend) Password(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return ""
	}
	for k, vs := range u.Query() {
		if httpdialect.SecretParam(k) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// Preflight refuses, before anything runs, a service URL firedrill
// cannot load (a scheme other than http or https, no host, a query).
func (Backend) Preflight(spec backend.Spec) error {
	if err := checkEmbedded(spec.Scenario); err != nil {
		return err
	}
	dsn := backend.GivenDSN(spec)
	if dsn == "" {
		return nil
	}
	_, err := httptarget.NewTarget(httptarget.Config{URL: dsn})
	return err
}

// Open takes the given service (url: or --dsn), checking that it
// answers a connection, or starts the embedded one it names (embedded:,
// in front of its database: target, embedded.go), or the throwaway one.
func (Backend) Open(ctx context.Context, spec backend.Spec) (backend.Target, error) {
	sc := spec.Scenario
	tg := &target{spec: spec, sc: sc}
	if dsn := backend.GivenDSN(spec); dsn != "" {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		tg.url = dsn
		tg.info = timeline.Target{Kind: Kind, Product: product, Address: u.Host + u.EscapedPath(), ErrorCodes: errorCodes}
		probe, err := tg.newTarget("firedrill-probe", &httptarget.Stats{})
		if err != nil {
			return nil, err
		}
		c, err := probe.Connect(ctx, 0)
		if err == nil {
			_ = c.Close()
			return tg, nil
		}
		// A service that none of its workloads loads at the start may be
		// one the scenario starts itself (a shell event): the workloads'
		// first connections give the same error if it never comes.
		if startsLater(sc) {
			if spec.Log != nil {
				fmt.Fprintf(spec.Log, "%v; its workloads start later, so the run goes on\n", err)
			}
			return tg, nil
		}
		return nil, err
	}
	if sc.Target.EmbeddedName != "" {
		run, svc, err := startEmbedded(ctx, spec)
		if err != nil {
			return nil, err
		}
		tg.inst, tg.url = run, run.URL()
		tg.info = timeline.Target{Kind: Kind, Product: product, Embedded: true, Address: run.Addr(),
			ServerVersion: svc.version, ErrorCodes: errorCodes}
		return tg, nil
	}
	inst, err := backend.KeptServer(spec.Keep,
		func() (*httpinstance.Instance, error) { return httpinstance.Start(ctx) },
		func(*httpinstance.Instance) error { return nil }, // in this process: up while it is
		(*httpinstance.Instance).Stop)
	if err != nil {
		return nil, err
	}
	tg.inst, tg.url = inst, inst.URL()
	tg.info = timeline.Target{Kind: Kind, Product: product, Embedded: true, Address: inst.Addr(),
		ServerVersion: httpinstance.Version, ErrorCodes: errorCodes}
	return tg, nil
}

// Secrets are what the scenario gives the service that must be masked:
// the target's header values (each, and the credential after "Bearer "
// alone), and in the scripts the literal values of secret headers
// (Authorization, Cookie, *token*, *api-key* …, and those the target's
// headers: name) and of secret query parameters (token=, api_key= …).
func (Backend) Secrets(sc *scenario.Scenario) []string {
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if v == "" {
			return
		}
		out = append(out, v)
		if _, cred, ok := strings.Cut(v, " "); ok { // "Bearer <token>": the token alone too
			out = append(out, strings.TrimSpace(cred))
		}
	}
	secretHeaders := map[string]bool{}
	for name, v := range sc.Target.Headers {
		add(v)
		secretHeaders[strings.ToLower(name)] = true
	}
	for _, w := range sc.Workloads {
		for _, src := range w.Scripts {
			text := []byte(src.Inline)
			if src.File != "" {
				b, err := os.ReadFile(sc.Resolve(src.File))
				if err != nil {
					continue // the run reports it where it reads the scripts
				}
				text = b
			}
			s, err := script.ParseDialect("secrets", text, script.NewSymbols(), httpdialect.Script())
			if err != nil {
				continue
			}
			for _, cmd := range s.Commands {
				req, ok := cmd.Custom.(*httpdialect.Request)
				if !ok {
					continue
				}
				for _, h := range req.Headers {
					if httpdialect.SecretHeader(h.Name) || secretHeaders[strings.ToLower(h.Name)] {
						for _, p := range h.Value.Parts {
							if p.Var == script.NoVar {
								add(p.Text)
							}
						}
					}
				}
				if _, q, ok := strings.Cut(req.Target.String(), "?"); ok {
					for _, kv := range strings.Split(q, "&") {
						if k, v, ok := strings.Cut(kv, "="); ok && httpdialect.SecretParam(k) && !strings.HasPrefix(v, ":") {
							add(v)
						}
					}
				}
			}
		}
	}
	return out
}

// target is one run's service.
type target struct {
	spec backend.Spec
	sc   *scenario.Scenario
	url  string
	inst service // the throwaway or embedded service; nil for a given one
	info timeline.Target
	// workloads are the counters of each workload's requests, which the
	// sampler adds up and Evidence breaks down.
	mu        sync.Mutex
	workloads []workloadStats
}

// workloadStats are one workload's request counters.
type workloadStats struct {
	name  string
	stats *httptarget.Stats
}

// stats lists the workloads' counters.
func (tg *target) stats() []*httptarget.Stats {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	out := make([]*httptarget.Stats, len(tg.workloads))
	for i, w := range tg.workloads {
		out[i] = w.stats
	}
	return out
}

var (
	_ backend.Target     = (*target)(nil)
	_ backend.Sampled    = (*target)(nil)
	_ backend.Configured = (*target)(nil)
	_ backend.Setupless  = (*target)(nil)
	_ backend.Evidenced  = (*target)(nil)
)

// newTarget makes the engine's target for the service.
func (tg *target) newTarget(appName string, stats *httptarget.Stats) (*httptarget.Target, error) {
	t := tg.sc.Target
	cfg := httptarget.Config{URL: tg.url, Timeout: t.Timeout, AppName: appName, Stats: stats}
	names := make([]string, 0, len(t.Headers))
	for name := range t.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cfg.Headers = append(cfg.Headers, httptarget.Header{Name: name, Value: t.Headers[name]})
	}
	return httptarget.NewTarget(cfg)
}

// Info describes the service for run.json: its host:port and path.
func (tg *target) Info() timeline.Target { return tg.info }

// Setup has nothing to do: a service is loaded as it is.
func (tg *target) Setup(context.Context) error { return nil }

// Setupless: the shards of a split run have no setup to wait for.
func (tg *target) Setupless() bool { return true }

// Workload makes the engine's target for one workload: keep-alive
// connections, one per client or the target's connections: shared.
func (tg *target) Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (backend.Workload, error) {
	stats := &httptarget.Stats{}
	t, err := tg.newTarget(appName, stats)
	if err != nil {
		return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
	}
	t.Prepare(scripts)
	tg.mu.Lock()
	tg.workloads = append(tg.workloads, workloadStats{name: spec.Name, stats: stats})
	tg.mu.Unlock()
	mode := "http/1.1"
	if strings.HasPrefix(tg.url, "https:") {
		mode = "https/1.1"
	}
	return backend.Workload{Target: t, Mode: mode, Pool: tg.sc.Target.Connections}, nil
}

// Samplers reads the requests' counters every tick, and the host.
func (tg *target) Samplers(context.Context, time.Duration) (*backend.Sampling, error) {
	req := httpsampler.NewSet(tg.stats)
	return &backend.Sampling{
		// The requests' sampler reads firedrill's own counters: it is
		// never a frozen service's.
		Sources: append([]sampler.Source{{Sampler: req, EveryTick: true}}, sampler.Schedule(nil, host.New(""))...),
		Close:   func() error { return nil },
	}, nil
}

// Settings are what the run was told of the service: its url, timeout,
// connections and the names of the headers it sends (values masked).
func (tg *target) Settings(context.Context) (map[string]string, error) {
	t := tg.sc.Target
	timeout := t.Timeout
	if timeout == 0 {
		timeout = httptarget.DefaultTimeout
	}
	conns := "one per client"
	if t.Connections > 0 {
		conns = strconv.Itoa(t.Connections)
	}
	out := map[string]string{"url": tg.redact(tg.url), "timeout": timeout.String(), "connections": conns, "redirects": "not followed"}
	if tg.inst != nil && t.EmbeddedName != "" {
		out["embedded"], out["database"] = t.EmbeddedName, t.Database
	}
	var names []string
	for name := range t.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		out["header."+name] = secret.Mask
	}
	return out, nil
}

func (tg *target) redact(s string) string {
	if tg.spec.Redact != nil {
		return tg.spec.Redact(s)
	}
	return s
}

// SettingsSource is the timeline source of a settings snapshot.
func (tg *target) SettingsSource() string { return settingsSource }

// Close stops the throwaway or embedded service (a throwaway one kept
// for the next run with --reuse-server stays up); a given one is left as
// it was.
func (tg *target) Close(frozen bool) error {
	if tg.inst != nil {
		if tg.spec.Keep.Leave(frozen) {
			return nil // kept running for the next run (--reuse-server)
		}
		return tg.inst.Stop()
	}
	return nil
}

// startsLater reports whether every workload of the scenario starts
// after the run does.
func startsLater(sc *scenario.Scenario) bool {
	if len(sc.Workloads) == 0 {
		return false
	}
	for _, w := range sc.Workloads {
		if w.Start <= 0 {
			return false
		}
	}
	return true
}
