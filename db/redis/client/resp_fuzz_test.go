package redistarget

import (
	"testing"

	"github.com/firedrill/firedrill/script"
)

// respSeeds are replies of every RESP2 and RESP3 type, complete and cut.
var respSeeds = []string{
	"+OK\r\n",
	"-ERR unknown command 'FOO'\r\n",
	"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	":1000\r\n",
	":-1\r\n",
	"$5\r\nhello\r\n",
	"$-1\r\n",
	"$0\r\n\r\n",
	"*2\r\n$1\r\na\r\n:1\r\n",
	"*-1\r\n",
	"*0\r\n",
	"*2\r\n*1\r\n+x\r\n$-1\r\n",
	"_\r\n",
	",1.5\r\n",
	",inf\r\n",
	"#t\r\n",
	"#f\r\n",
	"(3492890328409238509324850943850943825024385\r\n",
	"!21\r\nSYNTAX invalid syntax\r\n",
	"=15\r\ntxt:Some string\r\n",
	"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
	"~3\r\n+a\r\n+b\r\n+c\r\n",
	">3\r\n+invalidate\r\n*1\r\n+key\r\n_\r\n",
	"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n$5\r\nhello\r\n",
	"$5\r\nhel",
	"*3\r\n:1\r\n",
	"$99999999999999999999\r\n",
	"?\r\n",
}

func FuzzReply(f *testing.F) {
	for _, s := range respSeeds {
		f.Add([]byte(s))
	}
	syms := script.NewSymbols()
	refs := []script.VarRef{syms.Ref("a"), syms.Ref("b"), syms.Ref("c")}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := replyEnd(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with length %d", err, n)
			}
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("length %d of %d bytes", n, len(b))
		}
		if n == 0 {
			return
		}
		reply := b[:n]
		// A complete reply is complete on its own, and every prefix of
		// it is merely incomplete, never an error.
		if m, err := replyEnd(reply); m != n || err != nil {
			t.Fatalf("reply alone: %d, %v; with what follows: %d", m, err, n)
		}
		for k := 0; k < n; k++ {
			if m, err := replyEnd(reply[:k]); m != 0 || err != nil {
				t.Fatalf("prefix of %d bytes of a %d-byte reply: %d, %v", k, n, m, err)
			}
		}
		// What the session does with a reply must not fail on any.
		if reply[0] == '|' {
			at, err := skipAttributes(reply)
			if err != nil {
				t.Fatalf("attributes of a complete reply: %v", err)
			}
			reply = reply[at:]
		}
		if len(reply) == 0 {
			t.Fatal("attributes with no reply after them")
		}
		if isError(reply) {
			msg := errorText(reply)
			if code := errorCode(msg); code == "" {
				t.Fatalf("empty code for %q", msg)
			}
			return
		}
		for k := 1; k <= len(refs); k++ {
			_ = store(reply, refs[:k], script.NewVars(syms))
		}
	})
}
