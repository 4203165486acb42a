// Package redisdialect is the language Redis workloads' scripts are
// written in, for the backend, its events and its client alike.
package redisdialect

import "github.com/firedrill/firedrill/script"

// Script is one Redis command per line between the meta-commands, split
// into arguments as redis-cli splits what is typed at its prompt; a
// command Redis does not have (SETT) is refused when the script is read.
func Script() script.Dialect { return script.Dialect{Name: "redis", Lines: true, Commands: commands} }

// commands are Redis's commands: those of 7.0 (its COMMAND LIST, without
// subcommands) and the few later versions added (WAITAOF in 7.2, the hash
// field expiry commands of 7.4, HGETDEL/HGETEX/HSETEX of 8.0), so that a
// script written for a newer server still reads. Never changed after
// init: every Script() shares it.
var commands = script.NewCommands(
	"ACL", "APPEND", "ASKING", "AUTH", "BGREWRITEAOF", "BGSAVE", "BITCOUNT", "BITFIELD", "BITFIELD_RO",
	"BITOP", "BITPOS", "BLMOVE", "BLMPOP", "BLPOP", "BRPOP", "BRPOPLPUSH", "BZMPOP",
	"BZPOPMAX", "BZPOPMIN", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "COPY", "DBSIZE",
	"DEBUG", "DECR", "DECRBY", "DEL", "DISCARD", "DUMP", "ECHO", "EVAL",
	"EVALSHA", "EVALSHA_RO", "EVAL_RO", "EXEC", "EXISTS", "EXPIRE", "EXPIREAT", "EXPIRETIME",
	"FAILOVER", "FCALL", "FCALL_RO", "FLUSHALL", "FLUSHDB", "FUNCTION", "GEOADD", "GEODIST",
	"GEOHASH", "GEOPOS", "GEORADIUS", "GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO", "GEORADIUS_RO", "GEOSEARCH", "GEOSEARCHSTORE",
	"GET", "GETBIT", "GETDEL", "GETEX", "GETRANGE", "GETSET", "HDEL", "HELLO",
	"HEXISTS", "HGET", "HGETALL", "HINCRBY", "HINCRBYFLOAT", "HKEYS", "HLEN", "HMGET",
	"HMSET", "HRANDFIELD", "HSCAN", "HSET", "HSETNX", "HSTRLEN", "HVALS", "INCR",
	"INCRBY", "INCRBYFLOAT", "INFO", "KEYS", "LASTSAVE", "LATENCY", "LCS", "LINDEX",
	"LINSERT", "LLEN", "LMOVE", "LMPOP", "LOLWUT", "LPOP", "LPOS", "LPUSH",
	"LPUSHX", "LRANGE", "LREM", "LSET", "LTRIM", "MEMORY", "MGET", "MIGRATE",
	"MODULE", "MONITOR", "MOVE", "MSET", "MSETNX", "MULTI", "OBJECT", "PERSIST",
	"PEXPIRE", "PEXPIREAT", "PEXPIRETIME", "PFADD", "PFCOUNT", "PFDEBUG", "PFMERGE", "PFSELFTEST",
	"PING", "PSETEX", "PSUBSCRIBE", "PSYNC", "PTTL", "PUBLISH", "PUBSUB", "PUNSUBSCRIBE",
	"QUIT", "RANDOMKEY", "READONLY", "READWRITE", "RENAME", "RENAMENX", "REPLCONF", "REPLICAOF",
	"RESET", "RESTORE", "RESTORE-ASKING", "ROLE", "RPOP", "RPOPLPUSH", "RPUSH", "RPUSHX",
	"SADD", "SAVE", "SCAN", "SCARD", "SCRIPT", "SDIFF", "SDIFFSTORE", "SELECT",
	"SET", "SETBIT", "SETEX", "SETNX", "SETRANGE", "SHUTDOWN", "SINTER", "SINTERCARD",
	"SINTERSTORE", "SISMEMBER", "SLAVEOF", "SLOWLOG", "SMEMBERS", "SMISMEMBER", "SMOVE", "SORT",
	"SORT_RO", "SPOP", "SPUBLISH", "SRANDMEMBER", "SREM", "SSCAN", "SSUBSCRIBE", "STRLEN",
	"SUBSCRIBE", "SUBSTR", "SUNION", "SUNIONSTORE", "SUNSUBSCRIBE", "SWAPDB", "SYNC", "TIME",
	"TOUCH", "TTL", "TYPE", "UNLINK", "UNSUBSCRIBE", "UNWATCH", "WAIT", "WATCH",
	"XACK", "XADD", "XAUTOCLAIM", "XCLAIM", "XDEL", "XGROUP", "XINFO", "XLEN",
	"XPENDING", "XRANGE", "XREAD", "XREADGROUP", "XREVRANGE", "XSETID", "XTRIM", "ZADD",
	"ZCARD", "ZCOUNT", "ZDIFF", "ZDIFFSTORE", "ZINCRBY", "ZINTER", "ZINTERCARD", "ZINTERSTORE",
	"ZLEXCOUNT", "ZMPOP", "ZMSCORE", "ZPOPMAX", "ZPOPMIN", "ZRANDMEMBER", "ZRANGE", "ZRANGEBYLEX",
	"ZRANGEBYSCORE", "ZRANGESTORE", "ZRANK", "ZREM", "ZREMRANGEBYLEX", "ZREMRANGEBYRANK", "ZREMRANGEBYSCORE", "ZREVRANGE",
	"ZREVRANGEBYLEX", "ZREVRANGEBYSCORE", "ZREVRANK", "ZSCAN", "ZSCORE", "ZUNION", "ZUNIONSTORE",
	"WAITAOF",
	"HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT", "HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME", "HPERSIST",
	"HGETDEL", "HGETEX", "HSETEX",
)
