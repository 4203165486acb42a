package timeline

import "github.com/firedrill/firedrill/internal/secret"

// redactRecord passes a record's free texts through redact: what an
// error or an event may have copied from a connection string.
func redactRecord(r Record, redact func(string) string) {
	if s := r.Sample; s != nil && s.Error != "" {
		s.Error = redact(s.Error)
	}
	if m := r.Mark; m != nil {
		redactMark(m, redact)
	}
}

func redactMark(m *Mark, redact func(string) string) {
	if m.Error != "" {
		m.Error = redact(m.Error)
	}
	if m.Outcome != "" {
		m.Outcome = redact(m.Outcome)
	}
	for k, v := range m.Detail {
		if s, ok := v.(string); ok && s != "" {
			m.Detail[k] = redact(s)
		}
	}
}

// RedactManifest passes the manifest's texts that may hold a connection
// string (the command line, the target's address, the error, the
// server's settings) through redact.
func RedactManifest(m *Manifest, redact func(string) string) {
	for i, a := range m.Command {
		m.Command[i] = redact(a)
	}
	m.Target.Address = redact(m.Target.Address)
	m.Error = redact(m.Error)
	RedactSettings(m.Settings, redact)
}

// RedactSettings passes server settings' values through redact, in place,
// and returns them: a standby's primary_conninfo may hold a password.
func RedactSettings(settings map[string]string, redact func(string) string) map[string]string {
	for k, v := range settings {
		if v != "" {
			settings[k] = redact(v)
		}
	}
	return settings
}

// RedactSummary passes the summary's error messages through redact.
func RedactSummary(s *Summary, redact func(string) string) {
	for i := range s.Workloads {
		for j := range s.Workloads[i].Errors {
			e := &s.Workloads[i].Errors[j]
			e.Message, e.Detail = redact(e.Message), redact(e.Detail)
		}
	}
}

// redact masks passwords, by their syntax, in everything a run read back
// shows: a run directory written before firedrill redacted, or copied
// from elsewhere, must not bring a password into a report.
func (r *Run) redact() {
	RedactManifest(&r.Manifest, secret.Redact)
	if r.Summary != nil {
		RedactSummary(r.Summary, secret.Redact)
	}
	for i := range r.Samples {
		if r.Samples[i].Error != "" {
			r.Samples[i].Error = secret.Redact(r.Samples[i].Error)
		}
	}
	for i := range r.Marks {
		redactMark(&r.Marks[i], secret.Redact)
	}
}
