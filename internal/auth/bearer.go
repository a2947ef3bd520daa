package auth

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
)

// Bearer returns a handler that passes a request to next only when its
// Authorization header carries "Bearer <token>". The scheme is compared case
// insensitively (RFC 7235); the token in constant time, so response timing
// does not reveal how much of a guess was right. The token is accepted from the
// header only, never from a query parameter or a cookie, where it would end up
// in logs and browser history. The check runs before the body is read.
//
// An empty token refuses every request: a misconfigured gateway fails closed.
// tokenFile, if not empty, is where a client on the machine can read the
// token; the 401 names it (the gateway's own path, which differs between a
// sandbox and `make run`).
func Bearer(token, tokenFile string, next http.Handler) http.Handler {
	want := []byte(token)
	refusal := unauthorizedBody(tokenFile)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(want) == 0 || !matches(r.Header.Get("Authorization"), want) {
			writeUnauthorized(w, refusal)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Matches reports whether an Authorization header value carries the token,
// by the same rules as Bearer, for code that reads requests without
// net/http (the gateway's HTTP lane checks the token before reading a body).
func Matches(header, token string) bool {
	return token != "" && matches(header, []byte(token))
}

func matches(header string, want []byte) bool {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := []byte(strings.TrimSpace(cred))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// unauthorizedBody is the JSON-RPC error of a 401: what to send, and where
// the token is when tokenFile is known.
func unauthorizedBody(tokenFile string) []byte {
	msg := "unauthorized: send the gateway token as 'Authorization: Bearer <token>'"
	if tokenFile != "" {
		msg += " (the token is in " + tokenFile + ")"
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	body := struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{-32001, msg}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // ends the body with a newline
	enc.SetEscapeHTML(false)   // "<token>", not "\u003ctoken\u003e"
	_ = enc.Encode(body)
	return b.Bytes()
}

// writeUnauthorized writes the 401 that MCP clients expect: a
// WWW-Authenticate challenge and a JSON-RPC error body that says what to send.
func writeUnauthorized(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("WWW-Authenticate", `Bearer realm="mcp-gateway"`)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(body)
}
