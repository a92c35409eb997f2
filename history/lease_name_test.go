package history_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
)

func TestLeaseName(t *testing.T) {
	tests := []struct {
		name, kind string
		key        history.Key
		want       string
	}{
		{"conversation", history.LeaseConversation, history.Key{Tenant: "acme", Conversation: "c1"}, "conv/acme/c1"},
		{"summary", history.LeaseSummary, history.Key{Tenant: "default.pt.00ff", Conversation: "a:b@c"}, "summary/default.pt.00ff/a:b@c"},
		{"namespace", history.LeaseRetention, history.Key{Tenant: "acme"}, "retention/acme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.LeaseName(tt.kind, tt.key); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
