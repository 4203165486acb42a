package mariadb

import (
	"encoding/binary"
	"strconv"

	"github.com/firedrill/firedrill/engine"
)

// ServerError is an error the server sent (an ERR packet).
type ServerError struct {
	Number   uint16 // the server's error number, e.g. 1213
	SQLState string // e.g. 40001; "HY000" when the server sent none
	Message  string
}

func (e *ServerError) Error() string {
	return "ERROR " + strconv.Itoa(int(e.Number)) + " (" + e.SQLState + "): " + e.Message
}

// code is the engine's error code: SQLSTATE/number.
func (e *ServerError) code() string { return e.SQLState + "/" + strconv.Itoa(int(e.Number)) }

// Server error numbers the target treats specially.
const (
	erCheckRead        = 1020 // record has changed since last read (a snapshot conflict)
	erServerShutdown   = 1053
	erLockWaitTimeout  = 1205
	erLockDeadlock     = 1213
	erConnectionKilled = 1927
)

// parseErr reads an ERR packet (its first byte is 0xFF).
func parseErr(p []byte) *ServerError {
	e := &ServerError{SQLState: "HY000"}
	if len(p) < 3 {
		e.Message = "malformed error packet"
		return e
	}
	e.Number = binary.LittleEndian.Uint16(p[1:])
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		e.SQLState = string(msg[1:6])
		msg = msg[6:]
	}
	e.Message = string(msg)
	return e
}

// classify turns a server error into what the engine counts: a failure it
// retries, a lost connection, or an error with its code.
func classify(e *ServerError) error {
	coded := &engine.DBError{Code: e.code(), Err: e}
	switch e.Number {
	case erLockDeadlock, erLockWaitTimeout:
		return &engine.Failure{Kind: engine.Deadlock, Err: coded}
	case erCheckRead:
		return &engine.Failure{Kind: engine.Serialization, Err: coded}
	}
	return coded
}
