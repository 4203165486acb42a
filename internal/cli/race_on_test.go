//go:build race

package cli

// raceEnabled: the race detector multiplies memory several times, so
// memory bounds are measured only without it.
const raceEnabled = true
