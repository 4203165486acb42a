package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// pgBlockBytes is PostgreSQL's block size (BLCKSZ), the unit of
// buffers and temp_blks_written.
const pgBlockBytes = 8192

// settingAt is a server setting as it stood at t seconds: the last
// pg_settings snapshot (taken when a settings event changed something)
// at or before t, else the run's settings at its start; def if neither
// has it.
func settingAt(run *timeline.Run, name string, t float64, def string) string {
	value := diagnose.Setting(run, name, def)
	for i := range run.Samples {
		s := &run.Samples[i]
		if s.Source != pgmetric.Settings || s.T > t || s.Error != "" {
			continue
		}
		var settings map[string]string
		if diagnose.Detail(s, &settings) {
			if v, ok := settings[name]; ok && v != "" {
				value = v
			}
		}
	}
	return value
}

// pgUnits are the multipliers of PostgreSQL's memory units (1024-based,
// as the server reads them) and time units (to seconds).
var (
	pgByteUnits   = map[string]float64{"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
	pgSecondUnits = map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400}
)

// parsePGUnit reads a setting as current_setting shows it ("32MB",
// "5min", "0") with units; bare numbers are in bare (the setting's own
// unit). ok is false for anything else ("-1", "on").
func parsePGUnit(text string, units map[string]float64, bare float64) (float64, bool) {
	text = strings.TrimSpace(text)
	i := len(text)
	for i > 0 && (text[i-1] < '0' || text[i-1] > '9') {
		i--
	}
	num, unit := text[:i], strings.TrimSpace(text[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	if unit == "" {
		return v * bare, true
	}
	m, ok := units[unit]
	if !ok {
		return 0, false
	}
	return v * m, true
}

// pgBytes reads a memory setting in bytes ("32MB" → 33554432); bare is
// the setting's own unit in bytes (8192 for a number of blocks).
func pgBytes(text string, bare float64) (float64, bool) { return parsePGUnit(text, pgByteUnits, bare) }

// pgSeconds reads a time setting in seconds ("5min" → 300); bare is the
// setting's own unit in seconds (1e-3 for milliseconds).
func pgSeconds(text string, bare float64) (float64, bool) {
	return parsePGUnit(text, pgSecondUnits, bare)
}

// pgSize writes bytes as a value a setting accepts, rounded up to a
// whole number of the largest unit that keeps it ≥ 1: "16GB", "640MB",
// "96kB".
func pgSize(b float64) string {
	for _, u := range []struct {
		name string
		size float64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}} {
		if b >= u.size {
			return fmt.Sprintf("%.0f%s", math.Ceil(b/u.size), u.name)
		}
	}
	return "1kB"
}
