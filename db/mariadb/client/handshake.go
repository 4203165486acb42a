package mariadb

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/firedrill/firedrill/engine"
)

// Capability flags (the client's and the server's).
const (
	capLongPassword     = 1 << 0
	capFoundRows        = 1 << 1
	capLongFlag         = 1 << 2
	capConnectWithDB    = 1 << 3
	capProtocol41       = 1 << 9
	capTransactions     = 1 << 13
	capSecureConnection = 1 << 15
	capMultiStatements  = 1 << 16
	capMultiResults     = 1 << 17
	capPSMultiResults   = 1 << 18
	capPluginAuth       = 1 << 19
	capConnectAttrs     = 1 << 20
	capPluginAuthLenenc = 1 << 21
	capDeprecateEOF     = 1 << 24
)

// MariaDB's extended capabilities, in the last four of the reserved bytes
// of the greeting and of the client's answer (when CLIENT_MYSQL, the
// long-password bit that MariaDB servers leave clear, is clear).
const (
	// extCacheMetadata lets the server leave out a prepared statement's
	// column definitions from an execute's result when they have not
	// changed (a column count then says whether they follow). A point
	// select's result was 193 bytes with them, 150 without, and the
	// server builds them for nothing on every execute; libmariadb, which
	// sysbench runs on, asks for it.
	extCacheMetadata = 1 << 4
)

// clientCaps is what the client asks for; the session gets what the
// server also offers.
const clientCaps = capLongPassword | capFoundRows | capLongFlag | capProtocol41 | capTransactions |
	capSecureConnection | capMultiStatements | capMultiResults | capPSMultiResults | capPluginAuth |
	capConnectAttrs | capPluginAuthLenenc | capDeprecateEOF

// charsetUTF8MB4 is utf8mb4_general_ci.
const charsetUTF8MB4 = 45

// handshake reads the server's greeting, answers it and authenticates;
// over TLS on nc when the target asks for TLS (nc is nil when it does not).
func (c *conn) handshake(deadline time.Time, nc net.Conn) error {
	t := c.t
	greeting, err := c.readPacket()
	if err != nil {
		return c.connectError(err)
	}
	if len(greeting) > 0 && greeting[0] == 0xFF {
		return c.connectError(parseErr(greeting)) // e.g. too many connections, host blocked
	}
	if len(greeting) < 1 || greeting[0] != 10 {
		return c.connectError(fmt.Errorf("protocol error: greeting version %d, want 10", firstByte(greeting)))
	}
	version, b := cString(greeting[1:])
	if len(b) < 4+8+1+2 {
		return c.connectError(errShort)
	}
	c.version = string(version)
	c.connID = binary.LittleEndian.Uint32(b)
	scramble := append([]byte(nil), b[4:12]...)
	serverCaps := uint32(binary.LittleEndian.Uint16(b[13:]))
	b = b[15:]
	authLen := 0
	if len(b) >= 16 {
		serverCaps |= uint32(binary.LittleEndian.Uint16(b[3:])) << 16
		authLen = int(b[5])
		if serverCaps&capLongPassword == 0 { // CLIENT_MYSQL clear: a MariaDB server
			c.ext = binary.LittleEndian.Uint32(b[12:]) & extCacheMetadata
		}
		b = b[16:] // charset, status, upper caps, auth length, 10 reserved
	} else {
		b = nil
	}
	plugin := "mysql_native_password"
	if serverCaps&capSecureConnection != 0 && len(b) > 0 {
		n := max(13, authLen-8)
		if n > len(b) {
			n = len(b)
		}
		part := b[:n]
		if i := bytes.IndexByte(part, 0); i >= 0 {
			part = part[:i]
		}
		scramble = append(scramble, part...)
		b = b[n:]
		if serverCaps&capPluginAuth != 0 {
			name, _ := cString(b)
			if len(name) > 0 {
				plugin = string(name)
			}
		}
	}
	if serverCaps&capProtocol41 == 0 {
		return c.connectError(errors.New("server too old: no protocol 4.1"))
	}
	c.caps = clientCaps & serverCaps
	if t.cfg.Database != "" {
		c.caps |= capConnectWithDB & serverCaps
	}

	if nc != nil {
		switch {
		case serverCaps&capSSL != 0:
			if err := c.startTLS(nc, deadline); err != nil {
				return c.connectError(err)
			}
		case !t.cfg.TLSOptional:
			return c.connectError(ErrNoTLS)
		}
	}

	auth, err := authResponse(plugin, t.cfg.Password, scramble)
	if err != nil {
		return c.connectError(err)
	}
	at := c.startPacket()
	c.io.W = binary.LittleEndian.AppendUint32(c.io.W, c.caps)
	c.io.W = binary.LittleEndian.AppendUint32(c.io.W, maxPayload)
	c.io.W = append(c.io.W, charsetUTF8MB4)
	c.io.W = c.appendFiller(c.io.W)
	c.io.W = append(append(c.io.W, t.cfg.User...), 0)
	if c.caps&capPluginAuthLenenc != 0 {
		c.io.W = appendLenenc(c.io.W, uint64(len(auth)))
	} else {
		c.io.W = append(c.io.W, byte(len(auth)))
	}
	c.io.W = append(c.io.W, auth...)
	if c.caps&capConnectWithDB != 0 {
		c.io.W = append(append(c.io.W, t.cfg.Database...), 0)
	}
	if c.caps&capPluginAuth != 0 {
		c.io.W = append(append(c.io.W, plugin...), 0)
	}
	if c.caps&capConnectAttrs != 0 {
		var attrs []byte
		attrs = appendLenencString(attrs, "_client_name")
		attrs = appendLenencString(attrs, "firedrill")
		if t.cfg.AppName != "" {
			attrs = appendLenencString(attrs, "program_name")
			attrs = appendLenencString(attrs, t.cfg.AppName)
		}
		c.io.W = appendLenenc(c.io.W, uint64(len(attrs)))
		c.io.W = append(c.io.W, attrs...)
	}
	c.endPacket(at)
	if err := c.flush(); err != nil {
		return c.connectError(err)
	}
	return c.authenticate(plugin, scramble)
}

// authenticate follows the server's answers to the handshake response
// until OK: auth switches and caching_sha2_password's extra round.
func (c *conn) authenticate(plugin string, scramble []byte) error {
	for range 8 {
		p, err := c.readPacket()
		if err != nil {
			return c.connectError(err)
		}
		switch firstByte(p) {
		case 0x00:
			c.readOK(p)
			return nil
		case 0xFF:
			return c.connectError(parseErr(p))
		case 0xFE: // auth switch: another plugin, a new scramble
			if len(p) == 1 {
				return c.connectError(errors.New("server asks for the old (pre-4.1) password protocol, which is not supported"))
			}
			name, rest := cString(p[1:])
			plugin = string(name)
			scramble = append([]byte(nil), bytes.TrimRight(rest, "\x00")...)
			auth, err := authResponse(plugin, c.t.cfg.Password, scramble)
			if err != nil {
				return c.connectError(err)
			}
			if err := c.sendAuthData(auth); err != nil {
				return c.connectError(err)
			}
		case 0x01: // more data: caching_sha2_password's verdict
			if plugin != "caching_sha2_password" || len(p) < 2 {
				return c.connectError(fmt.Errorf("protocol error: unexpected auth data for %s", plugin))
			}
			switch p[1] {
			case 3: // fast auth succeeded; OK follows
			case 4: // full authentication: the password itself, which only a secure channel may carry
				if c.io.TLS() == nil && c.t.cfg.Network != "unix" {
					return c.connectError(errors.New("caching_sha2_password wants a full authentication, which needs TLS or the server's RSA key: " +
						"connect with TLS, or once with the mysql client to fill the server's cache, or give the user mysql_native_password"))
				}
				if err := c.sendAuthData(append([]byte(c.t.cfg.Password), 0)); err != nil {
					return c.connectError(err)
				}
			default:
				return c.connectError(fmt.Errorf("protocol error: caching_sha2_password state %d", p[1]))
			}
		default:
			return c.connectError(fmt.Errorf("protocol error: unexpected reply 0x%02x during authentication", firstByte(p)))
		}
	}
	return c.connectError(errors.New("authentication did not finish"))
}

func (c *conn) sendAuthData(auth []byte) error {
	at := c.startPacket()
	c.io.W = append(c.io.W, auth...)
	c.endPacket(at)
	return c.flush()
}

// connectError says which server could not be connected to and why. A
// server's refusal keeps its code (1045 access denied, 1040 too many
// connections); anything else is engine.CodeConnect.
func (c *conn) connectError(err error) error {
	var se *ServerError
	if errors.As(err, &se) {
		msg := fmt.Errorf("connect to %s as %q: %w", c.t.addr, c.t.cfg.User, err)
		if se.Number == 1045 {
			msg = fmt.Errorf("%w (check the user and password)", msg)
			if c.io.TLS() == nil {
				msg = fmt.Errorf("%w%s", msg, hintPlainRefused)
			}
		}
		return &engine.DBError{Code: se.code(), Err: msg, Fault: connectFault(se.Number)}
	}
	var de *engine.DBError
	if errors.As(err, &de) { // from fail: already names the server
		return &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect: %w", de.Err)}
	}
	return &engine.DBError{Code: engine.CodeConnect, Err: fmt.Errorf("connect to %s: %w%s", c.t.addr, err, TLSHint(err))}
}

// connectFault says which refusals of a connection are the server's
// limits, which an application's pool retries: 1040 too many connections
// (max_connections), 1203 too many of this user's (max_user_connections),
// 1226 a per-user resource limit (MAX_CONNECTIONS_PER_HOUR …); and which
// are a server going away (1053 shutdown in progress).
func connectFault(number uint16) engine.ConnFault {
	switch number {
	case 1040, 1203, 1226:
		return engine.Refused
	case 1053:
		return engine.Unavailable
	}
	return engine.NoFault
}

func firstByte(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// authResponse computes what the plugin sends for the password.
func authResponse(plugin, password string, scramble []byte) ([]byte, error) {
	switch plugin {
	case "mysql_native_password":
		if password == "" {
			return nil, nil
		}
		if len(scramble) > 20 {
			scramble = scramble[:20]
		}
		// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))
		h1 := sha1.Sum([]byte(password))
		h2 := sha1.Sum(h1[:])
		h := sha1.New()
		h.Write(scramble)
		h.Write(h2[:])
		out := h.Sum(nil)
		for i := range out {
			out[i] ^= h1[i]
		}
		return out, nil
	case "caching_sha2_password":
		if password == "" {
			return nil, nil
		}
		// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble)
		h1 := sha256.Sum256([]byte(password))
		h2 := sha256.Sum256(h1[:])
		h := sha256.New()
		h.Write(h2[:])
		h.Write(scramble)
		out := h.Sum(nil)
		for i := range out {
			out[i] ^= h1[i]
		}
		return out, nil
	case "mysql_clear_password":
		return append([]byte(password), 0), nil
	}
	return nil, fmt.Errorf("authentication plugin %s is not supported (use mysql_native_password)", plugin)
}

// appendFiller appends the handshake response's 23 reserved bytes, the
// last four the MariaDB capabilities the session uses.
func (c *conn) appendFiller(b []byte) []byte {
	b = append(b, make([]byte, 19)...)
	return binary.LittleEndian.AppendUint32(b, c.ext)
}
