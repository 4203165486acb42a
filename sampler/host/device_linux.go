package host

import (
	"fmt"
	"syscall"
)

// deviceOf returns the device number of the file system holding path.
func deviceOf(path string) (major, minor uint32, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	major, minor = splitDev(uint64(st.Dev))
	return major, minor, nil
}

// blockDeviceOf returns the device number of the block device node path.
func blockDeviceOf(path string) (major, minor uint32, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFBLK {
		return 0, 0, fmt.Errorf("%s is not a block device", path)
	}
	major, minor = splitDev(uint64(st.Rdev))
	return major, minor, nil
}

// splitDev decodes Linux's dev_t (glibc's gnu_dev_major/minor).
func splitDev(dev uint64) (major, minor uint32) {
	major = uint32((dev>>8)&0xfff | (dev>>32)&^0xfff)
	minor = uint32(dev&0xff | (dev>>12)&^0xff)
	return major, minor
}
