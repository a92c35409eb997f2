package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestBaseURLWarning(t *testing.T) {
	tests := []struct {
		name string
		url  string
		warn bool
	}{
		{"v1", "https://api.openai.com/v1", false},
		{"v1 with a trailing slash", "https://api.openai.com/v1/", false},
		{"v1beta", "https://generativelanguage.googleapis.com/v1beta", false},
		{"openai/v1", "https://example.com/openai/v1", false},
		{"v2alpha3", "http://127.0.0.1:9801/api/v2alpha3", false},
		{"no path", "https://api.openai.com", true},
		{"root path", "https://api.openai.com/", true},
		{"not a version", "http://127.0.0.1:9801/openai", true},
		{"version not last", "http://host/v1/openai", true},
		{"a v without digits", "http://host/vx", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := baseURLWarning(tt.url)
			if got != tt.warn {
				t.Errorf("baseURLWarning(%q): got warn=%v, want %v", tt.url, got, tt.warn)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	global := writeFile(t, dir, "recall.yaml", "tenants_dir: tenants\ndefaults:\n  upstream:\n    base_url: \"https://user:pw@up.example\"\n")
	tdir := filepath.Join(dir, "tenants")
	mkdir(t, tdir)
	writeFile(t, tdir, "a.yaml", "id: a\napi_keys: [rk-a]\n")
	b := writeFile(t, tdir, "b.yaml", "id: b\napi_keys: [rk-b]\nupstream:\n  base_url: http://127.0.0.1:9801/\n")
	writeFile(t, tdir, "c.yaml", "id: c\napi_keys: [rk-c]\nupstream:\n  base_url: http://127.0.0.1:9801/v1\n")

	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{
			name: "from the files",
			want: []string{
				global + `: defaults.upstream.base_url: "https://user:xxxxx@up.example" does not end in an API version such as /v1: chat completions will be sent to https://user:xxxxx@up.example/chat/completions`,
				b + `: upstream.base_url: "http://127.0.0.1:9801/" does not end in an API version such as /v1: chat completions will be sent to http://127.0.0.1:9801/chat/completions`,
			},
		},
		{
			name: "from the environment",
			env:  map[string]string{"RECALL_UPSTREAM_URL": "http://127.0.0.1:1"},
			want: []string{
				`RECALL_UPSTREAM_URL: "http://127.0.0.1:1" does not end in an API version such as /v1: chat completions will be sent to http://127.0.0.1:1/chat/completions`,
				b + `: upstream.base_url: "http://127.0.0.1:9801/" does not end in an API version such as /v1: chat completions will be sent to http://127.0.0.1:9801/chat/completions`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, s, err := Load(global, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range Warnings(g, s) {
				got = append(got, w.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
