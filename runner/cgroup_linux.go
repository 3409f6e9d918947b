package runner

import (
	"bufio"
	"os"
	"strings"
	"syscall"
)

// hostCgroup returns the kernel's id of the process's cgroup v2 and of its
// ancestors, the root's first: the inode numbers of their directories in
// the cgroup2 hierarchy (kernfs node ids are inode numbers), or 1, the
// root's, when they cannot be found.
func hostCgroup() (uint64, []uint64) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return 1, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		path, ok := strings.CutPrefix(sc.Text(), "0::")
		if !ok {
			continue
		}
		dir, ids := "/sys/fs/cgroup", []uint64(nil)
		for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
			ids = append(ids, inode(dir))
			if name == "" {
				break
			}
			dir += "/" + name
		}
		if len(path) > 1 {
			ids = append(ids, inode(dir))
		}
		return ids[len(ids)-1], ids[:len(ids)-1]
	}
	return 1, nil
}

// inode is the inode number of a directory, 1 (the root cgroup's) when it
// cannot be read.
func inode(dir string) uint64 {
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) != nil {
		return 1
	}
	return st.Ino
}
