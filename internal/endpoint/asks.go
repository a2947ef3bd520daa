package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// agentAnswer is an agent's response to a request of the gateway's.
type agentAnswer struct {
	result json.RawMessage
	err    error
}

// asker returns the aggregate.Ask of a fast-path call of session sid: the
// request goes on the call's own stream (as the SDK sends a request made
// during a call on that call's stream), with an id of the gateway's, and
// the agent's answer, a POST of a JSON-RPC response, is caught by answer
// before the SDK would see it. A request the server gives up on (or whose
// call ends) is cancelled at the agent too.
func (f *fastPath) asker(sid string, stream *eventStream) aggregate.Ask {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		id := `"mcp-gateway-` + strconv.FormatUint(f.askSeq.Add(1), 10) + `"`
		key := fastCallKey{sid, id}
		ch := make(chan agentAnswer, 1)
		f.mu.Lock()
		f.asks[key] = ch
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.asks, key)
			f.mu.Unlock()
		}()
		if err := stream.request(id, method, params); err != nil {
			return nil, err
		}
		select {
		case a := <-ch:
			return a.result, a.err
		case <-ctx.Done():
			_ = stream.send("notifications/cancelled", json.RawMessage(`{"requestId":`+id+`}`))
			return nil, ctx.Err()
		}
	}
}

// answer takes an agent's response to a request asker sent, and answers
// the POST 202 as the SDK does; a response to anything else is the SDK's.
func (f *fastPath) answer(w http.ResponseWriter, r *http.Request, sid string, msg *rpcMessage) bool {
	f.mu.Lock()
	_, ok := f.asks[fastCallKey{sid, string(msg.ID)}]
	f.mu.Unlock()
	if !ok {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false
	}
	f.deliver(sid, msg.ID, body)
	w.WriteHeader(http.StatusAccepted)
	return true
}

// deliver gives the agent's response raw, with id, to the asker waiting
// for it, if one still is.
func (f *fastPath) deliver(sid string, id json.RawMessage, raw []byte) {
	f.mu.Lock()
	ch, ok := f.asks[fastCallKey{sid, string(id)}]
	f.mu.Unlock()
	if !ok {
		return
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	a := agentAnswer{err: errors.New("the agent's answer is not a JSON-RPC response")}
	if json.Unmarshal(raw, &resp) == nil {
		switch {
		case resp.Error != nil:
			a = agentAnswer{err: resp.Error}
		case len(resp.Result) > 0:
			a = agentAnswer{result: resp.Result}
		}
	}
	select {
	case ch <- a:
	default: // answered twice: the first answer stands
	}
}
