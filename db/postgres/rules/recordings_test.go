package pgrules

import "github.com/firedrill/firedrill/diagnose/diagnosetest"

// The recorded runs the tests read are diagnose's (diagnose/testdata).
var (
	openRecording = diagnosetest.Open
	findingsOf    = diagnosetest.FindingsOf
	checkFinding  = diagnosetest.CheckFinding
	recordings    = diagnosetest.Recordings
)
