package postgres

import (
	"encoding/binary"
	"testing"

	"github.com/firedrill/firedrill/script"
)

// FuzzBackendMessages feeds arbitrary message bodies to the readers of the
// raw-socket session: whatever a server (or a broken proxy) sends, they
// must not panic, and a well-formed RowDescription/DataRow pair must
// round-trip.
func FuzzBackendMessages(f *testing.F) {
	f.Add([]byte("SERROR\x00C40001\x00Mcould not serialize access\x00\x00"), "aid")
	f.Add(rowDesc("abalance", "bid"), "x")
	f.Add([]byte{0, 1, 0, 0, 0, 3, '4', '2', '1'}, "n")
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, "")
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		_ = parseError(body)
		n := 0
		forColumns(body, func([]byte) { n++ })
		_ = sameColumns(body, []string{name})
		syms := script.NewSymbols()
		vars := script.NewVars(syms)
		tg := &gsetTarget{names: []string{name}, refs: []script.VarRef{syms.Ref("v" + name)}}
		_ = storeRow(body, tg, vars)

		// A well-formed pair round-trips.
		if name == "" || len(name) > 60 || containsNUL(name) {
			return
		}
		desc := rowDesc(name)
		got := ""
		forColumns(desc, func(b []byte) { got = string(b) })
		if got != name || !sameColumns(desc, []string{name}) {
			t.Fatalf("column %q read back as %q", name, got)
		}
		row := binary.BigEndian.AppendUint16(nil, 1)
		row = binary.BigEndian.AppendUint32(row, uint32(len(body)))
		row = append(row, body...)
		if err := storeRow(row, tg, vars); err != nil {
			t.Fatal(err)
		}
		if v, _ := vars.Text(tg.refs[0]); v != string(body) {
			t.Fatalf("value %q read back as %q", body, v)
		}
	})
}

func containsNUL(s string) bool {
	for i := range len(s) {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// rowDesc builds a RowDescription body with text columns of those names.
func rowDesc(names ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(names)))
	for _, n := range names {
		b = append(append(b, n...), 0)
		b = append(b, make([]byte, 18)...)
	}
	return b
}
