package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tools"
	"github.com/recallproxy/recall/wire"
)

// problem is one thing wrong with a configuration file. Its message never
// contains a secret's value.
type problem struct {
	file string // the file, "" when there is none
	key  string // the dotted key path, "" for the whole file
	msg  string
}

// Error renders "file: key: msg", leaving out what is empty.
func (p problem) Error() string {
	var b strings.Builder
	if p.file != "" {
		b.WriteString(p.file)
		b.WriteString(": ")
	}
	if p.key != "" {
		b.WriteString(p.key)
		b.WriteString(": ")
	}
	b.WriteString(p.msg)
	return b.String()
}

// problems collects the problems of one file.
type problems struct {
	file string
	errs []error
}

func (ps *problems) addf(key, format string, args ...any) {
	ps.errs = append(ps.errs, problem{file: ps.file, key: key, msg: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error { return errors.Join(ps.errs...) }

// joinProblems joins a file's decoding problems with its validation
// problems, leaving out validation problems at or under a key the decoder
// already reported (failed) or that skip says to leave out: such a key
// holds its default, or nothing, instead of what the file meant, so what
// validation says about it would only repeat or mislead.
func joinProblems(decodeErr, validateErr error, failed []string, skip func(key string) bool) error {
	errs := []error{decodeErr}
	for _, e := range flatten(validateErr) {
		var p problem
		if errors.As(e, &p) && (slices.ContainsFunc(failed, func(f string) bool { return under(p.key, f) }) || (skip != nil && skip(p.key))) {
			continue
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// flatten lists the errors joined in err, depth first.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// under reports whether key is parent or a key below it: "history" holds
// "history.max_turns", "api_keys" holds "api_keys[0]".
func under(key, parent string) bool {
	if !strings.HasPrefix(key, parent) {
		return false
	}
	rest := key[len(parent):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// Validate reports every problem of g at once, joined with errors.Join,
// each as "file: key: problem". It checks the defaults policy too.
func (g Global) Validate() error {
	ps := problems{file: g.File}
	if err := validateHostPort(g.Listen); err != nil {
		ps.addf("listen", "%v, got %q", err, g.Listen)
	}
	if g.DataDir == "" {
		ps.addf("data_dir", "must not be empty")
	}
	if g.AdminKey != "" {
		validateKey(&ps, "admin_key", g.AdminKey)
	}
	if g.StoreURL != "" {
		if err := validateStoreURL(string(g.StoreURL)); err != nil {
			ps.addf("store_url", "%q: %v", g.StoreURL.String(), err)
		}
	}
	if g.ReplicaURL != "" {
		validateReplica(&ps, g)
	}
	if g.StoreMaxConns < 1 {
		ps.addf("store_max_conns", "must be >= 1, got %d", g.StoreMaxConns)
	}
	switch g.LogFormat {
	case "json", "text":
	default:
		ps.addf("log_format", "must be \"json\" or \"text\", got %q", g.LogFormat)
	}
	switch g.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		ps.addf("log_level", "must be one of debug, info, warn, error, got %q", g.LogLevel)
	}
	if g.MinFreeMB < 0 {
		ps.addf("min_free_mb", "must be >= 0, got %d", g.MinFreeMB)
	}
	if g.CacheMB < 0 {
		ps.addf("cache_mb", "must be >= 0, got %d", g.CacheMB)
	}
	if g.MemoryLimitMB < -1 {
		ps.addf("memory_limit_mb", "must be -1 (none), 0 (derived from cache_mb) or a size in MiB, got %d", g.MemoryLimitMB)
	}
	if g.MaxBodyBytes <= 0 {
		ps.addf("max_body_bytes", "must be > 0, got %d", g.MaxBodyBytes)
	}
	if g.API.MaxConcurrent < 0 {
		ps.addf("api.max_concurrent", "must be >= 0 (0: one fewer than the CPUs), got %d", g.API.MaxConcurrent)
	}
	if g.API.MaxConcurrentPerTenant < 1 {
		ps.addf("api.max_concurrent_per_tenant", "must be >= 1, got %d", g.API.MaxConcurrentPerTenant)
	}
	if g.API.HeavyTimeout <= 0 {
		ps.addf("api.heavy_timeout", "must be > 0, got %s", g.API.HeavyTimeout)
	}
	validatePolicy(&ps, "defaults.", g.Defaults)
	return ps.err()
}

// validateReplica checks replica_url (set): a URL the other replicas can
// reach, and a store they share. A value from RECALL_REPLICA_URL was
// checked as it was applied; what it lacks is reported under the
// variable's name.
func validateReplica(ps *problems, g Global) {
	key := "replica_url"
	if g.replicaURLFromEnv {
		key = EnvReplicaURL
	} else if err := validateReplicaURL(g.ReplicaURL); err != nil {
		ps.addf(key, "%q: %v", RedactURL(g.ReplicaURL), err)
	}
	if g.StoreURL == "" {
		p := problem{file: ps.file, key: key, msg: "needs store_url: replicas find each other in the PostgreSQL database they share"}
		if g.replicaURLFromEnv {
			p.file = ""
		}
		ps.errs = append(ps.errs, p)
	}
}

// idPattern is what a tenant id may look like: it names storage keys and
// appears in logs and metrics.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate reports every problem of t at once, joined with errors.Join, each
// as "file: key: problem". A file tenant needs at least one key; the
// implicit pass-through tenant has none, and its policy is reported under
// "defaults." since that is where it comes from.
func (t *Tenant) Validate() error {
	ps := problems{file: t.File}
	switch {
	case t.ID == "":
		ps.addf("id", "required")
	case !idPattern.MatchString(t.ID):
		ps.addf("id", "%q must match %s", t.ID, idPattern)
	}
	if len(t.APIKeys) == 0 && !t.PassThrough {
		ps.addf("api_keys", "at least one key is required")
	}
	for i, k := range t.APIKeys {
		validateKey(&ps, "api_keys["+strconv.Itoa(i)+"]", k)
	}
	prefix := ""
	if t.PassThrough {
		prefix = "defaults."
	}
	validatePolicy(&ps, prefix, t.Policy)
	return ps.err()
}

// validateKey checks a client or admin key without ever quoting it.
func validateKey(ps *problems, key string, k Secret) {
	s := k.Reveal()
	if s == "" {
		ps.addf(key, "must not be empty")
		return
	}
	if digest, ok := strings.CutPrefix(s, sha256Prefix); ok {
		if _, err := decodeDigest(digest); err != nil {
			ps.addf(key, "a sha256: key must be followed by 64 hex digits")
		}
	}
}

// decodeDigest decodes the 64 hex digits of a SHA-256 digest.
func decodeDigest(s string) ([32]byte, error) {
	var d [32]byte
	if len(s) != 64 {
		return d, errors.New("config: want 64 hex digits")
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("config: decode digest: %w", err)
	}
	return d, nil
}

// validatePolicy checks p, naming keys under prefix ("defaults." in the
// global file, "" in a tenant file).
func validatePolicy(ps *problems, prefix string, p Policy) {
	k := func(key string) string { return prefix + key }
	validateUpstream(ps, k, p.Upstream)
	validateHistory(ps, k, p.History)
	validateSummary(ps, k, p.Summary)
}

// validateUpstream checks a policy's upstream; k names its keys.
func validateUpstream(ps *problems, k func(string) string, u Upstream) {
	if err := validateBaseURL(u.BaseURL); err != nil {
		ps.addf(k("upstream.base_url"), "%v", err)
	}
	if _, known := wire.UpstreamFor(u.Protocol, wire.ChatCompletions); !known {
		ps.addf(k("upstream.protocol"), "%q: must be one of %s", u.Protocol, strings.Join(wire.UpstreamKinds, ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(u.Headers)) {
		v := u.Headers[name]
		if !isToken(name) {
			ps.addf(k("upstream.headers"), "%q is not a valid header name", name)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			ps.addf(k("upstream.headers."+name), "value must not contain CR, LF or NUL")
		}
	}
	if u.Timeout <= 0 {
		ps.addf(k("upstream.timeout"), "must be > 0, got %s", u.Timeout)
	}
}

// validateHistory checks a policy's history settings; k names its keys.
func validateHistory(ps *problems, k func(string) string, h History) {
	if !isToken(h.ConversationHeader) {
		ps.addf(k("history.conversation_header"), "%q is not a valid header name", h.ConversationHeader)
	}
	if _, err := history.ParseMode(h.Mode); err != nil {
		ps.addf(k("history.mode"), "must be one of auto, append, sync, off, got %q", h.Mode)
	}
	if h.BudgetTokens != 0 && h.BudgetTokens < 256 {
		ps.addf(k("history.budget_tokens"), "must be 0 (half the model's window) or >= 256, got %d", h.BudgetTokens)
	}
	if !(h.LowWater > 0 && h.LowWater <= 1) {
		ps.addf(k("history.low_water"), "must be in (0, 1], got %g", h.LowWater)
	}
	if h.MaxTurns < 0 {
		ps.addf(k("history.max_turns"), "must be >= 0, got %d", h.MaxTurns)
	}
	if h.OldToolResultChars < 0 {
		ps.addf(k("history.old_tool_result_chars"), "must be >= 0, got %d", h.OldToolResultChars)
	}
	if h.StoredToolResultChars < 0 {
		ps.addf(k("history.stored_tool_result_chars"), "must be >= 0, got %d", h.StoredToolResultChars)
	}
	if len(h.Strategies) == 0 {
		ps.addf(k("history.strategies"), "must name at least one strategy (passthrough sends everything)")
	}
	validateStrategies(ps, k, h.Strategies)
	switch h.Encoding {
	case "", "o200k_base", "cl100k_base":
	default:
		ps.addf(k("history.encoding"), "must be \"\", \"o200k_base\" or \"cl100k_base\", got %q", h.Encoding)
	}
	for _, prefix := range slices.Sorted(maps.Keys(h.ModelWindows)) {
		n := h.ModelWindows[prefix]
		if prefix == "" {
			ps.addf(k("history.model_windows"), "model prefix must not be empty")
		}
		if n <= 0 {
			ps.addf(k("history.model_windows."+prefix), "must be > 0, got %d", n)
		}
	}
	if h.IdleTimeout < 0 {
		ps.addf(k("history.idle_timeout"), "must be >= 0, got %s", h.IdleTimeout)
	}
	if h.RetentionTTL < 0 {
		ps.addf(k("history.retention_ttl"), "must be >= 0, got %s", h.RetentionTTL)
	}
	if err := tools.Validate(h.Tools); err != nil {
		ps.addf(k("history.tools"), "%v", err)
	}
	if h.ToolRounds < 1 || h.ToolRounds > tools.MaxRounds {
		ps.addf(k("history.tool_rounds"), "must be in [1, %d], got %d", tools.MaxRounds, h.ToolRounds)
	}
	if h.MaxConversations < 0 {
		ps.addf(k("history.max_conversations"), "must be >= 0, got %d", h.MaxConversations)
	}
}

// validateStrategies checks history.strategies: known names, each once.
func validateStrategies(ps *problems, k func(string) string, strategies []string) {
	seen := make(map[string]bool, len(strategies))
	for i, s := range strategies {
		key := k("history.strategies[" + strconv.Itoa(i) + "]")
		switch {
		case !slices.Contains(history.StrategyNames, s):
			ps.addf(key, "unknown strategy %q (known: %s)", s, strings.Join(history.StrategyNames, ", "))
		case seen[s]:
			ps.addf(key, "strategy %q listed twice", s)
		}
		seen[s] = true
	}
}

// validateSummary checks a policy's summary settings; k names its keys.
func validateSummary(ps *problems, k func(string) string, s Summary) {
	if s.TriggerTurns < 1 {
		ps.addf(k("summary.trigger_turns"), "must be >= 1, got %d", s.TriggerTurns)
	}
	if s.KeepTurns < 0 || (s.TriggerTurns >= 1 && s.KeepTurns >= s.TriggerTurns) {
		ps.addf(k("summary.keep_turns"), "must be >= 0 and < trigger_turns (%d), got %d", s.TriggerTurns, s.KeepTurns)
	}
	if s.MaxTokens <= 0 {
		ps.addf(k("summary.max_tokens"), "must be > 0, got %d", s.MaxTokens)
	}
	if s.MaxCallsPerJob < 1 {
		ps.addf(k("summary.max_calls_per_job"), "must be >= 1, got %d", s.MaxCallsPerJob)
	}
}

// validateHostPort checks a listen address; the error does not quote it.
func validateHostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port such as 127.0.0.1:8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errors.New("port must be a number from 0 to 65535")
	}
	return nil
}

// validateBaseURL checks an upstream base URL without quoting it: it may
// carry credentials.
func validateBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which *url.Error quotes
		}
		return fmt.Errorf("must be an absolute http:// or https:// URL: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	if u.Fragment != "" {
		return errors.New("must not have a #fragment")
	}
	return nil
}

// RedactURL returns s fit for a message or a log line: the password of a
// URL with a host is replaced by "xxxxx" (url.URL.Redacted), and so is
// everything between "://" (or the start) and the last "@" of anything
// else, which may be a URL mistyped around its credentials.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Redacted()
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return s[:start] + "xxxxx" + s[at:]
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names
// must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
