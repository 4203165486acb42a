//go:build race

package service

// raceEnabled says the race detector is on: sync.Pool then drops a
// share of what it is given on purpose, so allocations are not counted.
const raceEnabled = true
