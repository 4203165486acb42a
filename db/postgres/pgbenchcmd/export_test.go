package pgbenchcmd

// JSON is the --json document, for the tests that read it back.
type JSON = pgbenchJSON
