package respstate

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// CompactionRef is what a compaction Recall made (POST
// /v1/responses/compact, served by proxy) names in its encrypted_content:
// the summary it stands for. The content reads
//
//	recall_cmp_<conversation>_<incarnation>_<through>
//
// conversation is the conversation id in unpadded base64url, incarnation
// its history.Meta.Incarnation in lowercase hex (a deleted and recreated
// conversation has another), through the summary's covered-through. It
// holds no secret and no text: it is read only in the namespace of the
// key that sends it, where another tenant's names nothing. One that does
// not parse back to itself names nothing.
type CompactionRef struct {
	// Conversation is the conversation's id.
	Conversation string
	// Incarnation is the conversation's history.Meta.Incarnation.
	Incarnation uint64
	// Through is the summary's covered-through (history.Summary.Through).
	Through uint64
}

// CompactionPrefix starts every compaction content Recall makes: one that
// starts so and does not parse is a forgery or damaged, never another
// server's.
const CompactionPrefix = "recall_cmp_"

// Content is r's encrypted_content.
func (r CompactionRef) Content() string {
	b := make([]byte, 0, 48+base64.RawURLEncoding.EncodedLen(len(r.Conversation)))
	b = append(b, CompactionPrefix...)
	b = base64.RawURLEncoding.AppendEncode(b, []byte(r.Conversation))
	b = append(b, '_')
	b = strconv.AppendUint(b, r.Incarnation, 16)
	b = append(b, '_')
	b = strconv.AppendUint(b, r.Through, 10)
	return string(b)
}

// ParseCompaction reads a compaction content Recall made; ok is false
// for any other string.
func ParseCompaction(s string) (r CompactionRef, ok bool) {
	rest, found := strings.CutPrefix(s, CompactionPrefix)
	if !found || len(s) > 512 {
		return r, false
	}
	var fields [2]string
	conv, ok := splitRef(rest, fields[:])
	if !ok || conv == "" {
		return r, false
	}
	r.Conversation = conv
	var err error
	if r.Incarnation, err = strconv.ParseUint(fields[0], 16, 64); err != nil {
		return r, false
	}
	if r.Through, err = strconv.ParseUint(fields[1], 10, 64); err != nil {
		return r, false
	}
	return r, r.Content() == s
}
