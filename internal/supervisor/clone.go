package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// DefaultGitHubBaseURL is where Clone fetches from when CloneOptions.BaseURL is empty.
const DefaultGitHubBaseURL = "https://github.com"

// InstallStampFile is the file Install writes in the clone after a successful install. It holds the
// SHA-256 of the install command, so a changed installCmd runs again while an unchanged one is skipped.
const InstallStampFile = ".mcp-gateway-installed"

// installWaitDelay bounds how long Install waits for stdout/stderr to close after the shell exits: a
// background process left behind by the install command may hold them open forever.
const installWaitDelay = 2 * time.Second

// CloneOptions says where Clone fetches from and where it puts clones. The zero value clones from
// GitHub into the current directory, which is rarely wanted: set Root.
type CloneOptions struct {
	// BaseURL is the prefix of repository URLs: https://github.com when empty. It may also be a file://
	// mirror directory or an http(s) smart-git server, e.g. file:///srv/mirrors or http://127.0.0.1:8080/git.
	// The environment variable MCP_GATEWAY_GITHUB_BASE_URL is read by the caller, not here.
	BaseURL string
	// Root is the servers directory, e.g. /opt/mcp-gateway/servers. Clones go to Root/github/<owner>/<repo>.
	Root string
}

// Clone makes sure a complete shallow clone of <BaseURL>/<owner>/<repo> exists at
// <Root>/github/<owner>/<repo> and returns that directory.
//
// The clone is made in a temporary directory next to the destination and renamed into place, so the
// destination exists only when complete: an existing destination is reused without touching the network,
// and an interrupted clone (killed process, cancelled ctx) is never taken for a complete one. Calls for the
// same repository may run concurrently: the first rename wins and the others reuse its result.
//
// owner and repo are expected to be validated by the caller; Clone still rejects any that would escape Root.
// Cloning over https needs no git binary; a file:// BaseURL needs git-upload-pack, as with git itself.
func Clone(ctx context.Context, owner, repo string, opts CloneOptions) (string, error) {
	name := "github/" + owner + "/" + repo
	for _, el := range []string{owner, repo} {
		if err := checkPathElement(el); err != nil {
			return "", fmt.Errorf("clone %s: %w", name, err)
		}
	}
	dest := filepath.Join(opts.Root, "github", owner, repo)
	if done, err := isCompleteClone(dest); err != nil || done {
		if err != nil {
			return "", fmt.Errorf("clone %s: %w", name, err)
		}
		return dest, nil
	}

	repoURL, shownURL, err := repositoryURL(opts.BaseURL, owner, repo)
	if err != nil {
		return "", fmt.Errorf("clone %s: %w", name, err)
	}

	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("clone %s: %w", name, err)
	}
	// The leading dot and the ".partial-" infix keep the temporary directory from looking like any
	// repository name a caller would pass; nothing ever treats it as a clone.
	tmp, err := os.MkdirTemp(parent, "."+repo+".partial-")
	if err != nil {
		return "", fmt.Errorf("clone %s: %w", name, err)
	}
	defer os.RemoveAll(tmp) // a no-op after a successful rename

	_, err = git.PlainCloneContext(ctx, tmp, false, &git.CloneOptions{
		URL:          repoURL,
		Depth:        1,
		SingleBranch: true,
		Tags:         git.NoTags,
	})
	if err != nil {
		if errors.Is(err, transport.ErrAuthenticationRequired) {
			// GitHub answers 401, not 404, for a repository that does not exist or is private.
			err = fmt.Errorf("repository not found or private: %w", err)
		}
		return "", fmt.Errorf("clone %s from %s: %w", name, shownURL, err)
	}

	if err := os.Rename(tmp, dest); err != nil {
		// A concurrent Clone of the same repository renamed first: its clone is as good as ours.
		if done, statErr := isCompleteClone(dest); statErr == nil && done {
			return dest, nil
		}
		return "", fmt.Errorf("clone %s: %w", name, err)
	}
	return dest, nil
}

// checkPathElement rejects owner/repo values that would make the clone path leave Root/github.
func checkPathElement(el string) error {
	switch {
	case el == "" || el == "." || el == "..":
		return fmt.Errorf("invalid path element %q", el)
	case strings.ContainsAny(el, `/\`) || strings.Contains(el, "..") || strings.ContainsRune(el, 0):
		return fmt.Errorf("invalid path element %q", el)
	}
	return nil
}

// isCompleteClone reports whether dest exists. Only the final rename in Clone creates it, so existence is
// completeness.
func isCompleteClone(dest string) (bool, error) {
	fi, err := os.Stat(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, fmt.Errorf("%s exists and is not a directory", dest)
	}
	return true, nil
}

// repositoryURL joins base, owner and repo. It returns the URL to clone and the same URL with any password
// redacted, for error messages. A file:// repository that is not at the plain path is looked up with a
// ".git" suffix, as mirrors usually hold bare repositories named that way; hosted servers resolve the
// suffix themselves.
func repositoryURL(base, owner, repo string) (cloneURL, shown string, err error) {
	if base == "" {
		base = DefaultGitHubBaseURL
	}
	u, err := url.Parse(strings.TrimRight(base, "/") + "/" + owner + "/" + repo)
	if err != nil {
		return "", "", fmt.Errorf("parse base URL: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
	case "file":
		if _, err := os.Stat(u.Path); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(u.Path + ".git"); err == nil {
				u.Path += ".git"
			}
		}
	default:
		return "", "", fmt.Errorf("base URL %s: unsupported scheme %q (want https, http or file)", u.Redacted(), u.Scheme)
	}
	return u.String(), u.Redacted(), nil
}

// Install runs installCmd (via /bin/sh -c, in dir, with env) once per distinct installCmd: a stamp file in
// dir (InstallStampFile) records a hash of the command after success, so a later start with the same command
// skips it and reports ran == false. An empty installCmd does nothing. A failed or cancelled install leaves
// no stamp, so the next start tries again.
//
// env is the complete environment of the command, as in exec.Cmd.Env (nil inherits the gateway's). stdout
// and stderr receive the command's output; nil discards it.
//
// The command runs in its own process group. When ctx is done the whole group is killed with SIGKILL, so
// package managers' children do not outlive a cancelled start; the group is also killed once the shell
// exits, as nothing an install leaves running in the background is wanted.
func Install(ctx context.Context, dir, installCmd string, env []string, stdout, stderr io.Writer) (ran bool, err error) {
	if strings.TrimSpace(installCmd) == "" {
		return false, nil
	}
	sum := sha256.Sum256([]byte(installCmd))
	want := hex.EncodeToString(sum[:]) + "\n"
	stamp := filepath.Join(dir, InstallStampFile)
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return false, nil
	}

	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", installCmd)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = installWaitDelay
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("install %q in %s: %w", installCmd, dir, err)
	}
	err = cmd.Wait()
	_ = killGroup(cmd.Process.Pid) // reap stragglers; ESRCH when the group is already gone
	if errors.Is(err, exec.ErrWaitDelay) {
		// The shell exited 0 but a background child held the output open: the install itself succeeded.
		err = nil
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return true, fmt.Errorf("install %q in %s: %v: %w", installCmd, dir, err, ctxErr)
		}
		return true, fmt.Errorf("install %q in %s: %w", installCmd, dir, err)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		return true, fmt.Errorf("install %q in %s: write stamp: %w", installCmd, dir, err)
	}
	return true, nil
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
