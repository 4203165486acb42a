package redisevent

import (
	"strings"
	"testing"
)

func TestServerWide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sub string
		want      bool
	}{
		{"flushdb", "", true},
		{"FlushAll", "ASYNC", true},
		{"SELECT", "3", true},
		{"CONFIG", "set", true},
		{"CONFIG", "GET", false},
		{"CLIENT", "SETNAME", false},
		{"CLIENT", "kill", true},
		{"CLIENT", "", true}, // the subcommand is a variable
		{"", "", true},       // so is the name
		{"SET", "k", false},
		{"GET", "", false},
		{"DEL", "firedrill:x", false},
	}
	for _, tt := range tests {
		if what, got := ServerWide(tt.name, tt.sub); got != tt.want || got && what == "" {
			t.Errorf("ServerWide(%q, %q) = %q, %v; want %v", tt.name, tt.sub, what, got, tt.want)
		}
	}
}

// Reaches sees what a command's words say: server-wide commands, keys
// that are not firedrill's, other databases, and inside Lua bodies what
// redis.call calls with literal arguments. What Lua computes passes: the
// ACL user's privileges are the guard there.
func TestReaches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		words []Word
		want  []string // a part of each reason, in order; nil: nothing
	}{
		// The escapes of issue 20.
		{Literal("EVAL", "redis.call('FLUSHDB')", "0"), []string{"redis.call(FLUSHDB)"}},
		{Literal("eval", `return redis.pcall("flushall", "async")`, "0"), []string{"redis.pcall(FLUSHALL)"}},
		{Literal("EVAL", `redis.call('SELECT', '1') return redis.call('SWAPDB', '0', '1')`, "0"),
			[]string{"redis.call(SELECT)", "redis.call(SWAPDB)"}},
		{Literal("EVAL", `local r = redis.call('SCAN', '0') for _, k in ipairs(r[2]) do redis.call('DEL', k) end`, "0"),
			[]string{"redis.call(SCAN of keys that are not firedrill's"}},
		{Literal("COPY", "firedrill:x", "user:1", "DB", "1", "REPLACE"), []string{`COPY of the key "user:1"`, "COPY … DB 1"}},
		// Lua spellings the server reads as the same command.
		{Literal("EVAL", `redis.call('\x46LUSHDB')`, "0"), []string{"redis.call(FLUSHDB)"}},
		{Literal("EVAL", `redis.call('\70LUSHALL')`, "0"), []string{"redis.call(FLUSHALL)"}},
		{Literal("EVAL", "redis.call([[flushdb]])", "0"), []string{"redis.call(FLUSHDB)"}},
		{Literal("EVAL", "local c = 'FLUSHDB' return redis.call(c)", "0"), []string{"names FLUSHDB"}},
		{Literal("EVAL_RO", "return server.call('KEYS', '*')", "0"), []string{"server.call(KEYS)"}},
		{Literal("EVAL", "redis.call('DEL', 'user:1')", "0"), []string{`DEL of the key "user:1"`}},
		{Literal("EVAL", "redis.call('RENAME', 'firedrill:a', 'user:1')", "0"), []string{`RENAME of the key "user:1"`}},
		{Literal("EVAL", "redis.call('CONFIG', 'SET', 'maxmemory', '1mb')", "0"), []string{"redis.call(CONFIG SET)"}},
		{Literal("EVAL", "return redis.call('DEL', KEYS[1])", "1", "user:1"), []string{`EVAL of the key "user:1"`}},
		{Literal("SCRIPT", "LOAD", "redis.call('flushdb')"), []string{"SCRIPT LOAD body: redis.call(FLUSHDB)"}},
		{Literal("FUNCTION", "LOAD", "REPLACE", "#!lua name=x\nredis.register_function('f', function() return redis.call('FLUSHALL') end)"),
			[]string{"FUNCTION LOAD", "FUNCTION LOAD body: redis.call(FLUSHALL)"}},
		{Literal("FCALL", "f", "1", "user:1"), []string{`FCALL of the key "user:1"`}},
		// Other ways past firedrill's keys.
		{Literal("MOVE", "firedrill:x", "1"), []string{"MOVE"}},
		{Literal("SWAPDB", "0", "1"), []string{"SWAPDB"}},
		{Literal("MIGRATE", "h", "1", "firedrill:x", "0", "5"), []string{"MIGRATE"}},
		{Literal("DEBUG", "SLEEP", "0"), []string{"DEBUG"}},
		{Literal("OBJECT", "ENCODING", "user:1"), []string{`OBJECT of the key "user:1"`}},
		{Literal("RENAME", "firedrill:x", "user:1"), []string{`RENAME of the key "user:1"`}},
		{Literal("COPY", "firedrill:x", "firedrill:y", "DB", "1"), []string{"COPY … DB 1"}},
		{Literal("MSET", "firedrill:a", "1", "user:b", "2"), []string{`MSET of the key "user:b"`}},
		{Literal("DEL", "firedrill:a", "user:b"), []string{`DEL of the key "user:b"`}},
		{Literal("SCAN", "0", "MATCH", "user:*"), []string{"SCAN of keys"}},
		{[]Word{{Text: "GET"}, {Text: "user:", Var: true}}, []string{`GET of the key "user:"`}},
		// firedrill's own keys, and what a variable leaves open.
		{Literal("SET", "firedrill:a", "select"), nil},
		{Literal("RENAME", "firedrill:x", "firedrill:y"), nil},
		{Literal("COPY", "firedrill:x", "firedrill:y", "REPLACE"), nil},
		{Literal("OBJECT", "ENCODING", "firedrill:x"), nil},
		{Literal("SCAN", "0", "MATCH", "firedrill:*", "COUNT", "100"), nil},
		{Literal("EVAL", "return redis.call('SET', 'firedrill:x', 'FLUSHDB is only text here' .. ARGV[1])", "0", "a"), nil},
		{Literal("EVAL", "-- redis.call('FLUSHDB') is a comment\nreturn redis.call('GET', KEYS[1])", "1", "firedrill:k"), nil},
		{Literal("EVAL", "return redis.call('HGET', 'firedrill:h', 'select')", "0"), nil},
		{[]Word{{Text: "GET"}, {Var: true}}, nil},
		{[]Word{{Text: "GET"}, {Text: "fire", Var: true}}, nil},
		{[]Word{{Text: "INCR"}, {Text: "firedrill:hits:", Var: true}}, nil},
		{Literal("FUNCTION", "LIST"), nil},
		{Literal("CLIENT", "SETNAME", "x"), nil},
	}
	for _, tt := range tests {
		got := Reaches(tt.words)
		if len(got) != len(tt.want) {
			t.Errorf("Reaches(%v) = %q, want %d reasons like %q", tt.words, got, len(tt.want), tt.want)
			continue
		}
		for i, want := range tt.want {
			if !strings.Contains(got[i], want) {
				t.Errorf("Reaches(%v)[%d] = %q, want it to say %q", tt.words, i, got[i], want)
			}
		}
	}
}

// Whatever the command, Reaches answers without panicking, and the same
// each time.
func FuzzReaches(f *testing.F) {
	f.Add("EVAL", "redis.call('FLUSHDB')", "0")
	f.Add("EVAL", "redis.call([==[x]==], '\\x4", "1")
	f.Add("COPY", "firedrill:x", "user:1")
	f.Add("FUNCTION", "LOAD", "#!lua name=x\n--[[ ]] redis.call(\"\\z   SET\", 'a'")
	f.Fuzz(func(t *testing.T, name, a1, a2 string) {
		words := Literal(name, a1, a2, "DB", "1")
		first := Reaches(words)
		if again := Reaches(words); strings.Join(first, "\n") != strings.Join(again, "\n") {
			t.Fatalf("Reaches(%v) = %q, then %q", words, first, again)
		}
		_ = luaReaches(a1 + a2)
	})
}
