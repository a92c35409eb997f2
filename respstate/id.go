package respstate

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/recallproxy/recall/history"
)

// Ref is what a Recall response id names. The id names the stored state
// it answers for, so that
// previous_response_id, GET /v1/responses/{id} and DELETE find it with no
// index of their own:
//
//	resp_<conversation>_<incarnation>_<seq>_<input>
//
// conversation is the conversation id in unpadded base64url, incarnation
// its history.Meta.Incarnation in lowercase hex (a deleted and recreated
// conversation has another: its old ids name nothing), seq the sequence
// number of the answer's first stored message, and input the number of
// the request's new messages stored right before it (the turn's input
// items: seq-input to seq-1). Every character is one of OpenAI's id
// characters ([A-Za-z0-9_-]); clients treat it as opaque. The answer's
// messages are those from seq up to the next message that is not the
// model's (the next input).
//
// An id that does not parse back to itself (padding, leading zeros,
// upper-case hex) names nothing: one response has one id.
type Ref struct {
	// Conversation is the conversation's id.
	Conversation string
	// Incarnation is the conversation's history.Meta.Incarnation.
	Incarnation uint64
	// Seq is the sequence number of the answer's first stored message.
	Seq uint64
	// Input is the number of the request's new messages stored right
	// before the answer.
	Input int
}

// ID is the response id of r.
func (r Ref) ID() string {
	b := make([]byte, 0, 48+base64.RawURLEncoding.EncodedLen(len(r.Conversation)))
	b = append(b, "resp_"...)
	b = base64.RawURLEncoding.AppendEncode(b, []byte(r.Conversation))
	b = append(b, '_')
	b = strconv.AppendUint(b, r.Incarnation, 16)
	b = append(b, '_')
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(r.Input), 10)
	return string(b)
}

// ParseID reads a response id Recall minted; ok is false for any
// other string (another server's id, a random one, a damaged one).
func ParseID(id string) (r Ref, ok bool) {
	rest, found := strings.CutPrefix(id, "resp_")
	if !found || len(id) > 256 {
		return r, false
	}
	var fields [3]string
	conv, ok := splitRef(rest, fields[:])
	if !ok || !history.ValidID(conv) {
		return r, false
	}
	r.Conversation = conv
	var err error
	if r.Incarnation, err = strconv.ParseUint(fields[0], 16, 64); err != nil {
		return r, false
	}
	if r.Seq, err = strconv.ParseUint(fields[1], 10, 64); err != nil || r.Seq == 0 {
		return r, false
	}
	n, err := strconv.ParseUint(fields[2], 10, 31)
	if err != nil || uint64(r.Seq) <= n {
		return r, false
	}
	r.Input = int(n)
	return r, r.ID() == id
}

// splitRef cuts rest, a conversation id in base64url and then fields
// each after a '_', into the id, decoded, and len(fields) fields, filled
// from the right; ok is false if there are fewer fields or the id is not
// base64url.
func splitRef(rest string, fields []string) (conv string, ok bool) {
	for i := len(fields) - 1; i >= 0; i-- {
		j := strings.LastIndexByte(rest, '_')
		if j < 0 {
			return "", false
		}
		rest, fields[i] = rest[:j], rest[j+1:]
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// NewConversationID is the id of a conversation Recall creates for a
// Responses client that named none (or for a fork), or for POST
// /v1/conversations: conv_ and 24 random hex digits, as OpenAI's look.
func NewConversationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "conv_" + hex.EncodeToString(b[:])
}

// NewIncarnation draws the incarnation of a conversation an exchange
// creates (never 0, the value of records older than incarnations).
func NewIncarnation() uint64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}
