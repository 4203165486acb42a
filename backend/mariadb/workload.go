package mariadb

import (
	"errors"

	"github.com/firedrill/firedrill/engine"
)

// workloadConfig is what target/mariadb's Config takes.
type workloadConfig struct {
	Network, Addr, User, Password, Database, Mode string
	Session                                       map[string]string
	AppName                                       string
}

// newWorkloadTarget makes the engine's target of a workload.
func newWorkloadTarget(cfg workloadConfig) (engine.Target, error) {
	return nil, errors.New("the MariaDB/MySQL protocol client (target/mariadb) is not built yet: " +
		"this firedrill can start a MariaDB and run setup and events, but no workload on it")
}
