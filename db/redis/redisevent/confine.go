package redisevent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The lexical check: on a given server, what a command's words say it
// would reach past firedrill's keys, so that `validate` and the run refuse
// it before any load (unless --allow-outside-schema). It is an early
// warning only: the confined ACL user the run connects as is what the
// server enforces, and it refuses all of this too, command by command,
// however the command is spelled or wherever (a Lua script) it is called.

// serverWide are the commands that reach past the keys a command names:
// whole databases, the server's configuration, persistence, replication,
// users and other clients. On a given server they are refused in setup,
// command events and workloads' scripts unless --allow-outside-schema; a
// command listed with subcommands is refused only with one of them
// (CONFIG GET and CLIENT SETNAME are harmless). SELECT is here too: it
// would leave the URL's database; KEYS and SORT (BY and GET read other
// keys) are what the confined user is refused as @dangerous.
var serverWide = map[string][]string{
	"FLUSHDB": nil, "FLUSHALL": nil, "SWAPDB": nil, "SELECT": nil, "MOVE": nil,
	"SHUTDOWN": nil, "DEBUG": nil, "MONITOR": nil, "SYNC": nil, "PSYNC": nil,
	"REPLICAOF": nil, "SLAVEOF": nil, "FAILOVER": nil, "CLUSTER": nil, "MIGRATE": nil,
	"SAVE": nil, "BGSAVE": nil, "BGREWRITEAOF": nil, "MODULE": nil, "KEYS": nil,
	"SORT": nil, "SORT_RO": nil, "RESTORE": nil,
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

// Word is one argument of a command as written: its text, or with Var
// the literal text before the first variable that gives the rest.
type Word struct {
	Text string
	Var  bool
}

// Literal is a command whose every argument is written out.
func Literal(args ...string) []Word {
	words := make([]Word, len(args))
	for i, a := range args {
		words[i] = Word{Text: a}
	}
	return words
}

// keys says which arguments of a command name keys, for the commands a
// workload most often writes (Redis's own key specs are richer: this is
// the early warning, the ACL user's key pattern is the guard).
type keys int

const (
	firstKey   keys = iota + 1 // GET k …
	allKeys                    // DEL k1 k2 …
	allButLast                 // BLPOP k1 k2 timeout
	pairKeys                   // MSET k1 v1 k2 v2
	twoKeys                    // RENAME src dst
	secondKey                  // OBJECT ENCODING k
	numKeys                    // EVAL body numkeys k1 … arg …
)

// keyed are the commands whose keys the check reads.
var keyed = func() map[string]keys {
	m := map[string]keys{}
	for _, name := range strings.Fields(`GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND INCR INCRBY
		INCRBYFLOAT DECR DECRBY STRLEN GETRANGE SETRANGE SUBSTR GETBIT SETBIT BITCOUNT BITPOS BITFIELD
		BITFIELD_RO LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS
		HSET HSETNX HGET HMSET HMGET HDEL HLEN HKEYS HVALS HGETALL HEXISTS HINCRBY HINCRBYFLOAT HSTRLEN
		HSCAN HRANDFIELD SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SSCAN ZADD ZREM
		ZRANGE ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZRANK ZREVRANK ZSCORE
		ZMSCORE ZCARD ZCOUNT ZLEXCOUNT ZINCRBY ZPOPMIN ZPOPMAX ZREMRANGEBYRANK ZREMRANGEBYSCORE
		ZREMRANGEBYLEX ZSCAN ZRANDMEMBER XADD XLEN XRANGE XREVRANGE XDEL XTRIM XACK XCLAIM XAUTOCLAIM
		XPENDING XSETID EXPIRE PEXPIRE EXPIREAT PEXPIREAT EXPIRETIME PEXPIRETIME TTL PTTL PERSIST TYPE
		DUMP PFADD GEOADD GEODIST GEOHASH GEOPOS GEOSEARCH GEORADIUS GEORADIUSBYMEMBER LMPOP`) {
		m[name] = firstKey
	}
	for _, name := range strings.Fields(`DEL UNLINK EXISTS MGET TOUCH WATCH SINTER SUNION SDIFF
		SINTERSTORE SUNIONSTORE SDIFFSTORE PFCOUNT PFMERGE`) {
		m[name] = allKeys
	}
	for _, name := range strings.Fields("BLPOP BRPOP BZPOPMIN BZPOPMAX") {
		m[name] = allButLast
	}
	for _, name := range strings.Fields("MSET MSETNX") {
		m[name] = pairKeys
	}
	for _, name := range strings.Fields("RENAME RENAMENX COPY SMOVE RPOPLPUSH LMOVE BLMOVE GEOSEARCHSTORE") {
		m[name] = twoKeys
	}
	for _, name := range strings.Fields("OBJECT MEMORY") {
		m[name] = secondKey
	}
	for _, name := range strings.Fields("EVAL EVAL_RO EVALSHA EVALSHA_RO FCALL FCALL_RO") {
		m[name] = numKeys
	}
	return m
}()

// Reaches lists what a command (its words, the name first) would reach
// past firedrill's keys on a given server: a server-wide command, a key
// written out that is not firedrill:…, another database (COPY … DB n),
// and what the Lua body of EVAL, SCRIPT LOAD or FUNCTION LOAD calls
// (redis.call('FLUSHDB'), a user's key) where the body shows it. A word a
// variable gives is judged by the text before the variable: ambiguous, it
// passes (the ACL user's privileges decide then). Nil when nothing.
func Reaches(words []Word) []string {
	if len(words) == 0 {
		return nil
	}
	name := ""
	if !words[0].Var {
		name = strings.ToUpper(words[0].Text)
	}
	sub := ""
	if len(words) > 1 && !words[1].Var {
		sub = words[1].Text
	}
	var out []string
	if what, wide := ServerWide(name, sub); wide {
		out = append(out, what)
	}
	if name == "" {
		return out
	}
	for _, k := range keyWords(name, words) {
		if outsideKey(k) {
			out = append(out, fmt.Sprintf("%s of the key %q, not under %s", name, k.Text, KeyPrefix))
		}
	}
	if name == "SCAN" && !scansOwnKeys(words) {
		out = append(out, "SCAN of keys that are not firedrill's (give MATCH "+KeyPrefix+"*)")
	}
	if name == "COPY" {
		for i := 3; i+1 < len(words); i++ {
			if strings.EqualFold(words[i].Text, "DB") && !words[i].Var {
				out = append(out, fmt.Sprintf("COPY … DB %s (another database)", words[i+1].Text))
			}
		}
	}
	if body, ok := luaBody(name, words); ok {
		label := name
		if name == "SCRIPT" || name == "FUNCTION" {
			label += " LOAD"
		}
		for _, what := range luaReaches(body.Text) {
			out = append(out, label+" body: "+what)
		}
	}
	return out
}

// scansOwnKeys says whether a SCAN matches only firedrill's keys (MATCH
// firedrill:…), or a variable may give its pattern.
func scansOwnKeys(words []Word) bool {
	for i := 2; i+1 < len(words); i++ {
		if words[i].Var || !strings.EqualFold(words[i].Text, "MATCH") {
			continue
		}
		return !outsideKey(words[i+1])
	}
	return false
}

// keyWords are the words of a command that name keys.
func keyWords(name string, words []Word) []Word {
	args := words[1:]
	switch keyed[name] {
	case firstKey:
		if len(args) > 0 {
			return args[:1]
		}
	case allKeys:
		return args
	case allButLast:
		if len(args) > 1 {
			return args[:len(args)-1]
		}
	case pairKeys:
		var ks []Word
		for i := 0; i < len(args); i += 2 {
			ks = append(ks, args[i])
		}
		return ks
	case twoKeys:
		return args[:min(2, len(args))]
	case secondKey:
		if len(args) > 1 {
			return args[1:2]
		}
	case numKeys:
		if len(args) < 2 || args[1].Var {
			return nil
		}
		n, err := strconv.Atoi(args[1].Text)
		if err != nil || n < 0 {
			return nil
		}
		return args[2:min(2+n, len(args))]
	}
	return nil
}

// outsideKey says whether a key word is surely not firedrill's: written
// out, or its text before a variable, departs from firedrill:.
func outsideKey(w Word) bool {
	if strings.HasPrefix(w.Text, KeyPrefix) {
		return false
	}
	return !w.Var || !strings.HasPrefix(KeyPrefix, w.Text)
}

// luaBody is the Lua source a command carries: EVAL's and EVAL_RO's
// script, SCRIPT LOAD's, FUNCTION LOAD's library (its last word).
func luaBody(name string, words []Word) (Word, bool) {
	switch {
	case (name == "EVAL" || name == "EVAL_RO") && len(words) > 1:
		return words[1], true
	case name == "SCRIPT" && len(words) > 2 && strings.EqualFold(words[1].Text, "LOAD"):
		return words[2], true
	case name == "FUNCTION" && len(words) > 2 && strings.EqualFold(words[1].Text, "LOAD"):
		return words[len(words)-1], true
	}
	return Word{}, false
}

// luaNamed are the server-wide commands whose name in any string of a Lua
// body is refused: no hash field or value is likely to be called so
// (unlike SELECT, KEYS or SAVE).
var luaNamed = []string{"FLUSHDB", "FLUSHALL", "SWAPDB", "SHUTDOWN", "MIGRATE", "REPLICAOF", "SLAVEOF",
	"FAILOVER", "BGREWRITEAOF", "BGSAVE"}

// luaReaches lists what a Lua body's redis.call / redis.pcall (and
// server.call) calls would reach past firedrill's keys, judged as a
// command of its literal string arguments, and every string literal of
// the body that is a server-wide command's name (local c = 'FLUSHDB';
// redis.call(c)). An argument Lua computes ends what the call shows.
func luaReaches(body string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(what string) {
		if !seen[what] {
			seen[what] = true
			out = append(out, what)
		}
	}
	lx := luaLexer{src: body}
	for {
		tok, ok := lx.next()
		if !ok {
			break
		}
		switch {
		case tok.str:
			if name := strings.ToUpper(tok.text); slices.Contains(luaNamed, name) {
				add(fmt.Sprintf("names %s", name))
			}
		case tok.text == "redis.call" || tok.text == "redis.pcall" || tok.text == "server.call" || tok.text == "server.pcall":
			if words, ok := lx.callArgs(); ok {
				for _, what := range Reaches(words) {
					add(fmt.Sprintf("%s(%s)", tok.text, what))
				}
			}
		}
	}
	return out
}

// luaToken is a Lua string literal (str, decoded) or a name with its dots
// (redis.call), or one punctuation character.
type luaToken struct {
	text string
	str  bool
}

// luaLexer reads just enough of Lua to find calls and their literal
// arguments: strings (quoted with escapes, long brackets), comments,
// names, and single characters for the rest.
type luaLexer struct {
	src string
	pos int
}

// next is the next token; false at the end.
func (lx *luaLexer) next() (luaToken, bool) {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';':
			lx.pos++
		case strings.HasPrefix(lx.src[lx.pos:], "--"):
			lx.pos += 2
			if level, ok := longBracket(lx.src[lx.pos:]); ok {
				lx.pos += level + 2
				lx.skipLong(level)
				continue
			}
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
		case c == '\'' || c == '"':
			return luaToken{text: lx.quoted(c), str: true}, true
		case c == '[':
			if level, ok := longBracket(lx.src[lx.pos:]); ok {
				lx.pos += level + 2
				start := lx.pos
				end := lx.skipLong(level)
				text := lx.src[start:end]
				text = strings.TrimPrefix(text, "\n")
				return luaToken{text: text, str: true}, true
			}
			lx.pos++
			return luaToken{text: "["}, true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			start := lx.pos
			for lx.pos < len(lx.src) {
				c := lx.src[lx.pos]
				if c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
					lx.pos++
					continue
				}
				break
			}
			return luaToken{text: lx.src[start:lx.pos]}, true
		default:
			lx.pos++
			return luaToken{text: string(c)}, true
		}
	}
	return luaToken{}, false
}

// callArgs reads a call's arguments after its name: the leading string
// literals, Var set on the word after the last when Lua computes it.
func (lx *luaLexer) callArgs() ([]Word, bool) {
	tok, ok := lx.next()
	if !ok || tok.text != "(" || tok.str {
		return nil, false
	}
	var words []Word
	for {
		tok, ok := lx.next()
		if !ok {
			return words, len(words) > 0
		}
		if !tok.str {
			if tok.text == ")" {
				return words, len(words) > 0
			}
			// Computed: KEYS[1], a variable, a concatenation.
			return append(words, Word{Var: true}), len(words) > 0
		}
		sep, ok := lx.next()
		if ok && sep.text == ".." && !sep.str {
			return append(words, Word{Text: tok.text, Var: true}), true
		}
		if ok && sep.text == "." && !sep.str { // '..' reads as two dots
			return append(words, Word{Text: tok.text, Var: true}), true
		}
		words = append(words, Word{Text: tok.text})
		if !ok || sep.str || sep.text != "," {
			return words, true
		}
	}
}

// quoted reads a quoted Lua string at lx.pos, decoding its escapes.
func (lx *luaLexer) quoted(quote byte) string {
	lx.pos++
	var b strings.Builder
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		lx.pos++
		switch {
		case c == quote:
			return b.String()
		case c == '\n':
			return b.String() // unfinished: Lua refuses it
		case c != '\\' || lx.pos >= len(lx.src):
			b.WriteByte(c)
			continue
		}
		e := lx.src[lx.pos]
		lx.pos++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a', 'b', 'f', 'v':
			b.WriteByte(map[byte]byte{'a': 7, 'b': 8, 'f': 12, 'v': 11}[e])
		case 'x':
			if lx.pos+2 <= len(lx.src) {
				if v, err := strconv.ParseUint(lx.src[lx.pos:lx.pos+2], 16, 8); err == nil {
					b.WriteByte(byte(v))
					lx.pos += 2
				}
			}
		case 'z':
			for lx.pos < len(lx.src) && strings.IndexByte(" \t\r\n", lx.src[lx.pos]) >= 0 {
				lx.pos++
			}
		default:
			if e >= '0' && e <= '9' {
				end := lx.pos - 1
				for end < len(lx.src) && end < lx.pos+2 && lx.src[end] >= '0' && lx.src[end] <= '9' {
					end++
				}
				v, _ := strconv.Atoi(lx.src[lx.pos-1 : end])
				b.WriteByte(byte(v))
				lx.pos = end
				continue
			}
			b.WriteByte(e) // \\ \' \" and a line break
		}
	}
	return b.String()
}

// longBracket says whether s opens a long bracket ([[, [==[) and its level.
func longBracket(s string) (int, bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, false
	}
	level := 0
	for level+1 < len(s) && s[level+1] == '=' {
		level++
	}
	return level, level+1 < len(s) && s[level+1] == '['
}

// skipLong moves past the long bracket of level that closes the one just
// opened, and returns where its text ends.
func (lx *luaLexer) skipLong(level int) int {
	closing := "]" + strings.Repeat("=", level) + "]"
	i := strings.Index(lx.src[lx.pos:], closing)
	if i < 0 {
		end := len(lx.src)
		lx.pos = end
		return end
	}
	end := lx.pos + i
	lx.pos = end + len(closing)
	return end
}
