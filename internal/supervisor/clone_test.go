package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// requireGit skips tests that serve repositories through git's own upload-pack (file:// and smart HTTP).
func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found; file:// clones need git-upload-pack")
	}
}

// newSourceRepo makes a work-tree repository with two commits, so a shallow clone is distinguishable from
// a full one. The second commit leaves README.md = "v2\n".
func newSourceRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for i, content := range []string{"v1\n", "v2\n"} {
		if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("README.md"); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "fixture", Email: "fixture@example.com", When: time.Unix(1700000000+int64(i), 0)}
		if _, err := wt.Commit("commit "+strconv.Itoa(i+1), &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newMirror puts a bare copy of src at <mirror>/<rel> and returns the mirror directory.
func newMirror(t *testing.T, src, rel string) string {
	t.Helper()
	mirror := t.TempDir()
	if _, err := git.PlainClone(filepath.Join(mirror, rel), true, &git.CloneOptions{URL: src}); err != nil {
		t.Fatalf("make bare mirror: %v", err)
	}
	return mirror
}

// assertClone checks that dir is a shallow (one commit) checkout of the fixture's latest commit.
func assertClone(t *testing.T, dir string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatalf("read clone: %v", err)
	}
	if string(got) != "v2\n" {
		t.Fatalf("README.md = %q, want %q", got, "v2\n")
	}
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if commit.Message != "commit 2" {
		t.Fatalf("HEAD is %q, want the latest commit", commit.Message)
	}
	shallow, err := r.Storer.Shallow()
	if err != nil {
		t.Fatal(err)
	}
	if len(shallow) != 1 || shallow[0] != head.Hash() {
		t.Fatalf("shallow commits = %v, want [%v] (depth 1)", shallow, head.Hash())
	}
	if _, err := r.CommitObject(commit.ParentHashes[0]); err == nil {
		t.Fatal("parent commit was fetched: clone is not shallow")
	}
}

// assertOnlyEntries fails unless dir holds exactly the named entries (no leftover temporary clones).
func assertOnlyEntries(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("entries of %s = %v, want %v", dir, got, want)
	}
}

func TestCloneFromFileMirrorWithGitSuffix(t *testing.T) {
	requireGit(t)
	mirror := newMirror(t, newSourceRepo(t), "acme/x.git")
	root := t.TempDir()

	dir, err := Clone(context.Background(), "acme", "x", CloneOptions{BaseURL: "file://" + mirror, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "github", "acme", "x"); dir != want {
		t.Fatalf("Clone dir = %s, want %s", dir, want)
	}
	assertClone(t, dir)
	assertOnlyEntries(t, filepath.Join(root, "github", "acme"), "x")
}

func TestCloneReusesCompleteCloneWithoutNetwork(t *testing.T) {
	requireGit(t)
	mirror := newMirror(t, newSourceRepo(t), "acme/x") // plain path, no .git suffix
	root := t.TempDir()
	opts := CloneOptions{BaseURL: "file://" + mirror + "/", Root: root} // trailing slash is tolerated

	first, err := Clone(context.Background(), "acme", "x", opts)
	if err != nil {
		t.Fatal(err)
	}
	assertClone(t, first)
	marker := filepath.Join(first, "local-change")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(mirror); err != nil {
		t.Fatal(err)
	}

	second, err := Clone(context.Background(), "acme", "x", opts)
	if err != nil {
		t.Fatalf("second Clone with the source gone: %v", err)
	}
	if second != first {
		t.Fatalf("second Clone = %s, want %s", second, first)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("existing clone was replaced: %v", err)
	}
}

func TestCloneIgnoresInterruptedClones(t *testing.T) {
	requireGit(t)
	mirror := newMirror(t, newSourceRepo(t), "acme/x.git")
	root := t.TempDir()
	opts := CloneOptions{BaseURL: "file://" + mirror, Root: root}
	owner := filepath.Join(root, "github", "acme")

	// A clone cancelled before it starts leaves neither the destination nor its temporary directory.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Clone(ctx, "acme", "x", opts); err == nil {
		t.Fatal("Clone with a cancelled context succeeded")
	}
	assertOnlyEntries(t, owner)

	// A temporary directory left by a process killed mid-clone is not taken for the clone.
	leftover := filepath.Join(owner, ".x.partial-12345")
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(leftover, "README.md"), []byte("half\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := Clone(context.Background(), "acme", "x", opts)
	if err != nil {
		t.Fatal(err)
	}
	assertClone(t, dir)
	assertOnlyEntries(t, owner, ".x.partial-12345", "x")
}

func TestCloneMissingRepository(t *testing.T) {
	requireGit(t)
	mirror := t.TempDir()
	root := t.TempDir()

	_, err := Clone(context.Background(), "acme", "missing", CloneOptions{BaseURL: "file://" + mirror, Root: root})
	if err == nil {
		t.Fatal("Clone of a missing repository succeeded")
	}
	want := "clone github/acme/missing from file://" + mirror + "/acme/missing: repository not found"
	if err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
	if !errors.Is(err, transport.ErrRepositoryNotFound) {
		t.Fatalf("error %v does not wrap transport.ErrRepositoryNotFound", err)
	}
	assertOnlyEntries(t, filepath.Join(root, "github", "acme"))
}

func TestCloneRejectsBadInput(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		owner, repo, base, want string
	}{
		{"..", "x", "", `clone github/../x: invalid path element ".."`},
		{"acme", "a/b", "", `clone github/acme/a/b: invalid path element "a/b"`},
		{"acme", "", "", `clone github/acme/: invalid path element ""`},
		{"acme", "x..y", "", `clone github/acme/x..y: invalid path element "x..y"`},
		{"acme", "x", "ssh://git@example.com", `clone github/acme/x: base URL ssh://git@example.com/acme/x: unsupported scheme "ssh" (want https, http or file)`},
	}
	for _, c := range cases {
		_, err := Clone(context.Background(), c.owner, c.repo, CloneOptions{BaseURL: c.base, Root: root})
		if err == nil || err.Error() != c.want {
			t.Errorf("Clone(%q, %q) error = %v, want %q", c.owner, c.repo, err, c.want)
		}
	}
	// Nothing but the owner directory for the rejected scheme case may have been created.
	if _, err := os.Stat(filepath.Join(root, "github", "acme", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rejected clone left a destination: %v", err)
	}
}

func TestCloneConcurrentCallsShareOneClone(t *testing.T) {
	requireGit(t)
	mirror := newMirror(t, newSourceRepo(t), "acme/x.git")
	root := t.TempDir()
	opts := CloneOptions{BaseURL: "file://" + mirror, Root: root}

	const n = 4
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dirs[i], errs[i] = Clone(context.Background(), "acme", "x", opts) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Clone %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("Clone %d = %s, want %s", i, dirs[i], dirs[0])
		}
	}
	assertClone(t, dirs[0])
	assertOnlyEntries(t, filepath.Join(root, "github", "acme"), "x")
}

// TestCloneSmartHTTP serves the mirror with git's own http-backend, the server side GitHub speaks, so the
// https code path (go-git's HTTP transport, no git binary on the client side) is exercised for real.
func TestCloneSmartHTTP(t *testing.T) {
	requireGit(t)
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not available: %v", err)
	}
	mirror := newMirror(t, newSourceRepo(t), "acme/x.git")
	srv := httptest.NewServer(&cgi.Handler{
		Path:   backend,
		Root:   "/git",
		Env:    []string{"GIT_PROJECT_ROOT=" + mirror, "GIT_HTTP_EXPORT_ALL=1"},
		Stderr: io.Discard,
	})
	t.Cleanup(srv.Close)
	root := t.TempDir()
	opts := CloneOptions{BaseURL: srv.URL + "/git", Root: root}

	dir, err := Clone(context.Background(), "acme", "x", opts)
	if err != nil {
		t.Fatal(err)
	}
	assertClone(t, dir)

	_, err = Clone(context.Background(), "acme", "missing", opts)
	if !errors.Is(err, transport.ErrRepositoryNotFound) {
		t.Fatalf("missing repository over HTTP: error = %v, want repository not found", err)
	}
	if want := "clone github/acme/missing from " + srv.URL + "/git/acme/missing: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want prefix %q", err, want)
	}
}

func TestInstallRunsOncePerCommand(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "FIXTURE_VAR=from-env"}
	cmd1 := `printf '%s\n' "$FIXTURE_VAR" >> runs.txt; echo to-stdout; echo to-stderr >&2`
	runs := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "runs.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	var stdout, stderr bytes.Buffer
	ran, err := Install(context.Background(), dir, cmd1, env, &stdout, &stderr)
	if err != nil || !ran {
		t.Fatalf("first Install = %v, %v; want true, nil", ran, err)
	}
	if stdout.String() != "to-stdout\n" || stderr.String() != "to-stderr\n" {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if got := runs(); got != "from-env\n" {
		t.Fatalf("runs.txt = %q after one run (env or dir not applied)", got)
	}

	ran, err = Install(context.Background(), dir, cmd1, env, nil, nil)
	if err != nil || ran {
		t.Fatalf("second Install with the same command = %v, %v; want false, nil", ran, err)
	}
	if got := runs(); got != "from-env\n" {
		t.Fatalf("runs.txt = %q: the stamped command ran again", got)
	}

	ran, err = Install(context.Background(), dir, `echo changed >> runs.txt`, env, nil, nil)
	if err != nil || !ran {
		t.Fatalf("Install with a changed command = %v, %v; want true, nil", ran, err)
	}
	if got := runs(); got != "from-env\nchanged\n" {
		t.Fatalf("runs.txt = %q after the changed command", got)
	}

	ran, err = Install(context.Background(), dir, "  ", env, nil, nil)
	if err != nil || ran {
		t.Fatalf("Install with an empty command = %v, %v; want false, nil", ran, err)
	}
}

func TestInstallFailureReportsExitStatusAndRetries(t *testing.T) {
	dir := t.TempDir()
	cmd := `echo run >> runs.txt; echo boom >&2; exit 3`
	var stderr bytes.Buffer

	for attempt := 1; attempt <= 2; attempt++ {
		ran, err := Install(context.Background(), dir, cmd, nil, nil, &stderr)
		if !ran || err == nil {
			t.Fatalf("attempt %d: Install = %v, %v; want true and an error", attempt, ran, err)
		}
		want := `install "` + cmd + `" in ` + dir + `: exit status 3`
		if err.Error() != want {
			t.Fatalf("error = %q, want %q", err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, InstallStampFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("failed install left a stamp: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "run\nrun\n" {
		t.Fatalf("runs.txt = %q: a failed install must run again next time", b)
	}
	if stderr.String() != "boom\nboom\n" {
		t.Fatalf("stderr = %q", stderr.String())
	}
}

// pidWriter hands the first line written to it (the background child's pid) to the test.
type pidWriter struct {
	once sync.Once
	buf  bytes.Buffer
	ch   chan int
}

func (w *pidWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if line, err := bufio.NewReader(bytes.NewReader(w.buf.Bytes())).ReadString('\n'); err == nil {
		w.once.Do(func() {
			pid, _ := strconv.Atoi(strings.TrimSpace(line))
			w.ch <- pid
		})
	}
	return len(p), nil
}

// becomeSubreaper makes this process a child subreaper, so a background child orphaned when its shell
// dies is re-parented here and waitKilled observes its death directly instead of polling for it.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skipf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
}

// waitKilled fails unless process pid (an orphan re-parented to us) ended by SIGKILL. If Install failed to
// kill it, this blocks until its sleep ends and then fails.
func waitKilled(t *testing.T, pid int) {
	t.Helper()
	var ws syscall.WaitStatus
	_, err := syscall.Wait4(pid, &ws, 0, nil)
	switch {
	case errors.Is(err, syscall.ECHILD):
		// The shell reaped it before dying: it must be gone.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("background child %d still exists (kill 0: %v)", pid, err)
		}
	case err != nil:
		t.Fatalf("wait4(%d): %v", pid, err)
	case !ws.Signaled() || ws.Signal() != syscall.SIGKILL:
		t.Fatalf("background child %d ended with %v, want killed by SIGKILL", pid, ws)
	}
}

func TestInstallCancelKillsProcessGroup(t *testing.T) {
	becomeSubreaper(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &pidWriter{ch: make(chan int, 1)}
	type result struct {
		ran bool
		err error
	}
	done := make(chan result, 1)
	dir := t.TempDir()
	go func() {
		ran, err := Install(ctx, dir, `sleep 100 & echo $!; wait`, nil, w, io.Discard)
		done <- result{ran, err}
	}()

	pid := <-w.ch
	if pid <= 0 {
		t.Fatalf("bad pid line %q", w.buf.String())
	}
	cancel()
	res := <-done
	if !res.ran || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("cancelled Install = %v, %v; want true and context.Canceled", res.ran, res.err)
	}
	if !strings.Contains(res.err.Error(), "signal: killed") {
		t.Fatalf("error %q does not say the command was killed", res.err)
	}
	waitKilled(t, pid)
	if _, err := os.Stat(filepath.Join(dir, InstallStampFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cancelled install left a stamp: %v", err)
	}
}

// TestInstallBackgroundChildDoesNotHang covers an install command that exits 0 but leaves a child holding
// its stdout open: Install must still return (after installWaitDelay), count as a success, and kill the child.
func TestInstallBackgroundChildDoesNotHang(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	becomeSubreaper(t)
	dir := t.TempDir()
	w := &pidWriter{ch: make(chan int, 1)}
	ran, err := Install(context.Background(), dir, `sleep 100 & echo $!`, nil, w, io.Discard)
	if err != nil || !ran {
		t.Fatalf("Install = %v, %v; want true, nil", ran, err)
	}
	waitKilled(t, <-w.ch)
	if _, err := os.Stat(filepath.Join(dir, InstallStampFile)); err != nil {
		t.Fatalf("successful install wrote no stamp: %v", err)
	}
}

// TestCloneAuthenticationRequired: GitHub answers 401 for missing and private repositories alike, so the
// error must not claim only one of the two.
func TestCloneAuthenticationRequired(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	_, err := Clone(context.Background(), "acme", "private", CloneOptions{BaseURL: srv.URL, Root: root})
	want := "clone github/acme/private from " + srv.URL + "/acme/private: repository not found or private: authentication required"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want prefix %q", err, want)
	}
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("error %v does not wrap transport.ErrAuthenticationRequired", err)
	}
	assertOnlyEntries(t, filepath.Join(root, "github", "acme"))
}
