// Package auth holds the gateway's access token: where it comes from, where it
// is persisted, and the bearer check that guards the MCP endpoint.
package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvVar is the environment variable the SDKs set to the token before they run
// the gateway. The gateway removes it from every environment it passes on.
const EnvVar = "GATEWAY_ACCESS_TOKEN"

// ErrEmptyToken is returned where a token is required and none is configured.
// An empty token must never open the endpoint.
var ErrEmptyToken = errors.New("empty access token")

// NewToken returns a random token of 256 bits, hex encoded. It is used when
// the gateway is started without GATEWAY_ACCESS_TOKEN, so that the endpoint is
// never left open.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Resolve returns fromEnv when it is set, or a fresh random token. Surrounding
// white space is not part of a token: SDKs and shells add newlines.
func Resolve(fromEnv string) (token string, generated bool, err error) {
	if t := strings.TrimSpace(fromEnv); t != "" {
		return t, false, nil
	}
	t, err := NewToken()
	return t, true, err
}

// WriteFile persists token at path with mode 0600, creating the parent
// directory (0700) if needed. The write is atomic (temp file, fsync, rename),
// so a reader such as get_mcp_token() never sees a partial token.
func WriteFile(path, token string) error {
	if token == "" {
		return fmt.Errorf("write token file %s: %w", path, ErrEmptyToken)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write token file %s: %w", path, err)
	}
	// CreateTemp already uses 0600; Chmod guards against an unusual umask-free
	// filesystem and documents the intent.
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.WriteString(token); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write token file %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write token file %s: %w", path, err)
	}
	return nil
}

// ReadFile reads a token written by WriteFile. An empty file is an error:
// serving with an empty token would refuse every request.
func ReadFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("read token file %s: %w", path, ErrEmptyToken)
	}
	return t, nil
}
