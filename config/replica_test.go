package config

import (
	"slices"
	"strings"
	"testing"
)

// TestReplicaURL: replica_url is read from the file and from
// RECALL_REPLICA_URL (which wins), and shown by check-config's
// description.
func TestReplicaURL(t *testing.T) {
	const store = "store_url: \"postgres://recall@db/recall\"\n"
	path := writeFile(t, t.TempDir(), "recall.yaml", store+"replica_url: \"http://10.0.0.5:8080\"\n")
	g, err := LoadGlobalEnv(path, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if g.ReplicaURL != "http://10.0.0.5:8080" {
		t.Fatalf("from the file: got %q, want http://10.0.0.5:8080", g.ReplicaURL)
	}
	g, err = LoadGlobalEnv(path, env(map[string]string{EnvReplicaURL: "https://recall-2.internal/"}))
	if err != nil {
		t.Fatal(err)
	}
	if g.ReplicaURL != "https://recall-2.internal/" {
		t.Fatalf("from %s: got %q, want https://recall-2.internal/", EnvReplicaURL, g.ReplicaURL)
	}
	if d := described(t, g); !strings.Contains(d, "replica_url: https://recall-2.internal/\n") {
		t.Errorf("check-config's description lacks replica_url:\n%s", d)
	}
	if g, err := LoadGlobalEnv("", env(nil)); err != nil || g.ReplicaURL != "" {
		t.Errorf("default: got %q, %v; want \"\" (no forwarding)", g.ReplicaURL, err)
	}
}

// TestReplicaURLProblems: a replica URL must be one the other replicas
// can send requests to, and replicas need a store they share; the
// variable is named when the value came from it.
func TestReplicaURLProblems(t *testing.T) {
	const store = "store_url: \"postgres://recall@db/recall\"\n"
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		lines [][]string
	}{
		{
			name:  "no store",
			file:  "replica_url: \"http://10.0.0.5:8080\"\n",
			lines: [][]string{{"recall.yaml: replica_url: needs store_url"}},
		},
		{
			name:  "no store, from the environment",
			file:  "log_level: info\n",
			env:   map[string]string{EnvReplicaURL: "http://10.0.0.5:8080"},
			lines: [][]string{{"RECALL_REPLICA_URL: needs store_url"}},
		},
		{
			name:  "not http",
			file:  store + "replica_url: \"ftp://10.0.0.5\"\n",
			lines: [][]string{{`recall.yaml: replica_url: "ftp://10.0.0.5": want http://host:port`}},
		},
		{
			name:  "no host",
			file:  store + "replica_url: \"http:///v1\"\n",
			lines: [][]string{{`replica_url: "http:///v1": want http://host:port`}},
		},
		{
			name:  "a path",
			file:  store + "replica_url: \"http://10.0.0.5:8080/v1\"\n",
			lines: [][]string{{`replica_url: "http://10.0.0.5:8080/v1"`, "no path or query"}},
		},
		{
			name:  "a query",
			file:  store + "replica_url: \"http://10.0.0.5:8080?a=b\"\n",
			lines: [][]string{{"replica_url:", "no path or query"}},
		},
		{
			name:  "user info, masked",
			file:  store + "replica_url: \"http://u:hunter2@10.0.0.5:8080\"\n",
			lines: [][]string{{`replica_url: "http://u:xxxxx@10.0.0.5:8080"`, "no user info"}},
		},
		{
			name:  "a bad value from the environment, with no store either",
			file:  "log_level: info\n",
			env:   map[string]string{EnvReplicaURL: "10.0.0.5:8080"},
			lines: [][]string{{`RECALL_REPLICA_URL: "10.0.0.5:8080": want http://host:port`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "recall.yaml", tt.file)
			_, err := LoadGlobalEnv(path, env(tt.env))
			if err == nil {
				t.Fatalf("got nil error, want %d problems", len(tt.lines))
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%v: shows the password", err)
			}
			wantProblems(t, err, tt.lines)
		})
	}
}

// TestReplicaURLWarning: a replica URL only this host can reach is
// valid (replicas on one host) but warned about.
func TestReplicaURLWarning(t *testing.T) {
	for _, tt := range []struct {
		url  string
		warn bool
	}{
		{"http://127.0.0.1:8081", true},
		{"http://localhost:8081", true},
		{"http://[::1]:8081", true},
		{"http://0.0.0.0:8081", true},
		{"http://10.0.0.5:8081", false},
		{"https://recall-2.internal", false},
		{"", false},
	} {
		if _, got := replicaURLWarning(tt.url); got != tt.warn {
			t.Errorf("replicaURLWarning(%q): got warn=%v, want %v", tt.url, got, tt.warn)
		}
	}
	g, err := LoadGlobalEnv("", env(map[string]string{EnvStoreURL: "postgres://recall@db/recall", EnvReplicaURL: "http://127.0.0.1:8081"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range Warnings(g, nil) {
		got = append(got, w.String())
	}
	want := `RECALL_REPLICA_URL: "http://127.0.0.1:8081" is reachable from this host only`
	if !slices.ContainsFunc(got, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q, want one starting %q", got, want)
	}
}
