package respstate

import (
	"regexp"
	"strings"
	"testing"
)

// openAIIDChars are the characters of OpenAI's ids: a Recall response id
// uses no other.
var openAIIDChars = regexp.MustCompile(`^resp_[A-Za-z0-9_-]+$`)

func TestResponseIDRoundTrip(t *testing.T) {
	tests := []Ref{
		{Conversation: "c1", Incarnation: 1, Seq: 1},
		{Conversation: "conv_0123456789abcdef01234567", Incarnation: ^uint64(0), Seq: 42, Input: 3},
		{Conversation: "a_b-c.d:e@f", Incarnation: 0x9e3779b97f4a7c15, Seq: 7, Input: 6},
		{Conversation: strings.Repeat("x", 128), Seq: 1 << 40, Input: 1},
		{Conversation: "__", Incarnation: 0, Seq: 2, Input: 1}, // base64url of it holds '_' and '-'
	}
	for _, r := range tests {
		id := r.ID()
		if !openAIIDChars.MatchString(id) {
			t.Errorf("%+v: id %q has characters OpenAI's ids do not", r, id)
		}
		got, ok := ParseID(id)
		if !ok || got != r {
			t.Errorf("parse %q: got %+v, %v; want %+v", id, got, ok, r)
		}
	}
}

func TestResponseIDRefusesOthers(t *testing.T) {
	good := Ref{Conversation: "c1", Incarnation: 0xab, Seq: 5, Input: 1}.ID()
	for _, id := range []string{
		"",
		"resp_",
		"resp_0123456789abcdef01234567", // an OpenAI-shaped random id
		"resp_YzE_ab_5",                 // a field missing
		"resp_YzE_ab_5_1_2",             // a field too many (the conversation would not be valid base64)
		"resp_YzE=_ab_5_1",              // padded
		"resp_YzE_AB_5_1",               // upper-case hex
		"resp_YzE_ab_05_1",              // a leading zero
		"resp_YzE_ab_0_0",               // seq 0
		"resp_YzE_ab_5_5",               // input reaching before seq 1
		"resp_YzE_ab_-5_1",
		"resp_Lw_ab_5_1", // "/": not a conversation id
		"msg_YzE_ab_5_1",
		strings.Replace(good, "resp_", "resp_x", 1),
		good + "0",
	} {
		if r, ok := ParseID(id); ok {
			t.Errorf("parse %q: got %+v, want no response", id, r)
		}
	}
	if _, ok := ParseID(good); !ok {
		t.Errorf("parse %q: refused a minted id", good)
	}
}

func FuzzParseResponseID(f *testing.F) {
	f.Add(Ref{Conversation: "c1", Incarnation: 0xab, Seq: 5, Input: 1}.ID())
	f.Add("resp_0123456789abcdef")
	f.Add("resp_X19f_0_1_0")
	f.Fuzz(func(t *testing.T, id string) {
		r, ok := ParseID(id)
		if ok && r.ID() != id {
			t.Errorf("parse %q: got %+v, which is %q", id, r, r.ID())
		}
	})
}
