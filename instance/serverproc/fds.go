package serverproc

import (
	"os"
	"strconv"
	"syscall"
)

// closeInheritedOnExec marks every descriptor of this process above
// stderr close-on-exec before a server is started. Go opens its own files
// close-on-exec, but a descriptor firedrill's caller passed down (a lock
// file, a socket) or one opened by raw syscall is not, and os/exec would
// hand it to the server, which would hold it long after firedrill ended.
// Nothing firedrill runs relies on inheriting one (os/exec's ExtraFiles
// are duplicated for the child whatever their flag).
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // no /proc (not Linux): nothing to enumerate the descriptors by
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
