package respstate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// Stored messages are shown to the Responses and Conversations APIs as
// Responses items, with ids derived from their sequence number in the
// conversation:
//
//	<kind>_<seq>        the item a stored message is
//	<kind>_<seq>_<k>    its k-th item (k >= 1), when a message stored in
//	                    another protocol (a chat or Messages turn of the
//	                    same conversation) is more than one item
//
// kind is msg (a message), fc (function_call), fco
// (function_call_output), rs (reasoning) or item (any other type). The
// ids are stable for as long as the message is stored, and unique within
// its conversation; they are not the ids a Response's output items carry
// (those derive from the response id: msg_<response>_<index>).

// itemKind is the id prefix of an item of type typ.
func itemKind(typ string) string {
	switch typ {
	case "message":
		return "msg"
	case "function_call":
		return "fc"
	case "function_call_output":
		return "fco"
	case "reasoning":
		return "rs"
	}
	return "item"
}

// itemsOf renders a stored message as Responses items, with their ids.
func itemsOf(m *history.Message) [][]byte {
	var items [][]byte
	if m.Protocol == wire.Responses {
		items = [][]byte{m.Raw}
	} else {
		cm, err := m.Codec().Decode(m.Raw)
		if err == nil {
			items, err = responses.Codec{}.Encode(nil, []wire.Message{cm})
		}
		if err != nil || len(items) == 0 {
			return nil // nothing a Responses client can read
		}
	}
	out := make([][]byte, len(items))
	seq := strconv.FormatUint(m.Seq, 10)
	for k, raw := range items {
		id := itemKind(itemTypeOf(raw)) + "_" + seq
		if k > 0 {
			id += "_" + strconv.Itoa(k)
		}
		out[k] = normalItem(raw, id)
	}
	return out
}

// itemSeq returns the sequence number an item id names (see itemsOf).
func itemSeq(id string) (uint64, bool) {
	_, rest, ok := strings.Cut(id, "_")
	if !ok {
		return 0, false
	}
	seq, _, _ := strings.Cut(rest, "_")
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil && n > 0
}

// itemTypeOf is an item's type ("message" for the easy form, a role and
// no type).
func itemTypeOf(raw []byte) string {
	r := gjson.ParseBytes(raw)
	if t := r.Get("type"); t.Type == gjson.String {
		return t.Str
	}
	if r.Get("role").Exists() {
		return "message"
	}
	return ""
}

// normalItem is a stored item as OpenAI lists it: with id, a type, a
// status, and a message's string content as one text part.
func normalItem(raw []byte, id string) []byte {
	b := append([]byte(nil), raw...)
	b, _ = sjson.SetBytes(b, "id", id)
	r := gjson.ParseBytes(b)
	typ := itemTypeOf(b)
	if !r.Get("type").Exists() {
		b, _ = sjson.SetBytes(b, "type", typ)
	}
	if typ == "message" {
		if c := r.Get("content"); c.Type == gjson.String {
			part := `{"type":"input_text","text":` + string(gjson.AppendJSONString(nil, c.Str)) + `}`
			if r.Get("role").Str == wire.RoleAssistant {
				part = `{"type":"output_text","annotations":[],"text":` + string(gjson.AppendJSONString(nil, c.Str)) + `}`
			}
			b, _ = sjson.SetRawBytes(b, "content", []byte("["+part+"]"))
		}
	}
	if typ != "reasoning" && !r.Get("status").Exists() {
		b, _ = sjson.SetBytes(b, "status", "completed")
	}
	return b
}

// itemList is OpenAI's list shape of items.
type itemList struct {
	Object  string    `json:"object"`
	Data    []rawJSON `json:"data"`
	FirstID *string   `json:"first_id"`
	LastID  *string   `json:"last_id"`
	HasMore bool      `json:"has_more"`
}

// rawJSON is JSON text marshalled as it is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// page pages items (oldest first) as a list: order "desc" (newest
// first, the default) or "asc", at most limit, after the item whose id
// is after ("" for the first page).
func page(items [][]byte, order string, limit int, after string) itemList {
	if order != "asc" {
		items = reversed(items)
	}
	if after != "" {
		for i, it := range items {
			if gjson.GetBytes(it, "id").Str == after {
				items = items[i+1:]
				break
			}
		}
	}
	l := itemList{Object: "list", Data: []rawJSON{}}
	if len(items) > limit {
		items, l.HasMore = items[:limit], true
	}
	for _, it := range items {
		l.Data = append(l.Data, it)
	}
	if n := len(items); n > 0 {
		first, last := gjson.GetBytes(items[0], "id").Str, gjson.GetBytes(items[n-1], "id").Str
		l.FirstID, l.LastID = &first, &last
	}
	return l
}

func reversed(items [][]byte) [][]byte {
	out := make([][]byte, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out
}
