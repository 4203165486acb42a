//go:build !linux

package host

import "errors"

// errNotLinux says why the disk is not sampled elsewhere.
var errNotLinux = errors.New("disk statistics are read from Linux's /proc and /sys only")

func deviceOf(string) (major, minor uint32, err error) { return 0, 0, errNotLinux }

func blockDeviceOf(string) (major, minor uint32, err error) { return 0, 0, errNotLinux }
