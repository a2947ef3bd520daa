package interceptor

import (
	"context"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Handshake is what the gateway and a plugin check before talking: a
// binary started by mistake (or a plugin of another program) refuses to run,
// and one built for another protocol version is told so.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "MCP_GATEWAY_INTERCEPTOR",
	MagicCookieValue: "b1f0c5a2e7d94e36a8c3f1d27e6b9a40",
}

// PluginName is the name the plugin is dispensed by.
const PluginName = "interceptor"

// Serve runs impl as a plugin: call it from the plugin's main. It returns
// only when the gateway ends the plugin. Run by hand, the binary says that
// it is a plugin and exits 1.
func Serve(impl Interceptor) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}},
		GRPCServer:      plugin.DefaultGRPCServer,
		// go-plugin's own chatter stays out of the gateway's log, which
		// gets the plugin's stderr; warnings and errors still go there.
		Logger: hclog.New(&hclog.LoggerOptions{Name: "interceptor", Level: hclog.Warn, Output: os.Stderr}),
	})
}

// GRPCPlugin is the go-plugin glue on both sides: the plugin serves Impl;
// the gateway's plugin host (mcp-gateway-plugin-host) dispenses a *Client.
//
// The service is declared by hand (serviceDesc) rather than generated from
// a .proto: it has one unary method whose request and response are
// google.protobuf.BytesValue holding the JSON Request and Decision, the
// documents exec interceptors use too. That keeps one contract for both
// kinds of interceptor and no protoc step in the build.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Interceptor // plugin side only
}

// GRPCServer registers the service on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(serviceDesc(), &grpcServer{impl: p.Impl})
	return nil
}

// GRPCClient returns the plugin host's handle on the plugin.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Client{conn: c}, nil
}

// Client sends hook requests to a plugin (the plugin host's side).
type Client struct{ conn *grpc.ClientConn }

// Handle sends one Request document and returns the plugin's Decision
// document.
func (c *Client) Handle(ctx context.Context, doc []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.conn.Invoke(ctx, handleMethod, wrapperspb.Bytes(doc), out); err != nil {
		return nil, err
	}
	return out.GetValue(), nil
}

const (
	serviceName  = "mcpgateway.interceptor.v1.Interceptor"
	handleMethod = "/" + serviceName + "/Handle"
)

// handler is the service's server interface (grpc checks HandlerType).
type handler interface {
	Handle(context.Context, *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
}

type grpcServer struct{ impl Interceptor }

func (s *grpcServer) Handle(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	out, err := Handle(ctx, s.impl, in.GetValue())
	if err != nil {
		return nil, err
	}
	return wrapperspb.Bytes(out), nil
}

func serviceDesc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*handler)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Handle",
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.BytesValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				h := func(ctx context.Context, req any) (any, error) {
					return srv.(handler).Handle(ctx, req.(*wrapperspb.BytesValue))
				}
				if ic == nil {
					return h(ctx, in)
				}
				return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: handleMethod}, h)
			},
		}},
		Metadata: "mcpgateway/interceptor/v1",
	}
}
