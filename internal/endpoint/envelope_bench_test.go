package endpoint

import "testing"

var envBody = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world, a typical short argument"},"_meta":{"x":1}}}`)

func BenchmarkCheckEnvelope(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkEnvelope(envBody); err != nil {
			b.Fatal(err)
		}
	}
}

var setLevelBody = []byte(`{"jsonrpc":"2.0","id":42,"method":"logging/setLevel","params":{"level":"info"}}`)

func BenchmarkCheckEnvelopeSetLevel(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkEnvelope(setLevelBody); err != nil {
			b.Fatal(err)
		}
	}
}
