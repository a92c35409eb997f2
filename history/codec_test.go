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
	v2 := []byte{2, 0, roleCode(wire.RoleUser)}
	v2 = binary.AppendUvarint(v2, 1)
	v2 = binary.AppendUvarint(v2, 1)
	v2 = binary.AppendUvarint(v2, 5)
	v2 = binary.AppendVarint(v2, 1)
	v2 = binary.LittleEndian.AppendUint64(v2, 7)
	v2 = append(v2, `{"role":"user","content":"x"}`...)
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
	v3 := []byte{3, 0, roleCode(wire.RoleUser), byte(wire.Responses)}
	v3 = binary.AppendUvarint(v3, 1)
	v3 = binary.AppendUvarint(v3, 1)
	v3 = binary.AppendUvarint(v3, 5)
	v3 = binary.AppendVarint(v3, 1)
	v3 = binary.LittleEndian.AppendUint64(v3, 7)
	v3 = append(v3, `{"role":"user","content":"x"}`...)
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
