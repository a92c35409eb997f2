package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Warning is something in a configuration that is valid but likely a
// mistake. Its message never contains a secret.
type Warning struct {
	// File is the file the value comes from, "" when it comes from the
	// environment.
	File string
	// Key is the dotted key path, or the environment variable.
	Key string
	// Message says what is likely wrong.
	Message string
}

// String renders "file: key: message", leaving out what is empty.
func (w Warning) String() string { return problem{file: w.File, key: w.Key, msg: w.Message}.Error() }

// versionSegment is the last path segment of an API root: "v1", "v1beta",
// "v2alpha3".
var versionSegment = regexp.MustCompile(`^v\d+\w*$`)

// Warnings returns what in g and s is valid but likely a mistake: an
// upstream base URL whose path does not end in an API version segment
// ("/v1", "/v1beta", "/openai/v1"), and a replica_url only this host can
// reach (loopback, or the unspecified address). Recall appends the path
// below /v1 to the base URL ("/chat/completions"), so
// "https://api.openai.com" would send requests to
// https://api.openai.com/chat/completions. The defaults' URL is reported
// once, under the global file (or RECALL_UPSTREAM_URL); a tenant's only
// if it differs from the defaults'.
func Warnings(g Global, s *Set) []Warning {
	var ws []Warning
	if msg, ok := replicaURLWarning(g.ReplicaURL); ok {
		w := Warning{File: g.File, Key: "replica_url", Message: msg}
		if g.replicaURLFromEnv {
			w.File, w.Key = "", EnvReplicaURL
		}
		ws = append(ws, w)
	}
	def := g.Defaults.Upstream.BaseURL
	if msg, ok := baseURLWarning(def); ok {
		w := Warning{File: g.File, Key: "defaults.upstream.base_url", Message: msg}
		if g.baseURLFromEnv {
			w.File, w.Key = "", EnvUpstreamURL
		}
		ws = append(ws, w)
	}
	if s == nil {
		return ws
	}
	for _, t := range s.tenants {
		if t.PassThrough || t.Upstream.BaseURL == def {
			continue
		}
		if msg, ok := baseURLWarning(t.Upstream.BaseURL); ok {
			ws = append(ws, Warning{File: t.File, Key: "upstream.base_url", Message: msg})
		}
	}
	return ws
}

// baseURLWarning returns the warning for a base URL whose path does not
// end in a version segment.
func baseURLWarning(base string) (string, bool) {
	u, err := url.Parse(base)
	if err != nil {
		return "", false // Validate reports it
	}
	path := strings.TrimRight(u.Path, "/")
	if versionSegment.MatchString(path[strings.LastIndexByte(path, '/')+1:]) {
		return "", false
	}
	target := strings.TrimRight(u.Redacted(), "/") + "/chat/completions"
	return fmt.Sprintf("%q does not end in an API version such as /v1: chat completions will be sent to %s", u.Redacted(), target), true
}

// replicaURLWarning returns the warning for a replica URL that only
// processes on this host can reach: replicas on other hosts would fail
// every forward to it (and serve its conversations themselves).
func replicaURLWarning(replica string) (string, bool) {
	u, err := url.Parse(replica)
	if replica == "" || err != nil {
		return "", false // none, or Validate reports it
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host != "localhost" && !strings.HasSuffix(host, ".localhost") && (ip == nil || !ip.IsLoopback() && !ip.IsUnspecified()) {
		return "", false
	}
	return fmt.Sprintf("%q is reachable from this host only: replicas on other hosts cannot forward requests to this one", replica), true
}
