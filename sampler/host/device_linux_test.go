package host

import "testing"

// TestSplitDev decodes device numbers as glibc does, including the large
// minors of NVMe partitions.
func TestSplitDev(t *testing.T) {
	t.Parallel()
	// makedev is glibc's gnu_dev_makedev.
	makedev := func(major, minor uint64) uint64 {
		return (major&0xfff)<<8 | (major&^0xfff)<<32 | minor&0xff | (minor&^0xff)<<12
	}
	for _, c := range []struct {
		dev          uint64
		major, minor uint32
	}{
		{0x0801, 8, 1},    // sda1
		{0xfe00, 254, 0},  // vda
		{0x10301, 259, 1}, // nvme0n1p1
		{makedev(259, 70000), 259, 70000},
		{makedev(5000, 1<<19), 5000, 1 << 19},
	} {
		major, minor := splitDev(c.dev)
		if major != c.major || minor != c.minor {
			t.Errorf("splitDev(%#x) = %d:%d, want %d:%d", c.dev, major, minor, c.major, c.minor)
		}
	}
}
