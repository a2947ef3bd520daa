package aggregate

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// Pending calls: a 2025-era server that sends sampling, elicitation or
// roots requests while it handles a 2026-era agent's call. The agent has
// no session to receive them on; its revision asks for input by answering
// the call with an InputRequiredResult and takes the answers in a retry of
// the call. The server, though, is blocked inside the one call that sent
// the requests, so the gateway keeps that call running and remembers it:
//
//   - the agent's call starts the upstream call detached from the agent's
//     request. When the server asks for input, the gateway answers the
//     agent with an InputRequiredResult whose inputRequests are the
//     server's requests as sent, and whose requestState names the pending
//     call: gw1.<replica>.<id>.<HMAC>;
//   - the agent's retry (inputResponses + that requestState) hands each
//     answer to the server's waiting request and waits for what comes
//     next: more requests (another InputRequiredResult, same state) or the
//     call's result, which is the retry's answer;
//   - a state whose HMAC fails is refused (-32602), and so is one minted by
//     another replica (no shared store can move a call blocked inside a
//     server process): the agent must run the call again.
//
// An entry lives until its result is taken or pendingTTL passes, when the
// upstream call is cancelled (for a 2025 server: notifications/cancelled).

// pendingTTL bounds how long a call waits for the agent's retry.
const pendingTTL = 5 * time.Minute

// pendingGather is how long the gateway waits, after a server's request,
// for the others it sends at once: a 2025 server sends parallel requests
// (the SDKs' legacy shims send all of a round's inputs concurrently) with
// nothing to say the batch is complete, and one InputRequiredResult with
// all of them saves the agent a round trip per request.
const pendingGather = 50 * time.Millisecond

// statePrefix starts every requestState the gateway mints.
const statePrefix = "gw1."

// pendingTable holds one gateway process's pending calls.
type pendingTable struct {
	replica string
	key     []byte
	seq     atomic.Uint64
	mu      sync.Mutex
	byID    map[string]*pendingCall
}

func newPendingTable() *pendingTable {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	rep := make([]byte, 4)
	_, _ = rand.Read(rep)
	return &pendingTable{replica: hex.EncodeToString(rep), key: key, byID: make(map[string]*pendingCall)}
}

// A pendingCall is one upstream call kept for a 2026-era agent.
type pendingCall struct {
	id     string // set with its first InputRequiredResult (inputRequired)
	t      *pendingTable
	cancel context.CancelFunc
	asks   chan *pendingAsk // the server's requests, as they come
	done   chan struct{}    // closed when res and err are set
	res    mcp.Result
	err    error

	mu      sync.Mutex
	busy    bool                   // a request of the agent is being served on it
	over    bool                   // its result was given: later retries are refused
	waiting map[string]*pendingAsk // sent to the agent, not yet answered
	n       int
	// round counts the InputRequiredResults sent; each has a state of its
	// own (state), so that an agent sees the state change from round to
	// round as a 2026 server's does, and an old one replayed is refused.
	round int
	state string
}

// A pendingAsk is a server's request waiting for the agent's answer.
type pendingAsk struct {
	method string
	params json.RawMessage
	reply  chan pendingReply
}

type pendingReply struct {
	res json.RawMessage
	err error
}

type pendingAskKey struct{}

// pendingAskOf returns the Ask of the pending call ctx belongs to, or nil
// (inflight.beginNotify gives it to calls that have no other).
func pendingAskOf(ctx context.Context) Ask {
	a, _ := ctx.Value(pendingAskKey{}).(Ask)
	return a
}

// mrtrMethod reports whether method may be answered with an
// InputRequiredResult.
func mrtrMethod(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// handlePending is handle for a 2026-era request: a retry that carries a
// gateway requestState resumes its pending call; any other call that may
// need input runs as a pending call; the rest is handle.
func (g *Gateway) handlePending(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	if g.pending == nil || !mrtrMethod(method) {
		return g.handle(ctx, method, req, next)
	}
	params := rawParams(req)
	if params == nil {
		params, _ = json.Marshal(req.GetParams())
	}
	state, _ := stringMember(params, "requestState")
	if strings.HasPrefix(state, statePrefix) {
		p, err := g.pending.resolve(state)
		if err != nil {
			return nil, err
		}
		return g.pending.resume(ctx, p, state, params)
	}
	return g.pending.start(ctx, func(ctx context.Context) (mcp.Result, error) {
		res, err := g.handle(ctx, method, req, next)
		return typedInputRequired(res), err
	})
}

// typedInputRequired returns res with resultType "input_required" when it
// is a server's result that asks for input without saying its type: what
// a Go SDK server sends on a 2025-era session once its own legacy shim has
// used its one retry (the next round's inputRequests and requestState in
// a plain result). A 2026-era agent answers it as the server's own
// InputRequiredResult, and its retry reaches the server with the server's
// state; stamped "complete", the agent would take it for the result.
func typedInputRequired(res mcp.Result) mcp.Result {
	r, ok := res.(*rawResult)
	if !ok || r == nil {
		return res
	}
	if !bytes.Contains(r.raw, []byte("inputRequests")) && !bytes.Contains(r.raw, []byte(`\u`)) {
		return res // the quick look: no such member (a key with escapes has a \u)
	}
	if _, typed, err := rawjson.MemberValue(r.raw, "resultType"); err != nil || typed {
		return res
	}
	v, ok, err := rawjson.MemberValue(r.raw, "inputRequests")
	if err != nil || !ok || len(v) < 2 || v[0] != '{' || string(v) == "{}" {
		return res
	}
	b, err := rawjson.SetMember(r.raw, "resultType", json.RawMessage(`"input_required"`))
	if err != nil {
		return res
	}
	c := *r
	c.raw = b
	return &c
}

// start runs a call as a pending call and answers with its first event.
func (t *pendingTable) start(ctx context.Context, run func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	// Nothing of the table's until the call waits for input: most never
	// do (p.waiting and p.id come with the first request).
	p := &pendingCall{t: t, asks: make(chan *pendingAsk), done: make(chan struct{}), busy: true}
	// Detached from the agent's request, which ends with the first
	// InputRequiredResult; its values (the SDK's request, telemetry) stay.
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pendingTTL)
	p.cancel = cancel
	var ask Ask = p.ask
	callCtx = context.WithValue(callCtx, pendingAskKey{}, ask)
	go func() {
		p.res, p.err = run(callCtx)
		close(p.done)
	}()
	res, err, pending := p.next(ctx)
	if ctx.Err() != nil && !pending {
		cancel() // the agent gave up on the call (closed its stream)
		return nil, ctx.Err()
	}
	if pending {
		t.mu.Lock()
		t.byID[p.id] = p
		t.mu.Unlock()
		// Forgotten when the call's context ends (its result taken, or
		// pendingTTL); one that never waited for input is never kept.
		context.AfterFunc(callCtx, func() { t.forget(p.id) })
	}
	return res, err
}

// resume answers p's waiting requests with the retry's inputResponses and
// answers the retry with p's next event.
func (t *pendingTable) resume(ctx context.Context, p *pendingCall, state string, params json.RawMessage) (mcp.Result, error) {
	p.mu.Lock()
	if p.busy {
		p.mu.Unlock()
		return nil, invalidParams("requestState %s: a retry of this call is already being answered", state)
	}
	if state != p.state {
		p.mu.Unlock()
		return nil, invalidParams("requestState %s: replaced by a later round's; retry with the latest", state)
	}
	if p.over {
		// Set before the result goes out, while the table may still hold
		// p (it forgets p once the call's context ends, on a goroutine of
		// its own).
		p.mu.Unlock()
		return nil, invalidParams("requestState %s: the call is over or expired; retry the original call", state)
	}
	p.busy = true
	var responses map[string]json.RawMessage
	if v, ok, err := rawjson.MemberValue(params, "inputResponses"); err == nil && ok {
		_ = json.Unmarshal(v, &responses)
	}
	for key, a := range p.waiting {
		if r, ok := responses[key]; ok {
			a.reply <- pendingReply{res: r}
			delete(p.waiting, key)
		}
	}
	p.mu.Unlock()
	res, err, _ := p.next(ctx)
	return res, err
}

// next waits for p's next event and returns the agent's answer: an
// InputRequiredResult while the server waits for input (pending true), or
// the call's own result, after which p is forgotten. It returns early when
// ctx ends; the call stays pending for another retry.
func (p *pendingCall) next(ctx context.Context) (res mcp.Result, err error, pending bool) {
	defer func() {
		p.mu.Lock()
		p.busy = false
		p.mu.Unlock()
	}()
	p.mu.Lock()
	unanswered := len(p.waiting) > 0
	p.mu.Unlock()
	if !unanswered {
		select {
		case a := <-p.asks:
			p.add(a)
		case <-p.done:
			p.mu.Lock()
			p.over = true
			p.mu.Unlock()
			p.cancel()
			return p.res, p.err, false
		case <-ctx.Done():
			return nil, ctx.Err(), false
		}
	}
	// The server's other requests of the same moment join the batch.
	timer := time.NewTimer(pendingGather)
	defer timer.Stop()
gather:
	for {
		select {
		case a := <-p.asks:
			p.add(a)
			timer.Reset(pendingGather)
		case <-timer.C:
			break gather
		case <-ctx.Done():
			break gather
		}
	}
	return p.inputRequired(), nil, true
}

// add records a server's request as sent to the agent, under a key of
// its own.
func (p *pendingCall) add(a *pendingAsk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.waiting == nil {
		p.waiting = make(map[string]*pendingAsk)
	}
	kind := strings.SplitN(a.method, "/", 2)[0]
	p.waiting[kind+"-"+strconv.Itoa(p.n)] = a
}

// inputRequired encodes the InputRequiredResult of p's waiting requests.
func (p *pendingCall) inputRequired() mcp.Result {
	type inputRequest struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params,omitempty"`
	}
	p.mu.Lock()
	reqs := make(map[string]inputRequest, len(p.waiting))
	for k, a := range p.waiting {
		reqs[k] = inputRequest{Method: a.method, Params: a.params}
	}
	if p.id == "" {
		p.id = strconv.FormatUint(p.t.seq.Add(1), 36)
	}
	p.round++
	p.state = p.t.mint(p.id + "-" + strconv.Itoa(p.round))
	state := p.state
	p.mu.Unlock()
	b, err := json.Marshal(struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{"input_required", reqs, state})
	if err != nil {
		return &rawResult{raw: json.RawMessage(`{"resultType":"input_required","inputRequests":{}}`)}
	}
	return &rawResult{raw: b}
}

// ask is the Ask of a pending call: the server's request waits for the
// agent's retry to answer it.
func (p *pendingCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a := &pendingAsk{method: method, params: params, reply: make(chan pendingReply, 1)}
	select {
	case p.asks <- a:
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp-gateway: %s for a 2026-era agent: %w", method, ctx.Err())
	}
	select {
	case r := <-a.reply:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp-gateway: %s for a 2026-era agent, no retry came: %w", method, ctx.Err())
	}
}

// mint returns the requestState naming pending call id (with its round)
// on this replica.
func (t *pendingTable) mint(id string) string {
	body := statePrefix + t.replica + "." + id
	return body + "." + t.mac(body)
}

func (t *pendingTable) mac(body string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// resolve returns the pending call a gateway requestState names, or the
// -32602 error the retry gets.
func (t *pendingTable) resolve(state string) (*pendingCall, error) {
	parts := strings.Split(state, ".")
	if len(parts) != 4 {
		return nil, invalidParams("invalid requestState: not one this gateway issued")
	}
	if parts[1] != t.replica {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"input request state belongs to another gateway replica (gw1.%s); retry the original call", parts[1])}
	}
	body := strings.Join(parts[:3], ".")
	if !hmac.Equal([]byte(parts[3]), []byte(t.mac(body))) {
		return nil, invalidParams("invalid requestState: integrity check failed")
	}
	call, _, _ := strings.Cut(parts[2], "-")
	t.mu.Lock()
	p := t.byID[call]
	t.mu.Unlock()
	if p == nil {
		return nil, invalidParams("requestState %s: the call is over or expired; retry the original call", state)
	}
	return p, nil
}

// forget drops pending call id.
func (t *pendingTable) forget(id string) {
	t.mu.Lock()
	delete(t.byID, id)
	t.mu.Unlock()
}

// stringMember returns the string member name of a JSON object.
func stringMember(obj json.RawMessage, name string) (string, bool) {
	v, ok, err := rawjson.MemberValue(obj, name)
	if err != nil || !ok {
		return "", false
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}
