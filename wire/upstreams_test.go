package wire_test

import (
	"slices"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// The kinds Recall's protocol packages register send each ingress as
// they always have: openai (and "") chat completions and Responses as
// they came, the rest as chat completions; chat, anthropic and gemini
// everything in their own protocol. A kind nobody registered is unknown.
func TestUpstreamForRegisteredKinds(t *testing.T) {
	ingresses := []wire.Protocol{wire.ChatCompletions, wire.Responses, wire.Messages, wire.Gemini}
	tests := []struct {
		kind string
		want []wire.Protocol // by ingress, in the order of ingresses
	}{
		{"", []wire.Protocol{wire.ChatCompletions, wire.Responses, wire.ChatCompletions, wire.ChatCompletions}},
		{wire.UpstreamOpenAI, []wire.Protocol{wire.ChatCompletions, wire.Responses, wire.ChatCompletions, wire.ChatCompletions}},
		{wire.UpstreamChat, []wire.Protocol{wire.ChatCompletions, wire.ChatCompletions, wire.ChatCompletions, wire.ChatCompletions}},
		{wire.UpstreamAnthropic, []wire.Protocol{wire.Messages, wire.Messages, wire.Messages, wire.Messages}},
		{wire.UpstreamGemini, []wire.Protocol{wire.Gemini, wire.Gemini, wire.Gemini, wire.Gemini}},
	}
	for _, tt := range tests {
		t.Run("kind "+tt.kind, func(t *testing.T) {
			for i, in := range ingresses {
				if got, ok := wire.UpstreamFor(tt.kind, in); !ok || got != tt.want[i] {
					t.Errorf("ingress %v: got %v, %v; want %v, true", in, got, ok, tt.want[i])
				}
			}
		})
	}
	if _, ok := wire.UpstreamFor("bedrock", wire.ChatCompletions); ok {
		t.Error("bedrock: got known, want unknown")
	}
	if want := []string{"openai", "chat", "anthropic", "gemini"}; !slices.Equal(wire.UpstreamKinds, want) {
		t.Errorf("UpstreamKinds: got %v, want %v (the wire order of the protocols that register them)", wire.UpstreamKinds, want)
	}
	if want := []string{"x-api-key", "x-goog-api-key"}; !slices.Equal(wire.KeyHeaders(), want) {
		t.Errorf("KeyHeaders: got %v, want %v (Messages' before Gemini's)", wire.KeyHeaders(), want)
	}
	for _, p := range ingresses {
		if wire.UpstreamOf(p) == nil {
			t.Errorf("UpstreamOf(%v): got nil, want its package's Upstream", p)
		}
	}
}
