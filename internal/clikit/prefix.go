package clikit

import (
	"bytes"
	"io"
	"sync"
)

// PrefixWriter prefixes every line written to w, for progress messages of
// lower layers ("firedrill: started PostgreSQL …").
func PrefixWriter(w io.Writer, prefix string) io.Writer {
	return &linePrefixer{w: w, prefix: []byte(prefix)}
}

type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	mid    bool // inside a line
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	var out bytes.Buffer
	for len(b) > 0 {
		if !p.mid {
			out.Write(p.prefix)
			p.mid = true
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out.Write(b)
			break
		}
		out.Write(b[:i+1])
		b = b[i+1:]
		p.mid = false
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return n, nil
}
