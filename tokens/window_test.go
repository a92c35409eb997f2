package tokens

import "testing"

func TestWindow(t *testing.T) {
	overrides := map[string]int{"gpt-4o-mini": 64000, "llama": 131072, "openrouter/": 1000}
	tests := []struct {
		name      string
		model     string
		overrides map[string]int
		want      int
		wantOK    bool
	}{
		{"gpt-4o", "gpt-4o-2024-08-06", nil, 128000, true},
		{"gpt-4o-mini", "gpt-4o-mini", nil, 128000, true},
		{"gpt-4.1", "gpt-4.1-nano", nil, 1047576, true},
		{"gpt-5", "gpt-5-mini", nil, 272000, true},
		{"o1", "o1-2024-12-17", nil, 200000, true},
		{"o3-mini", "o3-mini", nil, 200000, true},
		{"o4-mini", "o4-mini-2025-04-16", nil, 200000, true},
		{"gpt-4-turbo", "gpt-4-turbo-preview", nil, 128000, true},
		{"gpt-4", "gpt-4", nil, 8192, true},
		{"gpt-4-0613", "gpt-4-0613", nil, 8192, true},
		{"gpt-3.5-turbo", "gpt-3.5-turbo-0125", nil, 16385, true},
		{"provider prefix", "openai/gpt-4o", nil, 128000, true},
		{"gpt-4 is not gpt-4o's prefix", "gpt-4omega", nil, 0, false},
		{"unknown", "llama-3.1-70b", nil, 0, false},
		{"claude", "claude-sonnet-4-5-20250929", nil, 200000, true},
		{"claude 3.5", "claude-3-5-haiku-latest", nil, 200000, true},
		{"claude 2", "claude-2.1", nil, 100000, true},
		{"gemini", "gemini-2.5-pro", nil, 1048576, true},
		{"gemini models/ prefix", "models/gemini-2.5-flash", nil, 1048576, true},
		{"gemini 1.5 pro", "gemini-1.5-pro-002", nil, 2097152, true},
		{"gpt-oss", "gpt-oss-120b", nil, 131072, true},
		{"override wins", "gpt-4o-mini", overrides, 64000, true},
		{"override unknown model", "llama-3.1-70b", overrides, 131072, true},
		{"override on full name", "openrouter/anything", overrides, 1000, true},
		{"override miss falls back", "gpt-4o", overrides, 128000, true},
		{"longest override wins", "gpt-4o-mini", map[string]int{"gpt": 1, "gpt-4o": 2, "gpt-4o-m": 3}, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Window(tt.model, tt.overrides)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Window(%q): got %d, %v, want %d, %v", tt.model, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
