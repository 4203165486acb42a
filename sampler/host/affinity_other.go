//go:build !linux

package host

import "runtime"

// affinityCPUs is what Go sees elsewhere: the CPUs it may use.
func affinityCPUs() int { return runtime.NumCPU() }
