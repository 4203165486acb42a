package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/firedrill/firedrill/db/redis/redismetric"
)

// configured are the settings run.json records: what decides how Redis
// persists (and stalls on its disk), evicts, and admits clients. CONFIG
// GET takes patterns; each of these names one setting.
var configured = []string{
	"appendonly", "appendfsync", "no-appendfsync-on-rewrite", "auto-aof-rewrite-percentage",
	"auto-aof-rewrite-min-size", "aof-use-rdb-preamble", "save", "rdbcompression",
	"maxmemory", "maxmemory-policy", "maxclients", "timeout", "tcp-keepalive",
	"latency-monitor-threshold", "slowlog-log-slower-than", "slowlog-max-len",
	"io-threads", "hz", "lazyfree-lazy-eviction", "activedefrag", "databases",
}

// Settings reads the settings that matter with CONFIG GET, and the
// server's version (INFO server), which Info reports from then on.
func (tg *target) Settings(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := tg.dial(ctx, "firedrill-settings")
	if err != nil {
		return nil, fmt.Errorf("read the configuration: %w", err)
	}
	defer c.Close()
	commands := make([][]string, 0, len(configured)+1)
	for _, name := range configured {
		commands = append(commands, []string{"CONFIG", "GET", name})
	}
	commands = append(commands, []string{"INFO", "server"})
	replies, err := c.Pipeline(ctx, commands...)
	if err != nil {
		return nil, fmt.Errorf("read the configuration: %w", err)
	}
	settings := map[string]string{}
	for n, r := range replies[:len(configured)] {
		if r.Err != nil {
			// A server that renamed or forbade CONFIG (a managed
			// Redis): say so once rather than per setting.
			return nil, fmt.Errorf("read the configuration: CONFIG GET %s: %w", configured[n], r.Err)
		}
		pairs := r.Strings()
		for i := 0; i+1 < len(pairs); i += 2 {
			settings[pairs[i]] = pairs[i+1]
		}
	}
	if info := replies[len(configured)]; info.Err == nil {
		if v := infoField(info.Text(), "redis_version"); v != "" {
			settings["redis_version"] = v
			if tg.info.ServerVersion == "" {
				tg.info.ServerVersion = v
			}
		}
	}
	return settings, nil
}

// SettingsSource is the source of the snapshots taken after a settings event.
func (tg *target) SettingsSource() string { return redismetric.Config }

// infoField finds one field's value in INFO's "name:value" lines.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if value, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), name+":"); ok {
			return value
		}
	}
	return ""
}
