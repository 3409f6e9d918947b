package vm

import "golang.org/x/sys/unix"

// mapPopulate asks mmap to populate the pages it maps.
const mapPopulate = unix.MAP_POPULATE
