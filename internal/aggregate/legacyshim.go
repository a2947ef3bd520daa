package aggregate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// The legacy shim: a 2026-era server asks for input by answering a
// tools/call, prompts/get or resources/read with an InputRequiredResult
// (resultType "input_required", inputRequests, requestState), which the
// client answers by sending the request again with inputResponses and the
// requestState as it came. A 2025-era agent knows nothing of that: it
// answers server-to-client requests (sampling/createMessage,
// elicitation/create, roots/list) on its session. So for such an agent the
// gateway does what the SDKs' own legacy shims do for their 2025 clients:
// it sends each input request to the agent as that request, on the call's
// own stream, collects the answers, and retries the server, up to
// maxInputRounds times; the agent sees only the call's final result.
//
// Unlike a 2025 server's requests (requests.go), which carry no reference
// to the call that caused them, an input request comes inside the call's
// own result, so the agent it goes to is exactly the caller.
//
// A 2026-era agent gets the InputRequiredResult as the server sent it (its
// retry is its own), and so does a call with no agent session behind it.

// maxInputRounds bounds the retries of one call: a server that keeps
// asking would otherwise hold the agent in a loop of questions. The SDKs'
// shims allow a handful of rounds; 8 leaves room for real dialogues.
const maxInputRounds = 8

// protocol2026 is the first protocol version whose clients answer an
// InputRequiredResult themselves.
const protocol2026 = "2026-07-28"

// callRaw sends a request of call c to up as raw params and returns the
// server's result. When the server asks for input and c's agent is of the
// 2025 era, it answers the input requests through the agent and returns
// the result of the last retry (see the legacy shim above). c may be nil
// (no agent session: the result goes back as sent).
func (g *Gateway) callRaw(ctx context.Context, c *call, up RawCaller, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx = g.withCaller(ctx, c) // callercaps.go: the agent's own, to 2026 servers
	res, err := tracedCallRaw(ctx, up, method, params)
	if err != nil && legacyAgent(c) {
		return legacyRefusal(method, res, err) // callercaps.go
	}
	if err != nil || !inputRequired(res) || !legacyAgent(c) {
		return res, err
	}
	return g.answerInput(ctx, c, up, method, params, res)
}

// inputRequired reports whether res is an InputRequiredResult. The quick
// look keeps the cost off every other result.
func inputRequired(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte("input_required")) {
		return false
	}
	v, ok, err := rawjson.MemberValue(res, "resultType")
	if err != nil || !ok {
		return false
	}
	var s string
	return json.Unmarshal(v, &s) == nil && s == "input_required"
}

// legacyAgent reports whether c's agent initialized a 2025-era session,
// whose client answers server-to-client requests and not input requests.
func legacyAgent(c *call) bool {
	if c == nil || c.ss == nil {
		return false
	}
	ip := c.ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < protocol2026
}

// inputRound is the part of an InputRequiredResult the shim reads.
// RequestState stays as the bytes the server wrote, so that the retry
// echoes it byte for byte.
type inputRound struct {
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  json.RawMessage            `json:"requestState"`
}

// answerInput runs the shim's rounds for call c, whose first answer was
// res: ask the agent, retry the server with the answers, until the server
// answers with anything but an InputRequiredResult. A capability the
// agent lacks ends the call with inputRefused's answer, as does a server
// still asking after maxInputRounds retries.
func (g *Gateway) answerInput(ctx context.Context, c *call, up RawCaller, method string, params, res json.RawMessage) (json.RawMessage, error) {
	for round := 1; ; round++ {
		var in inputRound
		if err := json.Unmarshal(res, &in); err != nil {
			return nil, fmt.Errorf("%s: input required result: %w", method, err)
		}
		if round > maxInputRounds {
			return shimFailure(method, jsonrpc.CodeInternalError,
				fmt.Sprintf("the server asked for input more than %d times in one call", maxInputRounds))
		}
		responses, err := g.askAgent(ctx, c, in.InputRequests)
		var refused *refusal
		switch {
		case errors.As(err, &refused):
			return shimFailure(method, mcp.CodeMissingRequiredClientCapabilities, refused.msg)
		case err != nil && ctx.Err() != nil:
			return nil, err // the agent cancelled the call: no answer
		case err != nil:
			return shimFailure(method, jsonrpc.CodeInternalError, fmt.Sprintf("asking the agent for the server's input: %v", err))
		}
		retry, err := retryParams(params, responses, in.RequestState)
		if err != nil {
			return nil, fmt.Errorf("%s: retry params: %w", method, err)
		}
		res, err = tracedCallRaw(ctx, up, method, retry)
		if err != nil || !inputRequired(res) {
			return res, err
		}
	}
}

// retryParams returns the call's params (as first sent) with the round's
// answers and the server's requestState as it sent it. A round without
// input requests (a server shedding load) is retried with the state alone.
func retryParams(params json.RawMessage, responses map[string]json.RawMessage, state json.RawMessage) (json.RawMessage, error) {
	out := params
	if len(responses) > 0 {
		b, err := json.Marshal(responses)
		if err != nil {
			return nil, err
		}
		if out, err = rawjson.SetMember(out, "inputResponses", b); err != nil {
			return nil, err
		}
	}
	if len(state) > 0 && !bytes.Equal(state, []byte("null")) {
		return rawjson.SetMember(out, "requestState", state)
	}
	return out, nil
}

// refusal is an input request the agent cannot be asked.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// shimFailure is the answer to a call whose input the agent cannot give
// (a capability it lacks, a failed answer, too many rounds): for a
// tools/call a tool result with isError, so that the model sees why (the
// 2025 idiom, as the TypeScript SDK's shim answers), for the others a
// JSON-RPC error with code.
func shimFailure(method string, code int64, msg string) (json.RawMessage, error) {
	msg = "mcp-gateway: " + msg
	if method == "tools/call" {
		text, err := json.Marshal(msg)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}],"isError":true}`), nil
	}
	return nil, &jsonrpc.Error{Code: code, Message: msg}
}

// askAgent sends every input request of a round to c's agent, at once (a
// server asks in one round what it can use together), and returns the
// answers by the server's keys. A request the agent's client did not
// declare the capability for is a *refusal, found before anything is
// sent.
func (g *Gateway) askAgent(ctx context.Context, c *call, requests map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	type ask struct {
		key, method string
		params      json.RawMessage
	}
	var caps *mcp.ClientCapabilities
	if ip := c.ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		caps = ip.Capabilities
	} else {
		caps = &mcp.ClientCapabilities{}
	}
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the refusal names the first key, the same each time
	var asks []ask
	var missing []string
	for _, k := range keys {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(requests[k], &r); err != nil {
			return nil, fmt.Errorf("input request %q: %w", k, err)
		}
		feature, supports := inputFeature(r.Method, r.Params)
		if supports == nil {
			return nil, &refusal{fmt.Sprintf("input request %q: unknown method %q", k, r.Method)}
		}
		if !supports(caps) {
			missing = append(missing, feature)
			continue
		}
		params := r.Params
		if feature == "URL elicitation" {
			var err error
			if params, err = withElicitationID(params); err != nil {
				return nil, fmt.Errorf("input request %q: %w", k, err)
			}
		}
		asks = append(asks, ask{k, r.Method, params})
	}
	if len(missing) > 0 {
		return nil, &refusal{fmt.Sprintf("the server asked for %s, which the agent's client did not declare at initialize",
			strings.Join(missing, ", "))}
	}
	out := make(map[string]json.RawMessage, len(asks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(asks))
	for i, a := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.askCall(ctx, c, a.method, a.params)
			if err != nil {
				errs[i] = fmt.Errorf("input request %q (%s): %w", a.key, a.method, err)
				return
			}
			mu.Lock()
			out[a.key] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// inputFeature names the client feature a server request needs, and how
// to tell whether a client's capabilities declare it; supports is nil for
// a method that is no server-to-client request an agent answers. The
// same rules check a 2025 server's requests (ServeRequest).
func inputFeature(method string, params json.RawMessage) (feature string, supports func(*mcp.ClientCapabilities) bool) {
	switch method {
	case "sampling/createMessage":
		var p struct {
			Tools          json.RawMessage `json:"tools"`
			ToolChoice     json.RawMessage `json:"toolChoice"`
			IncludeContext string          `json:"includeContext"`
		}
		_ = json.Unmarshal(params, &p)
		switch {
		case p.Tools != nil || p.ToolChoice != nil:
			return "sampling with tools", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil && c.Sampling.Tools != nil }
		case p.IncludeContext != "" && p.IncludeContext != "none":
			return "sampling with context", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil && c.Sampling.Context != nil }
		}
		return "sampling", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil }
	case "elicitation/create":
		var p struct {
			Mode string `json:"mode"`
			URL  string `json:"url"`
		}
		_ = json.Unmarshal(params, &p)
		if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
			return "URL elicitation", func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil && c.Elicitation.URL != nil }
		}
		// A client that declared only URL mode has no forms; one that
		// declared neither is from before modes (forms).
		return "elicitation", func(c *mcp.ClientCapabilities) bool {
			return c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil)
		}
	case "roots/list":
		return "roots", func(c *mcp.ClientCapabilities) bool { return c.RootsV2 != nil }
	}
	return "", nil
}

// withElicitationID returns a URL elicitation's params with an
// elicitationId, which the 2025 era requires of URL mode and the 2026
// era's input requests do not carry (the input request's key names it):
// one is minted when missing, as the TypeScript SDK's shim does.
func withElicitationID(params json.RawMessage) (json.RawMessage, error) {
	if _, ok, err := rawjson.MemberValue(params, "elicitationId"); err != nil || ok {
		return params, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	b[6] = b[6]&0x0f | 0x40 // a version 4 UUID, as the SDKs mint
	b[8] = b[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	return rawjson.SetString(params, "elicitationId", id)
}
