package apierr_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
)

func TestOpenAIShape(t *testing.T) {
	tests := []struct {
		name string
		err  *apierr.Error
		want string
	}{
		{"code and param", apierr.BadConversationID,
			`{"error":{"message":"Conversation ids are 1-128 characters of [A-Za-z0-9._:@-], other than \".\" and \"..\".","type":"invalid_request_error","param":"conversation","code":"invalid_conversation_id"}}`},
		{"neither is null", apierr.BadBody,
			`{"error":{"message":"Could not read the request body.","type":"invalid_request_error","param":null,"code":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(apierr.OpenAI(tt.err)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestAnthropicShape(t *testing.T) {
	tests := []struct {
		err      *apierr.Error
		wantType string
	}{
		{apierr.BadConversationID, "invalid_request_error"},
		{apierr.Busy, "invalid_request_error"},
		{apierr.NoAPIKey, "authentication_error"},
		{apierr.InvalidAPIKey, "authentication_error"},
		{apierr.ConversationNotFound, "not_found_error"},
		{apierr.TooLarge, "request_too_large"},
		{apierr.HeavyBusy, "rate_limit_error"},
		{apierr.Internal, "api_error"},
		{apierr.UpstreamUnavailable, "api_error"},
		{apierr.NoSpace, "api_error"},
		{apierr.StoreUnavailable, "overloaded_error"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Code, func(t *testing.T) {
			want := `{"type":"error","error":{"type":"` + tt.wantType + `","message":"` + tt.err.Message + `"}}`
			if tt.err == apierr.BadConversationID {
				want = `{"type":"error","error":{"type":"invalid_request_error","message":"Conversation ids are 1-128 characters of [A-Za-z0-9._:@-], other than \".\" and \"..\"."}}`
			}
			if got := string(apierr.Anthropic(tt.err)); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}
