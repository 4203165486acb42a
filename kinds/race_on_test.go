//go:build race

package kinds_test

// raceDetector: the race detector slows the rules some tenfold, and the
// live replay runs them once per second of every recording.
const raceDetector = true
