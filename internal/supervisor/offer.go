package supervisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The Go SDK's ClientCapabilities has no member for what newer protocol
// versions let a client offer beside roots, sampling and elicitation, such
// as the client-side tasks capability (2025-11-25: a server may then send
// sampling and elicitation as task-augmented requests and poll the client
// with tasks/*). A server offers some tools only to clients that declare it
// (server-everything's -async tools), so the gateway adds such members to
// its initialize request on the wire: see Options.OfferCapabilities.

// withCapabilities returns the params of an initialize request with extra
// set as members of its capabilities (replacing members of those names).
func withCapabilities(params json.RawMessage, extra map[string]json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("initialize params: %w", err)
	}
	caps := map[string]json.RawMessage{}
	if c := p["capabilities"]; len(c) > 0 && string(c) != "null" {
		if err := json.Unmarshal(c, &caps); err != nil {
			return nil, fmt.Errorf("initialize capabilities: %w", err)
		}
	}
	for k, v := range extra {
		caps[k] = v
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return nil, err
	}
	p["capabilities"] = b
	return json.Marshal(p)
}

// offerWrite rewrites msg when it is the initialize request and extra is
// not empty; other messages are returned as they are.
func offerWrite(msg jsonrpc.Message, extra map[string]json.RawMessage) (jsonrpc.Message, error) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "initialize" || len(extra) == 0 {
		return msg, nil
	}
	params, err := withCapabilities(req.Params, extra)
	if err != nil {
		return nil, err
	}
	out := *req
	out.Params = params
	return &out, nil
}

// offerBody rewrites an HTTP request's body when it is the initialize
// request (a remote's handshake: the SDK's streamable client talks to its
// connection through an unexported interface, so the connection cannot be
// wrapped as a stdio server's is).
func offerBody(req *http.Request, extra map[string]json.RawMessage) error {
	if len(extra) == 0 || req.Body == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return err
	}
	if msg, derr := jsonrpc.DecodeMessage(body); derr == nil {
		out, err := offerWrite(msg, extra)
		if err != nil {
			return err
		}
		if out != msg {
			if body, err = jsonrpc.EncodeMessage(out); err != nil {
				return err
			}
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}
