package host

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// diskOf finds the name, as in /proc/diskstats, of the disk that holds
// path: the file system's device, or the disk of its partition. A file
// system on no device of its own (overlay, tmpfs, btrfs subvolumes) is
// looked up in the mount table, whose source may name the device.
func diskOf(path, procRoot, sysRoot string) (string, error) {
	major, minor, err := deviceOf(path)
	if err != nil {
		return "", err
	}
	if major == 0 { // an anonymous device: ask the mount table
		file, err := os.Open(filepath.Join(procRoot, "self", "mountinfo"))
		if err != nil {
			return "", fmt.Errorf("%s is on an anonymous device 0:%d: %w", path, minor, err)
		}
		fsType, source, found := findMount(file, major, minor)
		file.Close()
		if !found {
			return "", fmt.Errorf("%s is on anonymous device 0:%d, not in the mount table", path, minor)
		}
		if !strings.HasPrefix(source, "/dev/") {
			return "", fmt.Errorf("%s is on %s (%s), which has no block device", path, fsType, source)
		}
		if major, minor, err = blockDeviceOf(source); err != nil {
			return "", fmt.Errorf("%s is on %s: %w", path, source, err)
		}
	}
	return diskName(sysRoot, major, minor)
}

// diskName resolves a block device number through sysfs to the disk's
// name; a partition resolves to its disk, which is where util and queue
// mean something.
func diskName(sysRoot string, major, minor uint32) (string, error) {
	link := filepath.Join(sysRoot, "dev", "block", fmt.Sprintf("%d:%d", major, minor))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "", fmt.Errorf("block device %d:%d: %w", major, minor, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("block device %d:%d: %w", major, minor, err)
	}
	return filepath.Base(dir), nil
}

// findMount looks up the mount of device major:minor in
// /proc/self/mountinfo and returns its file system type and source.
func findMount(r io.Reader, major, minor uint32) (fsType, source string, found bool) {
	want := fmt.Sprintf("%d:%d", major, minor)
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		// id parent major:minor root mountpoint options [optional…] - type source superoptions
		fields := strings.Fields(scanner.Text())
		if len(fields) < 3 || fields[2] != want {
			continue
		}
		for i, field := range fields {
			if field == "-" && i+2 < len(fields) {
				return fields[i+1], fields[i+2], true
			}
		}
	}
	return "", "", false
}
