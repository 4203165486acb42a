package mariadb

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// packet frames a payload as the server would.
func packet(seq byte, payload ...byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func lenencStr(s string) []byte { return appendLenencString(nil, s) }

func columnDef(name string, typ byte, flags uint16) []byte {
	var b []byte
	for _, s := range []string{"def", "db", "t", "t", name, name} {
		b = append(b, lenencStr(s)...)
	}
	b = append(b, 0x0c, 45, 0, 11, 0, 0, 0, typ)
	b = binary.LittleEndian.AppendUint16(b, flags)
	return append(b, 0, 0, 0)
}

// decodeSeeds are server replies: a text result with a NULL, an error, an
// OK, a binary result, a multi-result, and EOF-terminated metadata.
func decodeSeeds() [][]byte {
	var text []byte
	text = append(text, 0) // mode byte: deprecate EOF, text rows
	text = append(text, packet(1, 2)...)
	text = append(text, packet(2, columnDef("a", typeLongLong, 0)...)...)
	text = append(text, packet(3, columnDef("b", typeVarString, 0)...)...)
	text = append(text, packet(4, append(lenencStr("42"), 0xFB)...)...)
	text = append(text, packet(5, 0xFE, 0, 0, 2, 0, 0, 0)...)

	errReply := append([]byte{0}, packet(1, append([]byte{0xFF, 0xBD, 0x04, '#', '4', '0', '0', '0', '1'}, "Deadlock found"...)...)...)
	ok := append([]byte{0}, packet(1, 0x00, 1, 0, 2, 0, 0, 0)...)

	var bin []byte
	bin = append(bin, 1) // binary rows
	bin = append(bin, packet(1, 3)...)
	bin = append(bin, packet(2, columnDef("i", typeLong, flagUnsigned)...)...)
	bin = append(bin, packet(3, columnDef("d", typeDateTime, 0)...)...)
	bin = append(bin, packet(4, columnDef("t", typeTime, 0)...)...)
	row := []byte{0x00, 0x00}
	row = binary.LittleEndian.AppendUint32(row, 7)
	row = append(row, 7, 0xE8, 0x07, 1, 2, 3, 4, 5)
	row = append(row, 8, 1, 1, 0, 0, 0, 2, 3, 4)
	bin = append(bin, packet(5, row...)...)
	bin = append(bin, packet(6, 0xFE, 0, 0, 2, 0, 0, 0)...)

	var multi []byte
	multi = append(multi, 0)
	multi = append(multi, packet(1, 0x00, 0, 0, 0x08, 0, 0, 0)...) // OK, more results
	multi = append(multi, packet(2, 1)...)
	multi = append(multi, packet(3, columnDef("x", typeDouble, 0)...)...)
	multi = append(multi, packet(4, lenencStr("1.5")...)...)
	multi = append(multi, packet(5, 0xFE, 0, 0, 2, 0, 0, 0)...)

	var eof []byte
	eof = append(eof, 2) // EOF packets, not deprecated
	eof = append(eof, packet(1, 1)...)
	eof = append(eof, packet(2, columnDef("a", typeTiny, 0)...)...)
	eof = append(eof, packet(3, 0xFE, 0, 0, 2, 0)...)
	eof = append(eof, packet(4, lenencStr("-1")...)...)
	eof = append(eof, packet(5, 0xFE, 0, 0, 2, 0)...)
	greeting := []byte{10}
	greeting = append(greeting, "10.11.19-MariaDB\x00"...)
	greeting = append(greeting, 7, 0, 0, 0)    // connection id
	greeting = append(greeting, "abcdefgh"...) // scramble, part 1
	greeting = append(greeting, 0, 0xFE, 0xF7, 45, 2, 0, 0xFF, 0x81, 21)
	greeting = append(greeting, make([]byte, 10)...)   // reserved
	greeting = append(greeting, "ijklmnopqrst\x00"...) // scramble, part 2
	greeting = append(greeting, "mysql_native_password\x00"...)
	hello := append([]byte{8}, packet(0, greeting...)...)
	switchReq := append(append([]byte(nil), hello...), packet(2, append([]byte{0xFE}, "mysql_native_password\x00abcdefghijklmnopqrst\x00"...)...)...)
	refused := append([]byte{8}, packet(0, append([]byte{0xFF, 0x10, 0x04}, "Too many connections"...)...)...)
	return [][]byte{text, errReply, ok, bin, multi, eof, {0}, {3, 0xFB}, hello, switchReq, refused}
}

// FuzzDecodeResponse feeds arbitrary server replies to the response
// reader: it must never panic or hang, and must either finish or report a
// lost session or a server error.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range decodeSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mode, data := data[0], data[1:]
		c := &conn{
			t:     &Target{addr: "fuzz:0"},
			io:    sockio.NewConn(-1, nil),
			caps:  clientCaps,
			stmts: make(map[*script.SQL]*stmt),
		}
		c.io.Preload(data)
		if mode&2 != 0 {
			c.caps &^= capDeprecateEOF
		}
		if mode&8 != 0 {
			// A greeting and what follows it: the handshake and
			// authentication. Answers go to /dev/null.
			devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer devNull.Close()
			c.io = sockio.NewConn(int(devNull.Fd()), sockio.Blocking{Timeout: time.Second})
			c.io.Preload(data)
			c.t.cfg = Config{User: "u", Password: "p", Database: "d", AppName: "fuzz"}
			if err := c.handshake(time.Time{}, nil); err == nil && c.caps&capProtocol41 == 0 {
				t.Fatal("handshake accepted a server without protocol 4.1")
			}
			return
		}
		syms := script.NewSymbols()
		vars := script.NewVars(syms)
		q := &script.SQL{Gset: &script.Gset{Prefix: "p_", All: mode&4 != 0}}
		err := c.readResults(q, vars, mode&1 != 0)
		if err == nil {
			return
		}
		// A session is given up on exactly when the error says the
		// connection is lost.
		var dbe *engine.DBError
		lost := errors.As(err, &dbe) && dbe.Code == engine.CodeConnection
		if lost != (c.broken != nil) {
			t.Fatalf("error %v (lost %v) but broken = %v", err, lost, c.broken)
		}
	})
}
