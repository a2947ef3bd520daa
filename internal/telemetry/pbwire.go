package telemetry

import (
	"encoding/binary"
	"math"
)

// pb appends protobuf wire format by hand: the OTLP messages this package
// sends are a few nested messages of strings, bytes, varints and fixed64s,
// and encoding them here keeps google.golang.org/protobuf (and the gRPC
// stack the generated OTLP packages import) out of the gateway's binary.
// Field numbers are opentelemetry-proto's; the tests decode what this
// writes with the generated types.
type pb []byte

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func (b pb) tag(field, wire int) pb { return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire)) }

func (b pb) varint(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(b.tag(field, wireVarint), v)
}

func (b pb) fixed64(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(b.tag(field, wireFixed64), v)
}

func (b pb) fixed32(field int, v uint32) pb {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(b.tag(field, wireFixed32), v)
}

func (b pb) double(field int, v float64) pb {
	return binary.LittleEndian.AppendUint64(b.tag(field, wireFixed64), math.Float64bits(v))
}

func (b pb) bytes(field int, v []byte) pb {
	if len(v) == 0 {
		return b
	}
	return append(binary.AppendUvarint(b.tag(field, wireBytes), uint64(len(v))), v...)
}

func (b pb) str(field int, v string) pb {
	if v == "" {
		return b
	}
	return append(binary.AppendUvarint(b.tag(field, wireBytes), uint64(len(v))), v...)
}

// msg appends field as an embedded message that fill writes; an empty one
// is still written when always is set (a oneof's choice, an empty value).
// fill writes in place, after a one-byte length that is widened once the
// length is known: no buffer per message.
func (b pb) msg(field int, always bool, fill func(pb) pb) pb {
	mark := len(b)
	b = b.tag(field, wireBytes)
	at := len(b)
	b = fill(append(b, 0))
	n := len(b) - at - 1
	switch {
	case n == 0 && !always:
		return b[:mark]
	case n < 0x80:
		b[at] = byte(n)
		return b
	}
	var size [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(size[:], uint64(n))
	b = append(b, size[:l-1]...)
	copy(b[at+l:], b[at+1:at+1+n])
	copy(b[at:], size[:l])
	return b
}

// varintRaw appends v as a varint without a tag (after tag, for a value
// that must be written even when zero).
func (b pb) varintRaw(v uint64) pb { return binary.AppendUvarint(b, v) }
