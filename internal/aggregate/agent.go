package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a server asks of an agent (sampling, elicitation, roots) and the
// agent's answer are relayed as raw JSON. The SDK's ServerSession methods
// for them (Elicit, CreateMessage) decode and encode both ways: an
// elicitation form's properties came out sorted, "mode":"form" was added,
// the answer was checked against the schema and completed with its
// defaults, and members the types do not know were dropped. The session's
// JSON-RPC connection does take raw params and return the raw result, but
// go-sdk v1.8.0 keeps it unexported; agentConn reaches it by reflection
// (TestElicitationRelayedAsSent fails if an SDK upgrade moves it). A
// request sent with a handler's context travels on that request's stream,
// as the SDK's own do.

// agentConn is an agent session's JSON-RPC connection.
type agentConn struct {
	call reflect.Value // func(ctx, method string, params any) *AsyncCall
	// notify is func(ctx, method string, params any) error.
	notify reflect.Value
}

// agentConnOf returns ss's connection, or nil if the SDK's layout is not
// the one this was written for.
func agentConnOf(ss *mcp.ServerSession) *agentConn {
	if ss == nil {
		return nil
	}
	f := reflect.ValueOf(ss).Elem().FieldByName("conn")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return nil
	}
	conn := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	a := &agentConn{call: conn.MethodByName("Call"), notify: conn.MethodByName("Notify")}
	ctxType := reflect.TypeFor[context.Context]()
	anyType := reflect.TypeFor[any]()
	ok := func(m reflect.Value, outs int) bool {
		if !m.IsValid() {
			return false
		}
		t := m.Type()
		return t.NumIn() == 3 && t.In(0) == ctxType && t.In(1).Kind() == reflect.String && t.In(2) == anyType && t.NumOut() == outs
	}
	if !ok(a.call, 1) || !ok(a.notify, 1) {
		return nil
	}
	if _, found := a.call.Type().Out(0).MethodByName("Await"); !found {
		return nil
	}
	return a
}

// request sends a request with raw params to the agent and returns its raw
// result; an error answer comes back as a *jsonrpc.Error.
func (a *agentConn) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ac := a.call.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(method), paramsValue(params)})[0]
	var res json.RawMessage
	out := ac.MethodByName("Await").Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(&res)})
	if err, _ := out[0].Interface().(error); err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("the agent answered without a result")
	}
	return res, nil
}

// notification sends a notification with raw params to the agent.
func (a *agentConn) notification(ctx context.Context, method string, params json.RawMessage) error {
	out := a.notify.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(method), paramsValue(params)})
	err, _ := out[0].Interface().(error)
	return err
}

// paramsValue is params as the connection's params argument: absent params
// stay absent (a nil any), rather than becoming "params":null, which
// clients refuse (the TypeScript SDK's drops such a roots/list unanswered).
func paramsValue(params json.RawMessage) reflect.Value {
	if len(params) == 0 {
		return reflect.Zero(reflect.TypeFor[any]())
	}
	return reflect.ValueOf(params)
}
