package redisevent

import (
	"slices"
	"strings"
)

// serverWide are the commands that reach past the keys a command names:
// whole databases, the server's configuration, persistence, replication,
// users and other clients. On a given server they are refused in setup,
// command events and workloads' scripts unless --allow-outside-schema; a
// command listed with subcommands is refused only with one of them
// (CONFIG GET and CLIENT SETNAME are harmless). SELECT is here too: it
// would leave the URL's database.
var serverWide = map[string][]string{
	"FLUSHDB": nil, "FLUSHALL": nil, "SWAPDB": nil, "SELECT": nil, "MOVE": nil,
	"SHUTDOWN": nil, "DEBUG": nil, "MONITOR": nil, "SYNC": nil, "PSYNC": nil,
	"REPLICAOF": nil, "SLAVEOF": nil, "FAILOVER": nil, "CLUSTER": nil, "MIGRATE": nil,
	"SAVE": nil, "BGSAVE": nil, "BGREWRITEAOF": nil, "MODULE": nil,
	"CONFIG":   {"SET", "REWRITE", "RESETSTAT"},
	"ACL":      {"SETUSER", "DELUSER", "LOAD", "SAVE"},
	"CLIENT":   {"KILL", "PAUSE", "UNPAUSE", "NO-EVICT", "NO-TOUCH"},
	"SCRIPT":   {"FLUSH", "KILL"},
	"FUNCTION": {"FLUSH", "DELETE", "RESTORE", "LOAD", "KILL"},
	"LATENCY":  {"RESET"},
	"SLOWLOG":  {"RESET"},
	"MEMORY":   {"PURGE"},
}

// ServerWide says whether a command (its name and first argument, as
// written; "" when a variable gives it) reaches past the keys it names,
// and which command that is, for messages. A name or subcommand given by
// a variable might be any: it counts as server-wide.
func ServerWide(name, sub string) (string, bool) {
	if name == "" {
		return "a command whose name is a variable", true
	}
	name = strings.ToUpper(name)
	subs, listed := serverWide[name]
	if !listed {
		return "", false
	}
	if subs == nil {
		return name, true
	}
	if sub == "" {
		return name + " with a variable subcommand", true
	}
	sub = strings.ToUpper(sub)
	if slices.Contains(subs, sub) {
		return name + " " + sub, true
	}
	return "", false
}
