package main

import (
	"os"
	"strconv"
	"syscall"
)

// keepInheritedFDs marks every file descriptor above stderr close-on-exec, so
// that no process the gateway starts (the background gateway, servers,
// install commands) inherits one. Go opens its own files close-on-exec, but
// descriptors a process inherited are left as they came: the launch's
// pid-file lock and ready pipe (fds 4 and 3 of the background gateway), and
// whatever the caller (the SDK's process agent) leaked into the command.
// Without this a server would hold the pid-file lock, keep the ready pipe
// open and see the caller's pipes (servers get stdin, stdout and
// stderr only). The descriptors stay open and usable in this process.
//
// Call it first thing in main, before any child is started. Without /proc
// it does nothing: there is no other portable way to list descriptors.
func keepInheritedFDs() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own fd is in the listing and already closed;
		// marking a closed fd fails harmlessly.
		syscall.CloseOnExec(fd)
	}
}
