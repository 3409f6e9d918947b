package runner

import (
	"bufio"
	"os"
	"strings"
	"syscall"
)

// hostCgroupID is the kernel's id of the process's cgroup v2: the inode
// number of its directory in the cgroup2 hierarchy (kernfs node ids are
// inode numbers), or 1, the root's, when it cannot be found.
func hostCgroupID() uint64 {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return 1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		path, ok := strings.CutPrefix(sc.Text(), "0::")
		if !ok {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/sys/fs/cgroup"+path, &st) != nil {
			return 1
		}
		return st.Ino
	}
	return 1
}
