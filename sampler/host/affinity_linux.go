package host

import (
	"math/bits"
	"syscall"
	"unsafe"
)

// affinityCPUs counts the CPUs of the process's affinity mask
// (sched_getaffinity); 0 when it cannot be read.
func affinityCPUs() int {
	var mask [1024 / 64]uint64
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, uintptr(len(mask)*8), uintptr(unsafe.Pointer(&mask[0])))
	if errno != 0 {
		return 0
	}
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	return n
}
