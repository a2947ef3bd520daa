// Command noopplugin is an interceptor plugin that continues at every hook:
// the benchmark measures what a go-plugin interceptor itself adds to a call.
package main

import "github.com/mcp-gateway/mcp-gateway/interceptor"

func main() { interceptor.Serve(interceptor.Base{}) }
