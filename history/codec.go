package history

import (
	"encoding/binary"
	"time"

	// Records written before version 3 carry no protocol and are chat
	// completions: reading them needs its codec, whatever else is linked.
	_ "github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Stored messages are encoded as a small binary header followed by the raw
// JSON, so loading a message copies its bytes once and parses nothing.
//
//	version 4: version(1) flags(1) role(1) protocol(1) turn(uvarint) episode(uvarint) tokens(uvarint) created(varint) hash(8) response_len(uvarint) response raw
//	version 3: version(1) flags(1) role(1) protocol(1) turn(uvarint) episode(uvarint) tokens(uvarint) created(varint) hash(8) raw
//	version 2: version(1) flags(1) role(1) turn(uvarint) episode(uvarint) tokens(uvarint) created(varint) hash(8) raw
//	version 1: version(1) flags(1) role(1) turn(uvarint) tokens(uvarint) created(varint) hash(8) raw (episode 1)
const codecVersion = 4

var roleCodes = [...]string{"", wire.RoleSystem, wire.RoleDeveloper, wire.RoleUser, wire.RoleAssistant, wire.RoleTool}

func roleCode(role string) byte {
	for i, r := range roleCodes {
		if r == role {
			return byte(i)
		}
	}
	return 0
}

// AppendMessage appends m's stored encoding (without its Seq, which lives
// in the key) to dst.
func AppendMessage(dst []byte, m *Message) []byte {
	dst = append(dst, codecVersion, byte(m.Flags), roleCode(m.Role), byte(m.Protocol))
	dst = binary.AppendUvarint(dst, uint64(m.Turn))
	dst = binary.AppendUvarint(dst, uint64(m.Episode))
	dst = binary.AppendUvarint(dst, uint64(m.Tokens))
	dst = binary.AppendVarint(dst, m.CreatedAt.UnixNano())
	dst = binary.LittleEndian.AppendUint64(dst, m.Hash)
	dst = binary.AppendUvarint(dst, uint64(len(m.Response)))
	dst = append(dst, m.Response...)
	return append(dst, m.Raw...)
}

// DecodeMessage decodes a stored message. m.Raw and m.Response alias b: copy b first if
// it does not outlive the call that produced it (as with Badger values).
func DecodeMessage(b []byte, seq uint64) (Message, error) {
	if len(b) < 3 || b[0] < 1 || b[0] > codecVersion {
		return Message{}, errorf("decode message %d: bad header", seq)
	}
	version := b[0]
	m := Message{Seq: seq, Flags: Flags(b[1])}
	if int(b[2]) < len(roleCodes) {
		m.Role = roleCodes[b[2]]
	}
	b = b[3:]
	if version >= 3 { // before it, every message was chat completions
		if len(b) == 0 {
			return Message{}, errorf("decode message %d: bad protocol", seq)
		}
		m.Protocol = wire.Protocol(b[0])
		b = b[1:]
	}
	turn, n := binary.Uvarint(b)
	if n <= 0 {
		return Message{}, errorf("decode message %d: bad turn", seq)
	}
	b = b[n:]
	episode := uint64(1)
	if version >= 2 {
		if episode, n = binary.Uvarint(b); n <= 0 {
			return Message{}, errorf("decode message %d: bad episode", seq)
		}
		b = b[n:]
	}
	tokens, n := binary.Uvarint(b)
	if n <= 0 {
		return Message{}, errorf("decode message %d: bad tokens", seq)
	}
	b = b[n:]
	created, n := binary.Varint(b)
	if n <= 0 || len(b[n:]) < 8 {
		return Message{}, errorf("decode message %d: bad time", seq)
	}
	b = b[n:]
	m.Turn = uint32(turn)
	m.Episode = uint32(episode)
	m.Tokens = int(tokens)
	m.CreatedAt = time.Unix(0, created)
	m.Hash = binary.LittleEndian.Uint64(b)
	b = b[8:]
	if version >= 4 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b[k:])) {
			return Message{}, errorf("decode message %d: bad response", seq)
		}
		if n > 0 {
			m.Response = b[k : k+int(n) : k+int(n)]
		}
		b = b[k+int(n):]
	}
	m.Raw = b
	return m, nil
}
