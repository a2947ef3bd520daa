package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxListEntries bounds list_directory for the same reason as
// Options.MaxReadBytes: one huge directory must not produce a frame that
// kills the MCP session.
const maxListEntries = 10000

type readInput struct {
	Path   string `json:"path" jsonschema:"file to read; relative paths resolve against the server workdir"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset to start at"`
	Limit  int64  `json:"limit,omitempty" jsonschema:"maximum number of bytes to return; default and maximum are the server's read cap"`
}

type readOutput struct {
	Path string `json:"path"`
	// Content is the bytes read: verbatim for text, base64 for binary.
	Content string `json:"content"`
	// Encoding is "utf-8" or "base64".
	Encoding string `json:"encoding"`
	Offset   int64  `json:"offset"`
	// Length counts the bytes read (before any base64 encoding).
	Length int64 `json:"length"`
	// Size is the file size as reported by stat (0 for many /proc files).
	Size int64 `json:"size"`
	// EOF reports whether the read reached the end of the file; if not,
	// continue at offset+length.
	EOF bool `json:"eof"`
}

const readDescription = `Read a file inside the sandbox. Text (valid UTF-8 without NUL bytes) is returned as is; anything else is returned base64-encoded with encoding "base64". Large files are returned in pieces: when eof is false, call again with offset = offset + length.`

func (s *server) readFile(_ context.Context, _ *mcp.CallToolRequest, in readInput) (*mcp.CallToolResult, readOutput, error) {
	var out readOutput
	if in.Path == "" {
		return nil, out, errors.New("read_file: path is empty")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return nil, out, fmt.Errorf("read_file: offset and limit must not be negative")
	}
	path := s.resolve(in.Path)
	f, err := os.Open(path)
	if err != nil {
		return nil, out, pathError("read_file: ", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, out, pathError("read_file: ", path, err)
	}
	if fi.IsDir() {
		return nil, out, fmt.Errorf("read_file: %s: is a directory (use list_directory)", path)
	}
	if !fi.Mode().IsRegular() {
		return nil, out, fmt.Errorf("read_file: %s: not a regular file", path)
	}
	limit := int64(s.opts.MaxReadBytes)
	if in.Limit > 0 {
		limit = min(in.Limit, limit)
	}
	if size := fi.Size(); size > 0 {
		limit = min(limit, max(size-in.Offset, 0)) // no 1 MiB buffer for a small file
	}
	// Read one byte more than asked to learn whether this is the end
	// without trusting Size: /proc files report 0, and files grow.
	buf := make([]byte, limit+1)
	n, err := f.ReadAt(buf, in.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, out, pathError("read_file: ", path, err)
	}
	eof := int64(n) <= limit
	data := buf[:min(int64(n), limit)]

	out = readOutput{Path: path, Offset: in.Offset, Size: fi.Size(), EOF: eof}
	var text string
	if k, ok := textLength(data, eof); ok {
		out.Encoding, out.Content, out.Length = "utf-8", string(data[:k]), int64(k)
		text = out.Content
	} else {
		out.Encoding, out.Content, out.Length = "base64", base64.StdEncoding.EncodeToString(data), int64(len(data))
		text = fmt.Sprintf("[binary data, %d bytes from offset %d, base64]\n%s", out.Length, out.Offset, out.Content)
	}
	if !out.EOF {
		text += fmt.Sprintf("\n[... file continues; read again with offset %d]", out.Offset+out.Length)
	}
	return textResult(text), out, nil
}

// textLength reports whether data is text, and how much of it to return. A
// chunk cut short by the limit may end inside a multi-byte character: that
// is still text, and the partial character is left for the next read.
func textLength(data []byte, eof bool) (int, bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return 0, false
	}
	if utf8.Valid(data) {
		return len(data), true
	}
	if eof {
		return 0, false
	}
	k := validPrefix(data)
	if k == 0 || k == len(data) || !utf8.Valid(data[:k]) {
		return 0, false
	}
	return k, true
}

type writeInput struct {
	Path     string `json:"path" jsonschema:"file to write; parent directories are created; relative paths resolve against the server workdir"`
	Content  string `json:"content" jsonschema:"the new file content"`
	Mode     string `json:"mode,omitempty" jsonschema:"permission bits as an octal string such as 0644; default keeps the mode of an existing file, else 0644"`
	Encoding string `json:"encoding,omitempty" jsonschema:"encoding of content: utf-8 (default) or base64"`
}

type writeOutput struct {
	Path         string `json:"path"`
	BytesWritten int64  `json:"bytes_written"`
}

const writeDescription = `Create or replace a file inside the sandbox. Parent directories are created. The write is atomic: readers see the old content or the new, never a mix. Use encoding "base64" for binary content.`

func (s *server) writeFile(_ context.Context, _ *mcp.CallToolRequest, in writeInput) (*mcp.CallToolResult, writeOutput, error) {
	var out writeOutput
	if in.Path == "" {
		return nil, out, errors.New("write_file: path is empty")
	}
	var data []byte
	switch strings.ToLower(in.Encoding) {
	case "", "utf-8", "utf8":
		data = []byte(in.Content)
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, out, fmt.Errorf("write_file: content is not valid base64: %w", err)
		}
	default:
		return nil, out, fmt.Errorf("write_file: encoding %q: want utf-8 or base64", in.Encoding)
	}
	var mode *fs.FileMode
	if in.Mode != "" {
		m, err := strconv.ParseUint(in.Mode, 8, 32)
		if err != nil || m > 0o7777 {
			return nil, out, fmt.Errorf("write_file: mode %q: want octal permission bits such as 0644", in.Mode)
		}
		fm := fileMode(uint32(m))
		mode = &fm
	}
	path := s.resolve(in.Path)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	written, err := atomicWrite(path, data, mode, true)
	if err != nil {
		return nil, out, fmt.Errorf("write_file: %w", err)
	}
	out = writeOutput{Path: written, BytesWritten: int64(len(data))}
	return textResult(fmt.Sprintf("wrote %d bytes to %s", out.BytesWritten, out.Path)), out, nil
}

type listInput struct {
	Path string `json:"path" jsonschema:"directory to list; relative paths resolve against the server workdir"`
}

type listEntry struct {
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other"; symlinks are not followed.
	Type string `json:"type"`
	Size int64  `json:"size"`
}

type listOutput struct {
	Path    string      `json:"path"`
	Entries []listEntry `json:"entries"`
	// Truncated reports that the directory had more entries than returned.
	Truncated bool `json:"truncated"`
}

const listDescription = `List a directory inside the sandbox: each entry's name, type (file, dir, symlink or other) and size in bytes, sorted by name. Symlinks are reported, not followed.`

func (s *server) listDirectory(_ context.Context, _ *mcp.CallToolRequest, in listInput) (*mcp.CallToolResult, listOutput, error) {
	path := s.resolve(in.Path)
	des, err := os.ReadDir(path)
	if err != nil && len(des) == 0 {
		return nil, listOutput{}, pathError("list_directory: ", path, err)
	}
	out := listOutput{Path: path, Entries: make([]listEntry, 0, min(len(des), maxListEntries))}
	if len(des) > maxListEntries {
		des, out.Truncated = des[:maxListEntries], true
	}
	var text strings.Builder
	for _, de := range des {
		e := listEntry{Name: de.Name(), Type: "other"}
		switch t := de.Type(); {
		case t.IsRegular():
			e.Type = "file"
		case t.IsDir():
			e.Type = "dir"
		case t&fs.ModeSymlink != 0:
			e.Type = "symlink"
		}
		// An entry removed since ReadDir is listed with size 0 rather
		// than failing the whole listing.
		if fi, err := de.Info(); err == nil {
			e.Size = fi.Size()
		}
		out.Entries = append(out.Entries, e)
		fmt.Fprintf(&text, "%s\t%d\t%s\n", e.Type, e.Size, e.Name)
	}
	if out.Truncated {
		fmt.Fprintf(&text, "[... only the first %d entries are listed]\n", maxListEntries)
	}
	if len(out.Entries) == 0 {
		text.WriteString("(empty directory)\n")
	}
	return textResult(text.String()), out, nil
}

type editInput struct {
	Path                 string `json:"path" jsonschema:"file to edit; relative paths resolve against the server workdir"`
	OldText              string `json:"old_text" jsonschema:"exact text to replace, including whitespace"`
	NewText              string `json:"new_text" jsonschema:"replacement text"`
	ExpectedReplacements int    `json:"expected_replacements,omitempty" jsonschema:"how many occurrences of old_text must exist; all are replaced; default 1"`
}

type editOutput struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
}

const editDescription = `Replace exact text in a file inside the sandbox. old_text must occur exactly expected_replacements times (default 1), otherwise nothing is changed and the error says how many occurrences were found; add surrounding lines to old_text to make it unique. The file is rewritten atomically.`

func (s *server) editFile(_ context.Context, _ *mcp.CallToolRequest, in editInput) (*mcp.CallToolResult, editOutput, error) {
	var out editOutput
	if in.Path == "" {
		return nil, out, errors.New("edit_file: path is empty")
	}
	if in.OldText == "" {
		return nil, out, errors.New("edit_file: old_text is empty")
	}
	want := in.ExpectedReplacements
	if want < 0 {
		return nil, out, fmt.Errorf("edit_file: expected_replacements %d is negative", want)
	}
	if want == 0 {
		want = 1
	}
	path := s.resolve(in.Path)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, out, pathError("edit_file: ", path, err)
	}
	found := strings.Count(string(data), in.OldText)
	if found != want {
		if found == 0 {
			return nil, out, fmt.Errorf("edit_file: %s: old_text not found (expected %d occurrence(s))", path, want)
		}
		return nil, out, fmt.Errorf("edit_file: %s: found %d occurrences of old_text, expected %d; nothing was changed", path, found, want)
	}
	edited := strings.ReplaceAll(string(data), in.OldText, in.NewText)
	written, err := atomicWrite(path, []byte(edited), nil, false)
	if err != nil {
		return nil, out, fmt.Errorf("edit_file: %w", err)
	}
	out = editOutput{Path: written, Replacements: found}
	return textResult(fmt.Sprintf("replaced %d occurrence(s) in %s", found, written)), out, nil
}
