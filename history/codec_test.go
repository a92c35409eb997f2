package history

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/recallproxy/recall/wire"
)

// TestMessageCodecKeepsTheProtocol: a stored message reads back with the
// protocol it came in, and a record written before protocols were stored
// (version 2) reads as chat completions.
func TestMessageCodecKeepsTheProtocol(t *testing.T) {
	in := Message{Role: wire.RoleAssistant, Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":"hi"}`),
		Turn: 3, Episode: 2, Tokens: 7, Hash: 42, CreatedAt: time.Unix(0, 1234)}
	got, err := DecodeMessage(AppendMessage(nil, &in), 9)
	if err != nil {
		t.Fatal(err)
	}
	if got.Protocol != wire.Messages || got.Role != in.Role || got.Turn != 3 || got.Episode != 2 ||
		got.Tokens != 7 || got.Hash != 42 || got.Seq != 9 || string(got.Raw) != string(in.Raw) {
		t.Errorf("got %+v, want %+v with Seq 9", got, in)
	}

	// Version 2: no protocol byte.
	v2 := oldRecord(2, 0, roleCode(wire.RoleUser))
	old, err := DecodeMessage(v2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Protocol != wire.ChatCompletions || old.Role != wire.RoleUser || old.Tokens != 5 || string(old.Raw) != `{"role":"user","content":"x"}` {
		t.Errorf("got %+v, want a chat-completions user message of 5 tokens", old)
	}
}

// TestMessageCodecKeepsTheResponse: a message's Response reads back
// apart from its Raw; a message without one, and a record written before
// Responses were kept (version 3), read back with none.
func TestMessageCodecKeepsTheResponse(t *testing.T) {
	tests := []struct {
		name     string
		response string
	}{
		{"with a response", `{"id":"resp_1","output":[]}`},
		{"without", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Message{Role: wire.RoleAssistant, Protocol: wire.Responses, Raw: []byte(`{"role":"assistant","content":"hi"}`), Hash: 1}
			if tt.response != "" {
				in.Response = []byte(tt.response)
			}
			got, err := DecodeMessage(AppendMessage(nil, &in), 1)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Response) != tt.response || string(got.Raw) != string(in.Raw) || got.Hash != 1 {
				t.Errorf("got response %q raw %q, want %q and %q", got.Response, got.Raw, tt.response, in.Raw)
			}
		})
	}
	v3 := oldRecord(3, 0, roleCode(wire.RoleUser), byte(wire.Responses))
	old, err := DecodeMessage(v3, 1)
	if err != nil || old.Response != nil || string(old.Raw) != `{"role":"user","content":"x"}` {
		t.Errorf("version 3: got %+v, %v; want the raw and no response", old, err)
	}
	bad := AppendMessage(nil, &Message{Role: wire.RoleUser, Raw: []byte("{}")})
	bad = append(bad[:len(bad)-3], 9) // a response length past the record's end
	if _, err := DecodeMessage(bad, 1); err == nil {
		t.Error("a response length past the record: got no error")
	}
}

// oldRecord is a user message's record as versions before the Response
// was kept wrote it: head (version, flags, role and, from version 3, the
// protocol), turn 1, episode 1, 5 tokens, created at 1ns, hash 7 and the
// message {"role":"user","content":"x"}.
func oldRecord(head ...byte) []byte {
	b := binary.AppendUvarint(head, 1)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, 5)
	b = binary.AppendVarint(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 7)
	return append(b, `{"role":"user","content":"x"}`...)
}
