package sandbox

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeTestFile(t *testing.T, path string, data string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // bypass the umask
		t.Fatal(err)
	}
}

func TestReadFileText(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	path := filepath.Join(h.workdir, "notes.txt")
	writeTestFile(t, path, "hello\nworld\n", 0o644)

	out, text := ok[readOutput](h, "read_file", map[string]any{"path": "notes.txt"})
	want := readOutput{Path: path, Content: "hello\nworld\n", Encoding: "utf-8", Length: 12, Size: 12, EOF: true}
	if out != want || text != want.Content {
		t.Errorf("whole file: got %+v and text %q, want %+v", out, text, want)
	}

	out, text = ok[readOutput](h, "read_file", map[string]any{"path": path, "offset": 6, "limit": 3})
	want = readOutput{Path: path, Content: "wor", Encoding: "utf-8", Offset: 6, Length: 3, Size: 12}
	if out != want {
		t.Errorf("slice: got %+v, want %+v", out, want)
	}
	if !strings.HasPrefix(text, "wor\n") || !strings.Contains(text, "offset 9") {
		t.Errorf("slice: text %q should say where to continue", text)
	}
}

func TestReadFileKeepsSplitCharacterForNextRead(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	path := filepath.Join(h.workdir, "utf8.txt")
	writeTestFile(t, path, "aé!", 0o644) // é is 2 bytes

	out, _ := ok[readOutput](h, "read_file", map[string]any{"path": path, "limit": 2})
	if out.Encoding != "utf-8" || out.Content != "a" || out.Length != 1 || out.EOF {
		t.Errorf("got %+v, want utf-8 %q, length 1, not EOF", out, "a")
	}
	out, _ = ok[readOutput](h, "read_file", map[string]any{"path": path, "offset": 1})
	if out.Content != "é!" || !out.EOF {
		t.Errorf("continuation: got %+v", out)
	}
}

func TestReadFileCapsAtMaxReadBytes(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{MaxReadBytes: 10})
	path := filepath.Join(h.workdir, "big.txt")
	writeTestFile(t, path, strings.Repeat("x", 25), 0o644)
	out, _ := ok[readOutput](h, "read_file", map[string]any{"path": path, "limit": 1000})
	if out.Length != 10 || out.EOF || out.Size != 25 {
		t.Errorf("got %+v, want 10 bytes of 25, not EOF", out)
	}
}

func TestReadFileBinary(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	data := []byte{0x89, 'P', 'N', 'G', 0x00, 0xff, 0x10}
	path := filepath.Join(h.workdir, "image.png")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, text := ok[readOutput](h, "read_file", map[string]any{"path": path})
	if out.Encoding != "base64" || out.Length != int64(len(data)) || !out.EOF {
		t.Errorf("got %+v, want base64 of %d bytes", out, len(data))
	}
	got, err := base64.StdEncoding.DecodeString(out.Content)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("content decodes to %x (%v), want %x", got, err, data)
	}
	if !strings.Contains(text, out.Content) || !strings.Contains(text, "binary") {
		t.Errorf("text %q should say binary and carry the base64", text)
	}
}

func TestReadFileErrors(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	missing := filepath.Join(h.workdir, "missing")
	if msg := h.toolError("read_file", map[string]any{"path": missing}); msg != "read_file: "+missing+": no such file or directory" {
		t.Errorf("missing file: %q", msg)
	}
	if msg := h.toolError("read_file", map[string]any{"path": "missing"}); msg != "read_file: "+missing+": no such file or directory" {
		t.Errorf("missing relative file: %q", msg)
	}
	if msg := h.toolError("read_file", map[string]any{"path": h.workdir}); !strings.HasPrefix(msg, "read_file: "+h.workdir+": is a directory") {
		t.Errorf("directory: %q", msg)
	}
	fifo := filepath.Join(h.workdir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Opening a FIFO for reading blocks until a writer appears; give it
	// one so the server can see the type and refuse.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if msg := h.toolError("read_file", map[string]any{"path": fifo}); msg != "read_file: "+fifo+": not a regular file" {
		t.Errorf("fifo: %q", msg)
	}
	if msg := h.toolError("read_file", map[string]any{"path": missing, "offset": -1}); !strings.Contains(msg, "negative") {
		t.Errorf("negative offset: %q", msg)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	out, _ := ok[writeOutput](h, "write_file", map[string]any{"path": "a/b/c.txt", "content": "héllo\n", "mode": "0600"})
	path := filepath.Join(h.workdir, "a", "b", "c.txt")
	if out.Path != path || out.BytesWritten != int64(len("héllo\n")) {
		t.Errorf("got %+v, want %s and %d bytes", out, path, len("héllo\n"))
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "héllo\n" {
		t.Errorf("file holds %q (%v)", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v (%v), want 0600", fi.Mode(), err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v): a temporary file was left behind", entries, err)
	}

	// Overwriting without a mode keeps the old mode, including setgid.
	exe := filepath.Join(h.workdir, "run.sh")
	writeTestFile(t, exe, "old", 0o755|fs.ModeSetgid)
	ok[writeOutput](h, "write_file", map[string]any{"path": exe, "content": "new"})
	if fi, err := os.Stat(exe); err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSetgid) != 0o755|fs.ModeSetgid {
		t.Errorf("mode after overwrite = %v (%v), want setgid 0755", fi.Mode(), err)
	}

	// An explicit mode with special bits.
	ok[writeOutput](h, "write_file", map[string]any{"path": exe, "content": "new", "mode": "4750"})
	if fi, err := os.Stat(exe); err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid) != 0o750|fs.ModeSetuid {
		t.Errorf("mode 4750 gave %v (%v)", fi.Mode(), err)
	}
}

func TestWriteFileBase64(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	data := []byte{0, 1, 2, 0xfe, 0xff}
	path := filepath.Join(h.workdir, "blob.bin")
	out, _ := ok[writeOutput](h, "write_file", map[string]any{
		"path": path, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64",
	})
	if out.BytesWritten != int64(len(data)) {
		t.Errorf("bytes_written = %d, want %d", out.BytesWritten, len(data))
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Errorf("file holds %x (%v), want %x", got, err, data)
	}
	// And it reads back as the same bytes.
	read, _ := ok[readOutput](h, "read_file", map[string]any{"path": path})
	if got, _ := base64.StdEncoding.DecodeString(read.Content); read.Encoding != "base64" || !bytes.Equal(got, data) {
		t.Errorf("round trip: %+v", read)
	}
}

func TestWriteFileThroughSymlinkKeepsLink(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	target := filepath.Join(h.workdir, "real.txt")
	link := filepath.Join(h.workdir, "link.txt")
	writeTestFile(t, target, "old", 0o644)
	if err := os.Symlink("real.txt", link); err != nil {
		t.Fatal(err)
	}
	out, _ := ok[writeOutput](h, "write_file", map[string]any{"path": link, "content": "new"})
	if out.Path != target {
		t.Errorf("path = %s, want the link target %s", out.Path, target)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link was replaced: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new" {
		t.Errorf("target holds %q", got)
	}
}

func TestWriteFileErrors(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	writeTestFile(t, filepath.Join(h.workdir, "plain"), "x", 0o644)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "f", "content": "x", "mode": "rw-r--r--"}, `write_file: mode "rw-r--r--"`},
		{map[string]any{"path": "f", "content": "x", "mode": "10000"}, `write_file: mode "10000"`},
		{map[string]any{"path": "f", "content": "!!", "encoding": "base64"}, "write_file: content is not valid base64"},
		{map[string]any{"path": "f", "content": "x", "encoding": "latin1"}, `write_file: encoding "latin1"`},
		{map[string]any{"path": h.workdir, "content": "x"}, "write_file: " + h.workdir + ": not a regular file"},
		{map[string]any{"path": "plain/child", "content": "x"}, "write_file: " + filepath.Join(h.workdir, "plain", "child") + ": not a directory"},
	}
	for _, c := range cases {
		if msg := h.toolError("write_file", c.args); !strings.HasPrefix(msg, c.want) {
			t.Errorf("%v: error %q, want prefix %q", c.args, msg, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(h.workdir, "f")); err == nil {
		t.Error("a refused write created the file")
	}
}

func TestListDirectory(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	dir := filepath.Join(h.workdir, "d")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(dir, "adir"), 0o755),
		os.WriteFile(filepath.Join(dir, "b.txt"), []byte("abc"), 0o644),
		os.Symlink("b.txt", filepath.Join(dir, "c-link")),
		syscall.Mkfifo(filepath.Join(dir, "d-fifo"), 0o644),
		os.WriteFile(filepath.Join(dir, "B-upper"), nil, 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	out, text := ok[listOutput](h, "list_directory", map[string]any{"path": "d"})
	want := []listEntry{
		{Name: "B-upper", Type: "file"},
		{Name: "adir", Type: "dir"},
		{Name: "b.txt", Type: "file", Size: 3},
		{Name: "c-link", Type: "symlink", Size: int64(len("b.txt"))},
		{Name: "d-fifo", Type: "other"},
	}
	if out.Path != dir || out.Truncated || len(out.Entries) != len(want) {
		t.Fatalf("got %+v, want %d entries of %s", out, len(want), dir)
	}
	for i, e := range want {
		got := out.Entries[i]
		if e.Type == "dir" {
			got.Size = 0 // directory sizes depend on the file system
		}
		if got != e {
			t.Errorf("entry %d = %+v, want %+v", i, out.Entries[i], e)
		}
	}
	if !strings.Contains(text, "file\t3\tb.txt") {
		t.Errorf("text %q lacks the b.txt line", text)
	}

	empty, _ := ok[listOutput](h, "list_directory", map[string]any{"path": "d/adir"})
	if empty.Entries == nil || len(empty.Entries) != 0 {
		t.Errorf("empty dir: entries = %#v, want an empty list", empty.Entries)
	}

	missing := filepath.Join(h.workdir, "nope")
	if msg := h.toolError("list_directory", map[string]any{"path": missing}); msg != "list_directory: "+missing+": no such file or directory" {
		t.Errorf("missing dir: %q", msg)
	}
	file := filepath.Join(dir, "b.txt")
	if msg := h.toolError("list_directory", map[string]any{"path": file}); msg != "list_directory: "+file+": not a directory" {
		t.Errorf("file: %q", msg)
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	path := filepath.Join(h.workdir, "code.go")
	const orig = "one two two three\n"
	writeTestFile(t, path, orig, 0o640)

	msg := h.toolError("edit_file", map[string]any{"path": path, "old_text": "two", "new_text": "2"})
	if want := "edit_file: " + path + ": found 2 occurrences of old_text, expected 1"; !strings.HasPrefix(msg, want) {
		t.Errorf("count mismatch: %q, want prefix %q", msg, want)
	}
	msg = h.toolError("edit_file", map[string]any{"path": path, "old_text": "four", "new_text": "4"})
	if !strings.Contains(msg, "old_text not found") {
		t.Errorf("not found: %q", msg)
	}
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Fatalf("a refused edit changed the file to %q", got)
	}

	out, _ := ok[editOutput](h, "edit_file", map[string]any{"path": "code.go", "old_text": "two", "new_text": "2", "expected_replacements": 2})
	if out.Replacements != 2 || out.Path != path {
		t.Errorf("got %+v", out)
	}
	ok[editOutput](h, "edit_file", map[string]any{"path": path, "old_text": "three\n", "new_text": "3\n"})
	if got, _ := os.ReadFile(path); string(got) != "one 2 2 3\n" {
		t.Errorf("file holds %q", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after edit = %v (%v), want 0640", fi.Mode(), err)
	}

	missing := filepath.Join(h.workdir, "missing.go")
	if msg := h.toolError("edit_file", map[string]any{"path": missing, "old_text": "a", "new_text": "b"}); msg != "edit_file: "+missing+": no such file or directory" {
		t.Errorf("missing: %q", msg)
	}
	if msg := h.toolError("edit_file", map[string]any{"path": path, "old_text": "", "new_text": "b"}); msg != "edit_file: old_text is empty" {
		t.Errorf("empty old_text: %q", msg)
	}
}
