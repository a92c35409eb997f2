package responses

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
)

// A stored response's Response object (history.Message.Response) is
// kept packed: about 900 bytes a turn, most of them the members' names
// and the defaults every Response repeats, written to the store, its
// log and the cache on every answer. Packing swaps each of the phrases
// below, where it finds them, for one control byte: JSON holds no raw
// control byte, so the swap is lossless and its inverse unambiguous. An
// object that holds one anyway (an upstream's raw whitespace) is kept as
// it is, and so is every object stored before packing: both start with
// '{', a packed one with packMark.
//
// The phrases' codes are their indexes in this list, stored on disk:
// append new phrases, never reorder or change one. Pack looks for them
// in this order, which is the order appendResponseAt writes them in.
var packPhrases = [...]string{
	`{"id":"resp_`,
	`","object":"response","created_at":`,
	`,"status":"completed","background":false,"completed_at":`,
	`,"error":null,"incomplete_details":null`,
	`,"instructions":`,
	`,"max_output_tokens":null,"max_tool_calls":null`,
	`,"model":`,
	`,"output":[],"parallel_tool_calls":true,"presence_penalty":0,"frequency_penalty":0`,
	`,"previous_response_id":null`,
	`,"previous_response_id":"resp_`,
	`,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null}`,
	`,"safety_identifier":null,"service_tier":"default","store":true`,
	`,"temperature":1.0,"text":{"format":{"type":"text"}}`,
	`,"tool_choice":"auto","tools":[]`,
	`,"tool_choice":"auto","tools":[{"type":"function","name":`,
	`,"top_logprobs":0,"top_p":1.0,"truncation":"disabled"`,
	`,"usage":{"input_tokens":`,
	`,"input_tokens_details":{"cached_tokens":`,
	`},"output_tokens":`,
	`,"output_tokens_details":{"reasoning_tokens":`,
	`},"total_tokens":`,
	`},"user":null,"metadata":{}`,
	`,"conversation":{"id":"`,
	`,"conversation":null}`,
}

// packMark starts a packed object; the codes follow it, from 1, all
// below ' ' (the constant overflows if the list outgrows them).
const packMark = 0

const _ = uint8(' ' - 1 - len(packPhrases))

// PackStored appends obj, a stored response's Response object, packed
// (see packPhrases), or obj itself if it holds a raw control byte.
// Packed in a buffer on the stack first, so that dst grows once, to
// what it keeps: a stored turn's copy is held as long as its cache entry.
func PackStored(dst, obj []byte) []byte {
	if hasControl(obj) {
		return append(dst, obj...)
	}
	var buf [1024]byte
	return append(dst, pack(buf[:0], obj)...)
}

// hasControl reports whether b holds a byte below ' ', read eight bytes
// a word: a word has one exactly when subtracting ' ' from each of its
// bytes borrows into a high bit its own byte did not have set (a byte
// at 0x80 or above never counts). A byte at a time was a third of
// PackStored's time.
func hasControl(b []byte) bool {
	const spaces, highs = 0x2020202020202020, 0x8080808080808080
	for ; len(b) >= 8; b = b[8:] {
		if x := binary.LittleEndian.Uint64(b); (x-spaces)&^x&highs != 0 {
			return true
		}
	}
	for _, c := range b {
		if c < ' ' {
			return true
		}
	}
	return false
}

func pack(dst, obj []byte) []byte {
	dst = append(dst, packMark)
	for i, p := range packPhrases {
		at := strings.Index(bytesString(obj), p)
		if at < 0 {
			continue
		}
		dst = append(dst, obj[:at]...)
		dst = append(dst, byte(i+1))
		obj = obj[at+len(p):]
	}
	return append(dst, obj...)
}

// errPacked is a packed object's code with no phrase: not one PackStored
// wrote.
var errPacked = errors.New("stored response: bad packing")

// UnpackStored returns the Response object PackStored packed into b, in
// a new slice; an object stored unpacked is copied as it is. nil for an
// empty b.
func UnpackStored(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != packMark {
		return bytes.Clone(b), nil
	}
	b = b[1:]
	out := make([]byte, 0, len(b)+responseSize)
	for len(b) > 0 {
		at := 0
		for at < len(b) && b[at] >= ' ' {
			at++
		}
		out = append(out, b[:at]...)
		if at == len(b) {
			break
		}
		code := int(b[at])
		if code < 1 || code > len(packPhrases) {
			return nil, errPacked
		}
		out = append(out, packPhrases[code-1]...)
		b = b[at+1:]
	}
	return out, nil
}
