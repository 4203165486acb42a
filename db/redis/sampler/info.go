package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler"
)

// Source "redis_info" reads INFO (its default sections) once a second.
//
//	aof_enabled 0..1
//	aof_delayed_fsync count
//	aof_delayed_fsync_total count
//	aof_pending_bio_fsync count
//	aof_last_write_ok 0..1
//	aof_rewrite_in_progress 0..1
//	rdb_bgsave_in_progress 0..1
//	ops_per_s 1/s
//	instantaneous_ops_per_sec 1/s
//	instantaneous_input_kbps KB/s
//	instantaneous_output_kbps KB/s
//	latest_fork_usec µs
//	forks count
//	evicted_keys count
//	expired_keys count
//	rejected_connections count
//	rejected_connections_total count
//	connected_clients clients
//	blocked_clients clients
//	maxclients clients
//	used_memory_bytes bytes
//	maxmemory_bytes bytes
//	mem_fragmentation_ratio ratio
//	cpu_cores cores
type info struct {
	session  *session
	counters sampler.Counters
}

var _ sampler.Sampler = (*info)(nil)

func (*info) Name() string { return rm.Info }

// infoGauges are INFO fields recorded as they are, by their key.
var infoGauges = map[string]string{
	"aof_enabled":               rm.AOFEnabled,
	"aof_pending_bio_fsync":     rm.AOFPendingBioFsync,
	"aof_rewrite_in_progress":   rm.AOFRewriteInProgress,
	"rdb_bgsave_in_progress":    rm.RDBBgsaveInProgress,
	"instantaneous_ops_per_sec": rm.InstantaneousOpsPerS,
	"instantaneous_input_kbps":  rm.InstantaneousInKbps,
	"instantaneous_output_kbps": rm.InstantaneousOutKbps,
	"latest_fork_usec":          rm.LatestForkUsec,
	"connected_clients":         rm.ConnectedClients,
	"blocked_clients":           rm.BlockedClients,
	"maxclients":                rm.MaxClients,
	"used_memory":               rm.UsedMemoryBytes,
	"maxmemory":                 rm.MaxMemoryBytes,
	"mem_fragmentation_ratio":   rm.MemFragmentationRatio,
	"aof_delayed_fsync":         rm.AOFDelayedFsyncTotal,
	"rejected_connections":      rm.RejectedConnsTotal,
}

// infoDeltas are INFO counters recorded per interval: INFO field → key.
var infoDeltas = map[string]string{
	"aof_delayed_fsync":    rm.AOFDelayedFsync,
	"total_forks":          rm.Forks,
	"evicted_keys":         rm.EvictedKeys,
	"expired_keys":         rm.ExpiredKeys,
	"rejected_connections": rm.RejectedConnections,
}

func (s *info) Sample(ctx context.Context) (map[string]float64, any, error) {
	reply, err := s.session.do(ctx, "INFO")
	if err != nil {
		return nil, nil, err
	}
	fields := parseInfo(reply.Str)
	if len(fields) == 0 {
		return nil, nil, fmt.Errorf("INFO: no fields in the reply")
	}
	values := map[string]float64{}
	for field, key := range infoGauges {
		if v, ok := infoNumber(fields, field); ok {
			values[key] = v
		}
	}
	if status, ok := fields["aof_last_write_status"]; ok {
		values[rm.AOFLastWriteOK] = boolValue(status == "ok")
	}
	counters := map[string]float64{}
	for field := range infoDeltas {
		if v, ok := infoNumber(fields, field); ok {
			counters[field] = v
		}
	}
	if v, ok := infoNumber(fields, "total_commands_processed"); ok {
		counters["total_commands_processed"] = v
	}
	sys, okSys := infoNumber(fields, "used_cpu_sys")
	user, okUser := infoNumber(fields, "used_cpu_user")
	if okSys && okUser {
		counters["used_cpu"] = sys + user
	}
	iv := s.counters.Next(time.Now(), counters)
	for field, key := range infoDeltas {
		if d, ok := iv.Delta(field); ok {
			values[key] = d
		}
	}
	if rate, ok := iv.Rate("total_commands_processed"); ok {
		values[rm.OpsPerS] = rate
	}
	if cores, ok := iv.Rate("used_cpu"); ok && cores >= 0 {
		values[rm.CPUCores] = cores
	}
	return values, nil, nil
}

// parseInfo reads INFO's text: "field:value" lines under "# Section"
// headers, CRLF or LF. Lines without a colon and headers are skipped; a
// field given twice keeps its last value.
func parseInfo(text string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		field, value, ok := strings.Cut(line, ":")
		if !ok || field == "" {
			continue
		}
		fields[field] = value
	}
	return fields
}

// infoNumber is a field as a finite number.
func infoNumber(fields map[string]string, field string) (float64, bool) {
	text, ok := fields[field]
	if !ok {
		return 0, false
	}
	return finite(text)
}

// finite parses a decimal number, refusing NaN and infinities.
func finite(text string) (float64, bool) {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || v != v || v > 1e300 || v < -1e300 {
		return 0, false
	}
	return v, true
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
