package config

import "testing"

func TestUpstreamCredential(t *testing.T) {
	tests := []struct {
		name, key, client, want string
	}{
		{"tenant key replaces the client's", "sk-tenant", "rk-client", "sk-tenant"},
		{"pass-through sends the client's", "", "sk-client", "sk-client"},
		{"nothing to send", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := Upstream{APIKey: Secret(tt.key)}
			if got := u.Credential(tt.client); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got, want := u.PassesClientKey(), tt.key == ""; got != want {
				t.Errorf("PassesClientKey: got %v, want %v", got, want)
			}
		})
	}
}
