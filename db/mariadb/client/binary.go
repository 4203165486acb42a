package mariadb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/firedrill/firedrill/script"
)

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// storeBinaryRow stores a binary row's values as the text the text
// protocol would have given (NULL as an empty string).
func (c *conn) storeBinaryRow(p []byte, t *gsetTarget, vars *script.Vars) error {
	ncol := len(c.cols)
	nullBytes := (ncol + 7 + 2) / 8
	if len(p) < 1+nullBytes {
		return errors.New("protocol error: short binary row")
	}
	nulls := p[1 : 1+nullBytes]
	b := p[1+nullBytes:]
	for i, col := range c.cols {
		bit := i + 2
		if nulls[bit/8]&(1<<(bit%8)) != 0 {
			if i < len(t.refs) {
				vars.SetString(t.refs[i], "")
			}
			continue
		}
		var text []byte
		var err error
		text, b, err = c.binaryValue(col, b)
		if err != nil {
			return fmt.Errorf("protocol error: binary row, column %d: %w", i+1, err)
		}
		if i < len(t.refs) {
			vars.SetString(t.refs[i], string(text))
		}
	}
	return nil
}

// binaryValue decodes the value of col at b[0:] into text (in c.num or in
// b) and returns the rest of b.
func (c *conn) binaryValue(col column, b []byte) (text, rest []byte, err error) {
	unsigned := col.flags&flagUnsigned != 0
	fixed := func(n int) ([]byte, error) {
		if len(b) < n {
			return nil, errShort
		}
		return b[:n], nil
	}
	num := c.num[:0]
	defer func() { c.num = num[:0] }()
	switch col.typ {
	case typeNull:
		return nil, b, nil
	case typeTiny:
		v, err := fixed(1)
		if err != nil {
			return nil, nil, err
		}
		if unsigned {
			num = strconv.AppendUint(num, uint64(v[0]), 10)
		} else {
			num = strconv.AppendInt(num, int64(int8(v[0])), 10)
		}
		return num, b[1:], nil
	case typeShort, typeYear:
		v, err := fixed(2)
		if err != nil {
			return nil, nil, err
		}
		u := binary.LittleEndian.Uint16(v)
		if unsigned || col.typ == typeYear {
			num = strconv.AppendUint(num, uint64(u), 10)
		} else {
			num = strconv.AppendInt(num, int64(int16(u)), 10)
		}
		return num, b[2:], nil
	case typeLong, typeInt24:
		v, err := fixed(4)
		if err != nil {
			return nil, nil, err
		}
		u := binary.LittleEndian.Uint32(v)
		if unsigned {
			num = strconv.AppendUint(num, uint64(u), 10)
		} else {
			num = strconv.AppendInt(num, int64(int32(u)), 10)
		}
		return num, b[4:], nil
	case typeLongLong:
		v, err := fixed(8)
		if err != nil {
			return nil, nil, err
		}
		u := binary.LittleEndian.Uint64(v)
		if unsigned {
			num = strconv.AppendUint(num, u, 10)
		} else {
			num = strconv.AppendInt(num, int64(u), 10)
		}
		return num, b[8:], nil
	case typeFloat:
		v, err := fixed(4)
		if err != nil {
			return nil, nil, err
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(v))
		num = strconv.AppendFloat(num, float64(f), 'g', -1, 32)
		return num, b[4:], nil
	case typeDouble:
		v, err := fixed(8)
		if err != nil {
			return nil, nil, err
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(v))
		num = strconv.AppendFloat(num, f, 'g', -1, 64)
		return num, b[8:], nil
	case typeDate, typeDateTime, typeTimestamp:
		v, err := fixed(1)
		if err != nil {
			return nil, nil, err
		}
		n := int(v[0])
		if n != 0 && n != 4 && n != 7 && n != 11 {
			return nil, nil, fmt.Errorf("datetime of %d bytes", n)
		}
		v, err = fixed(1 + n)
		if err != nil {
			return nil, nil, err
		}
		v = v[1:]
		var year, month, day, hour, minute, second int
		var micro uint32
		if n >= 4 {
			year, month, day = int(binary.LittleEndian.Uint16(v)), int(v[2]), int(v[3])
		}
		if n >= 7 {
			hour, minute, second = int(v[4]), int(v[5]), int(v[6])
		}
		if n == 11 {
			micro = binary.LittleEndian.Uint32(v[7:])
		}
		num = appendPadded(num, year, 4)
		num = append(num, '-')
		num = appendPadded(num, month, 2)
		num = append(num, '-')
		num = appendPadded(num, day, 2)
		if col.typ != typeDate {
			num = append(num, ' ')
			num = appendClock(num, hour, minute, second, micro, col.decimals)
		}
		return num, b[1+n:], nil
	case typeTime:
		v, err := fixed(1)
		if err != nil {
			return nil, nil, err
		}
		n := int(v[0])
		if n != 0 && n != 8 && n != 12 {
			return nil, nil, fmt.Errorf("time of %d bytes", n)
		}
		v, err = fixed(1 + n)
		if err != nil {
			return nil, nil, err
		}
		v = v[1:]
		var hours, minute, second int
		var micro uint32
		if n >= 8 {
			if v[0] == 1 {
				num = append(num, '-')
			}
			hours = int(binary.LittleEndian.Uint32(v[1:]))*24 + int(v[5])
			minute, second = int(v[6]), int(v[7])
		}
		if n == 12 {
			micro = binary.LittleEndian.Uint32(v[8:])
		}
		num = appendClock(num, hours, minute, second, micro, col.decimals)
		return num, b[1+n:], nil
	}
	// Decimals, strings, blobs, JSON, bits, enums, sets, geometry.
	s, rest, _, err := lenencString(b)
	if err != nil {
		return nil, nil, err
	}
	return s, rest, nil
}

func appendPadded(b []byte, v, width int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(v), 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// appendClock appends hh:mm:ss and the fraction the column declares.
func appendClock(b []byte, hour, minute, second int, micro uint32, decimals byte) []byte {
	b = appendPadded(b, hour, 2)
	b = append(b, ':')
	b = appendPadded(b, minute, 2)
	b = append(b, ':')
	b = appendPadded(b, second, 2)
	if decimals > 0 && decimals <= 6 {
		scaled := int(micro % 1_000_000)
		for range 6 - int(decimals) {
			scaled /= 10
		}
		b = append(b, '.')
		b = appendPadded(b, scaled, int(decimals))
	}
	return b
}
