package config

import "testing"

func TestRedactURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no credentials", "https://api.openai.com/v1", "https://api.openai.com/v1"},
		{"password masked", "https://user:s3cret@host/v1", "https://user:xxxxx@host/v1"},
		{"user only kept", "https://user@host/v1", "https://user@host/v1"},
		{"unparsable with credentials", "https://user:s3cret@host:bad/v1", "https://xxxxx@host:bad/v1"},
		{"unparsable without scheme", "user:s3cret@ht!tp:x", "xxxxx@ht!tp:x"},
		{"unparsable without credentials", "ht!tp://x", "ht!tp://x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactURL(tt.in); got != tt.want {
				t.Errorf("RedactURL(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
