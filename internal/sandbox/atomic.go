package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// atomicWrite replaces the file at path with data by writing a temporary
// file in the same directory and renaming it over path, so that a reader (or
// a crash) never sees a half-written file.
//
// A symlink at path is followed and its target replaced, keeping the link; a
// dangling link is replaced by a regular file. mode nil keeps the permission
// bits and owner of an existing file and means 0644 for a new one. mkdirs
// creates missing parent directories. It returns the path actually written.
// Errors read "<path>: <reason>" for the caller to prefix with the tool name.
func atomicWrite(path string, data []byte, mode *fs.FileMode, mkdirs bool) (string, error) {
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			target = resolved
		}
	}
	perm := fs.FileMode(0o644)
	old, err := os.Stat(target)
	switch {
	case err == nil && !old.Mode().IsRegular():
		return "", fmt.Errorf("%s: not a regular file", target)
	case err == nil:
		perm = old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	case errors.Is(err, fs.ErrNotExist):
		// a new file
	default:
		return "", pathError("", target, err)
	}
	if mode != nil {
		perm = *mode
	}

	dir := filepath.Dir(target)
	if mkdirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("%s: create parent directories: %w", target, err)
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return "", pathError("", target, err)
	}
	tmp := f.Name()
	if err := writeSynced(f, data, perm, old); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("%s: %w", target, err)
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return "", pathError("", target, err)
	}
	return target, nil
}

// writeSynced writes data to f, gives it perm (and old's owner when old is
// non-nil and the process may chown), flushes it to disk and closes it.
// f is closed on every path.
func writeSynced(f *os.File, data []byte, perm fs.FileMode, old fs.FileInfo) error {
	_, err := f.Write(data)
	if err == nil && old != nil {
		// Replacing a file must not hand it to whoever runs the server
		// (root, in a gateway sandbox). Best effort: without the
		// privilege the owner cannot change and the new file is ours.
		// Before Chmod, because chown clears setuid and setgid.
		if st, ok := old.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
			_ = f.Chown(int(st.Uid), int(st.Gid))
		}
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileMode converts Unix permission bits, as in "4755", to an fs.FileMode:
// Go keeps setuid, setgid and sticky in its own bit positions.
func fileMode(unix uint32) fs.FileMode {
	m := fs.FileMode(unix & 0o777)
	if unix&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if unix&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if unix&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
