// Package canonjson writes JSON values in a canonical binary form for
// hashing: the same for values that differ only in key order, whitespace,
// string escapes or number spelling, and self-delimiting, so that distinct
// values cannot collide by concatenation.
//
// It holds the machinery the wire protocols' message hashes share: value
// tags, length-prefixed strings, numbers by their float64 value, object
// members sorted with the last of a repeated key kept, the pruning walk
// that leaves empty values out, and a pooled buffer to hash into. Which
// members a protocol ignores, and which of its forms it treats as equal,
// stay in the protocol's package: each canonical form is stored with the
// messages hashed by it, so each package pins its own.
//
// Strings and keys decode as encoding/json decodes them ([AppendUnescaped]),
// reading the JSON literal in place rather than through gjson's unescaping.
package canonjson

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
)

// Value tags of the canonical form: every value is a tag and a
// self-delimiting body.
const (
	String = 's' // followed by a 4-byte little-endian length and the bytes
	Number = 'n' // followed by the 8-byte little-endian float64 bits
	True   = 't'
	False  = 'f'
	Empty  = 'z' // an empty value where position matters (an array element)
	Array  = 'a' // followed by the elements and End
	Object = 'o' // followed by key, value pairs and End
	End    = '.'
)

var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Sum returns the xxhash of what appendTo appends for v, written into a
// pooled buffer: hashing allocates nothing once the pool is warm.
// appendTo must not keep the buffer.
func Sum(v gjson.Result, appendTo func(buf []byte, v gjson.Result) []byte) uint64 {
	bp := bufs.Get().(*[]byte)
	buf := appendTo((*bp)[:0], v)
	h := xxhash.Sum64(buf)
	if cap(buf) <= 64<<10 { // a rare huge message does not pin its buffer
		*bp = buf
		bufs.Put(bp)
	}
	return h
}

// Member is one member of an object being canonicalised.
type Member struct {
	Key string
	Val gjson.Result
}

// Members appends obj's members to dst sorted by key, keeping only the
// last of a repeated key, as encoding/json does; pass a slice of a stack
// array as dst to keep small objects off the heap. Keys decode as
// encoding/json decodes them.
func Members(dst []Member, obj gjson.Result) []Member {
	start := len(dst)
	obj.ForEach(func(k, v gjson.Result) bool {
		dst = append(dst, Member{key(k), v})
		return true
	})
	ms := dst[start:]
	if len(ms) <= 16 {
		// Insertion sort, stable and cheapest for the small objects most
		// messages are made of.
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && ms[j].Key < ms[j-1].Key; j-- {
				ms[j], ms[j-1] = ms[j-1], ms[j]
			}
		}
	} else {
		slices.SortStableFunc(ms, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	}
	n := 0
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].Key == m.Key {
			continue // a later duplicate wins
		}
		ms[n] = m
		n++
	}
	return dst[:start+n]
}

// key returns the value of the key k as encoding/json decodes it. gjson
// has parsed k.Str: when it is as long as the literal's contents the key
// has no escapes and is used as it stands, without copying.
func key(k gjson.Result) string {
	if len(k.Str) == len(k.Raw)-2 {
		return k.Str
	}
	return string(AppendUnescaped(nil, k.Raw))
}

// AppendString appends s tagged [String] and length-prefixed.
func AppendString(buf []byte, s string) []byte {
	return AppendSized(append(buf, String), s)
}

// AppendSized appends s length-prefixed, without a tag: for a place whose
// position already says that a string comes.
func AppendSized(buf []byte, s string) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

// AppendLiteral appends the value of the JSON string literal raw, tagged
// [String] and length-prefixed, as [AppendString] would append it decoded.
func AppendLiteral(buf []byte, raw string) []byte {
	buf = append(buf, String)
	lenAt := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	start := len(buf)
	buf = AppendUnescaped(buf, raw)
	binary.LittleEndian.PutUint32(buf[lenAt:], uint32(len(buf)-start))
	return buf
}

// AppendStringValue appends the string value v as [AppendLiteral] does.
// gjson has parsed v.Str: when it is as long as the literal's contents the
// literal has no escapes (every escape is longer than what it stands
// for), and only its UTF-8 needs checking.
func AppendStringValue(buf []byte, v gjson.Result) []byte {
	if len(v.Str) == len(v.Raw)-2 && utf8.ValidString(v.Str) {
		return AppendString(buf, v.Str)
	}
	return AppendLiteral(buf, v.Raw)
}

// AppendNumber appends f tagged [Number]: numbers compare by their float64
// value, whatever their spelling.
func AppendNumber(buf []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(append(buf, Number), math.Float64bits(f))
}

// AppendPruned appends the canonical form of any JSON value, or nothing
// when it is null, "", or an array or object with nothing in it once its
// own empty members are dropped. Objects, at any depth, are appended by
// object, which decides which members count and appends nothing for an
// object with nothing left in it.
func AppendPruned(buf []byte, v gjson.Result, object func(buf []byte, v gjson.Result) []byte) []byte {
	switch v.Type {
	case gjson.Null:
		return buf
	case gjson.False:
		return append(buf, False)
	case gjson.True:
		return append(buf, True)
	case gjson.Number:
		return AppendNumber(buf, v.Num)
	case gjson.String:
		if v.Raw == `""` {
			return buf
		}
		return AppendStringValue(buf, v)
	}
	switch {
	case v.IsArray():
		mark := len(buf)
		buf = append(buf, Array)
		n := 0
		v.ForEach(func(_, e gjson.Result) bool {
			n++
			buf = AppendElem(buf, e, object)
			return true
		})
		if n == 0 {
			return buf[:mark]
		}
		return append(buf, End)
	case v.IsObject():
		return object(buf, v)
	}
	return buf
}

// AppendElem appends an array element as [AppendPruned] does, but writes
// [Empty] for an empty one, because its position matters.
func AppendElem(buf []byte, v gjson.Result, object func(buf []byte, v gjson.Result) []byte) []byte {
	mark := len(buf)
	if out := AppendPruned(buf, v, object); len(out) > mark {
		return out
	}
	return append(buf, Empty)
}
