// Package config loads Recall's configuration: one global YAML file and,
// optionally, a directory of per-tenant YAML files.
//
// Loading decodes each file over the defaults (a tenant file over the global
// file's defaults section, so that every key it leaves out is inherited),
// expands ${VAR} references from the environment, rejects unknown keys, and
// validates. Every problem of every file is reported at once, one per line,
// as "path/to/file.yaml: key.path: what is wrong".
//
// Secrets (API keys, the admin key) have the type Secret, which masks itself
// in every printout. A Set of tenants is immutable and authenticates client
// keys by their SHA-256 digest; a Watcher swaps in a new Set when the tenants
// directory changes or on request.
//
// Load reads the global file and the tenant files together, which is how
// every problem of every file is reported in one pass; Warnings lists what
// is valid but likely a mistake.
//
// ${VAR} expansion applies to every value (never to keys) of every file. A
// variable that is not set is an error naming it; one set to "" expands to "".
// "$${" stands for a literal "${"; any other "$" is kept as written. An
// expanded value is read as the key's type, so "budget_tokens: ${BUDGET}"
// works; a value left empty by expansion of a non-string key keeps its
// default.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tools"
	"github.com/recallproxy/recall/wire"
)

// Global is the global configuration file. Its zero value is not useful:
// start from DefaultGlobal or LoadGlobal.
type Global struct {
	// Listen is the host:port the proxy listens on. Default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// DataDir is the Badger directory, relative to the working directory
	// unless absolute. Default "./recall-data".
	DataDir string `yaml:"data_dir"`
	// StoreURL, if set, stores conversations in PostgreSQL
	// ("postgres://user:password@host:port/database?options") instead of
	// Badger in DataDir, so that several replicas share them. Its password
	// is masked wherever it is printed. Default "": Badger.
	StoreURL StoreURL `yaml:"store_url"`
	// StoreMaxConns bounds the PostgreSQL connection pool. Default 10.
	StoreMaxConns int `yaml:"store_max_conns"`
	// ReplicaURL, if set, is the base URL ("http://host:port") at which
	// the other replicas sharing StoreURL reach this one. Each
	// conversation then has one owner among the live replicas, and a
	// replica forwards a memory request on a conversation another owns
	// to it (package fleet). It needs StoreURL. Default "": every
	// replica serves every request it receives.
	ReplicaURL string `yaml:"replica_url"`
	// TenantsDir holds one *.yaml or *.yml file per tenant. A relative path
	// is resolved against the directory of the global file. Default "": one
	// implicit tenant "default" in pass-through mode.
	TenantsDir string `yaml:"tenants_dir"`
	// AdminKey is a bearer key that may act on every tenant's conversations,
	// plain or "sha256:<64 hex>". Default "": no admin key.
	AdminKey Secret `yaml:"admin_key"`
	// LogFormat is "json" or "text". Default "json".
	LogFormat string `yaml:"log_format"`
	// LogLevel is "debug", "info", "warn" or "error". Default "info".
	LogLevel string `yaml:"log_level"`
	// MaxBodyBytes is the largest request body accepted. Default 32 MiB.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// CacheMB bounds the in-memory cache of recent conversation windows,
	// in MiB; 0 turns it off. Default 128.
	CacheMB int `yaml:"cache_mb"`
	// MemoryLimitMB is the Go runtime's soft memory limit (GOMEMLIMIT), in
	// MiB: the garbage collector works harder as the heap nears it rather
	// than let the heap grow to twice what is live. 0 derives it from
	// the window cache: cache_mb + 512 (the cache, Badger's memtables and
	// block cache, requests in flight and the collector's room); -1 sets
	// none. A GOMEMLIMIT in the environment wins. Default 0.
	MemoryLimitMB int `yaml:"memory_limit_mb"`
	// SyncWrites makes every commit fsync before it returns. Default true;
	// LoadGlobal never leaves it nil.
	SyncWrites *bool `yaml:"sync_writes"`
	// AIOFsync, with durable writes on Linux, fsyncs Badger's logs through
	// Linux AIO, waiting without holding a thread, instead of Badger's
	// msync: durable writes near relaxed ones on a one-core proxy.
	// Default true.
	AIOFsync bool `yaml:"aio_fsync"`
	// MinFreeMB is the free space, in MiB, the data directory's file system
	// must keep: below it recorded requests are refused with 507 before the
	// upstream is called and /readyz reports not ready, and a store that
	// starts below it opens read-only (serving history, taking no turns).
	// It must cover the largest commit plus Badger's own flushes. 0 turns
	// the guard off. Default 256.
	MinFreeMB int `yaml:"min_free_mb"`
	// API bounds the conversation API's heavy calls, so that one tenant's
	// searches or exports cannot slow every tenant's chat requests.
	API API `yaml:"api"`
	// Defaults is the policy every tenant starts from; a tenant file
	// overrides it key by key.
	Defaults Policy `yaml:"defaults"`
	// File is the path the configuration was read from, "" for none.
	File string `yaml:"-"`

	// baseURLFromEnv is set when RECALL_UPSTREAM_URL set
	// Defaults.Upstream.BaseURL, so that warnings name the variable.
	baseURLFromEnv bool
	// replicaURLFromEnv is set when RECALL_REPLICA_URL set ReplicaURL,
	// so that problems and warnings name the variable.
	replicaURLFromEnv bool
}

// API bounds the conversation API's heavy calls: searches, exports and
// imports, whose cost follows what a tenant stores rather than one
// conversation's window. Lighter calls (list, show, messages, memorize,
// forget, context) and end and summarize (which wait on the upstream,
// bounded by the summaries' own workers) are not bounded here.
type API struct {
	// MaxConcurrent bounds the heavy calls running at once, across
	// tenants; more wait for a slot within their time budget, and are
	// refused with 429 and Retry-After if none frees in time. 0 derives it
	// from the CPUs Go may use: one fewer, at least 1, so that chat
	// requests always have a core. Default 0.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxConcurrentPerTenant bounds one tenant's heavy calls in flight
	// (running or waiting; in pass-through mode, one key's): more are
	// refused at once with 429 and Retry-After. Default 2.
	MaxConcurrentPerTenant int `yaml:"max_concurrent_per_tenant"`
	// HeavyTimeout is a heavy call's time budget, its wait for a slot
	// included: past it, a search or an import's store work is cut off
	// (504). An export's stream, once started, has its own longer bound.
	// Default 10s.
	HeavyTimeout Duration `yaml:"heavy_timeout"`
}

// Policy is what a tenant file may set besides its id and keys. Global.Defaults
// has the same shape.
type Policy struct {
	// Upstream is where requests are forwarded.
	Upstream Upstream `yaml:"upstream"`
	// History is how stored conversations are merged and curated.
	History History `yaml:"history"`
	// Summary is how older turns are compacted.
	Summary Summary `yaml:"summary"`
}

// Upstream is the OpenAI-compatible API requests are forwarded to.
type Upstream struct {
	// BaseURL is the API root that "/chat/completions" and every other
	// "/v1/..." path is appended to. Default "https://api.openai.com/v1".
	BaseURL string `yaml:"base_url"`
	// Protocol is what the upstream speaks: "openai" (chat completions and
	// the Responses API, as OpenAI does), "chat" (chat completions only:
	// Responses and Messages requests are translated) or "anthropic"
	// (Messages: every request is translated). Default "openai".
	Protocol string `yaml:"protocol"`
	// APIKey replaces the client's key upstream. Default "": pass the
	// client's Authorization header through.
	APIKey Secret `yaml:"api_key"`
	// Headers are extra headers sent upstream. A tenant file that sets
	// headers adds to (or replaces values of) the defaults' headers. Default
	// none.
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds a whole upstream exchange, streams included. Default 10m.
	Timeout Duration `yaml:"timeout"`
}

// History is how a conversation's stored messages are merged with a request
// and curated into the context sent upstream.
type History struct {
	// ConversationHeader names the request header that carries the
	// conversation id. Default "X-Conversation-ID".
	ConversationHeader string `yaml:"conversation_header"`
	// Mode is the merge mode when the request does not pick one: "auto",
	// "append", "sync" or "off". Default "auto".
	Mode string `yaml:"mode"`
	// BudgetTokens is the most prompt tokens sent upstream: instructions,
	// summary, history and new messages. 0, the default: half the model's
	// input window (DESIGN.md section 5); otherwise at least 256.
	BudgetTokens int `yaml:"budget_tokens"`
	// LowWater is the fraction of the budget history is cut down to when it
	// outgrows the budget, in (0, 1]. Default 0.7.
	LowWater float64 `yaml:"low_water"`
	// MaxTurns caps the turns sent; 0 means only the budget limits them.
	// Default 0.
	MaxTurns int `yaml:"max_turns"`
	// OldToolResultChars is the length tool results of earlier turns are cut
	// to in the context; 0 means they are not cut. Default 2000.
	OldToolResultChars int `yaml:"old_tool_result_chars"`
	// StoredToolResultChars is the length longer tool results are cut to
	// when stored; 0 means they are stored whole. Default 50000.
	StoredToolResultChars int `yaml:"stored_tool_result_chars"`
	// Strategies are the curation strategies applied in order, from
	// "passthrough", "sliding_window", "token_budget" and
	// "tool_result_truncator". Default ["tool_result_truncator",
	// "sliding_window", "token_budget"].
	Strategies []string `yaml:"strategies"`
	// Encoding is the tiktoken encoding, "o200k_base" or "cl100k_base".
	// Default "": chosen by model.
	Encoding string `yaml:"encoding"`
	// ModelWindows maps a model-name prefix to an input window that
	// overrides the built-in one. Default none.
	ModelWindows map[string]int `yaml:"model_windows"`
	// IdleTimeout is the silence after which the next request starts a new
	// episode; 0 means never. Default 0.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// RetentionTTL expires conversations untouched this long; 0 means never.
	// Default 0.
	RetentionTTL Duration `yaml:"retention_ttl"`
	// MaxConversations caps the conversations kept: past it the least
	// recently used are removed; 0 means unlimited. Default 0.
	MaxConversations int `yaml:"max_conversations"`
	// Tools are the history tools Recall offers the model and runs itself
	// (package tools): "end_conversation", "get_conversation",
	// "search_conversations". Default none.
	Tools []string `yaml:"tools"`
	// ToolRounds bounds the upstream calls one client request makes when
	// the model calls Recall's tools, from 1 to 10. Default 3.
	ToolRounds int `yaml:"tool_rounds"`
}

// Summary is how older turns are compacted into a summary message.
type Summary struct {
	// Enabled turns compaction on. Default true.
	Enabled bool `yaml:"enabled"`
	// Model writes the summaries. Default "": the model of the request that
	// triggered the compaction.
	Model string `yaml:"model"`
	// TriggerTurns: summarise when more unsummarised turns than this are
	// stored. At least 1. Default 10.
	TriggerTurns int `yaml:"trigger_turns"`
	// KeepTurns is how many recent turns always stay verbatim after a
	// summary; less than TriggerTurns. Default 3.
	KeepTurns int `yaml:"keep_turns"`
	// MaxTokens is the budget of the summary text itself: the summariser is
	// asked for at most this many tokens and a longer answer is cut to it.
	// Default 1000.
	MaxTokens int `yaml:"max_tokens"`
	// MaxCallsPerJob bounds the summariser calls of one job. A job that
	// reaches it lands the summary of the chunks it folded so far; the
	// turns after them wait for the next job, so a runaway (a huge import,
	// a misbehaving summariser) costs at most this many calls per chat
	// request, and no turn is lost. At least 1. Default 64: one job folds
	// about 64 windows of transcript (some 8 million tokens with a
	// 128k-token model), far more than the trigger_turns a chat adds
	// between jobs.
	MaxCallsPerJob int `yaml:"max_calls_per_job"`
	// Prompt replaces the summariser's instructions (the system message of
	// its request). Default "": the built-in instructions, which ask to keep
	// names, facts, numbers, decisions, open tasks, tool results and the
	// user's preferences.
	Prompt string `yaml:"prompt"`
}

// Environment variables read by ApplyEnv.
const (
	// EnvListen overrides Global.Listen.
	EnvListen = "RECALL_LISTEN"
	// EnvUpstreamURL overrides the defaults' upstream base URL.
	EnvUpstreamURL = "RECALL_UPSTREAM_URL"
	// EnvUpstreamProtocol overrides the defaults' upstream protocol.
	EnvUpstreamProtocol = "RECALL_UPSTREAM_PROTOCOL"
	// EnvDataDir overrides Global.DataDir.
	EnvDataDir = "RECALL_DATA_DIR"
	// EnvStoreURL overrides Global.StoreURL.
	EnvStoreURL = "RECALL_STORE_URL"
	// EnvReplicaURL overrides Global.ReplicaURL.
	EnvReplicaURL = "RECALL_REPLICA_URL"
)

// DefaultGlobal returns the configuration used when there is no file: every
// key at its default. Each call returns fresh maps, slices and pointers.
func DefaultGlobal() Global {
	sync := true
	return Global{
		Listen:        "127.0.0.1:8080",
		DataDir:       "./recall-data",
		LogFormat:     "json",
		LogLevel:      "info",
		MaxBodyBytes:  32 << 20,
		CacheMB:       128,
		SyncWrites:    &sync,
		AIOFsync:      true,
		StoreMaxConns: 10,
		MinFreeMB:     256,
		API: API{
			MaxConcurrentPerTenant: 2,
			HeavyTimeout:           Duration(10 * time.Second),
		},
		Defaults: Policy{
			Upstream: Upstream{
				BaseURL:  "https://api.openai.com/v1",
				Protocol: wire.UpstreamOpenAI,
				Timeout:  Duration(10 * time.Minute),
			},
			History: History{
				ConversationHeader:    "X-Conversation-ID",
				Mode:                  string(history.Auto),
				LowWater:              0.7,
				OldToolResultChars:    2000,
				StoredToolResultChars: 50000,
				ToolRounds:            tools.DefaultRounds,
				Strategies: []string{
					history.NameToolResultTruncator,
					history.NameSlidingWindow,
					history.NameTokenBudget,
				},
			},
			Summary: Summary{
				Enabled:        true,
				TriggerTurns:   10,
				KeepTurns:      3,
				MaxTokens:      1000,
				MaxCallsPerJob: 64,
			},
		},
	}
}

// LoadGlobal reads the global file at path over DefaultGlobal (path "" means
// no file), expands ${VAR} from the process environment, applies the
// RECALL_* overrides and validates. It is LoadGlobalEnv with os.LookupEnv.
func LoadGlobal(path string) (Global, error) {
	return LoadGlobalEnv(path, os.LookupEnv)
}

// LoadGlobalEnv is LoadGlobal with the environment given as a lookup
// function (os.LookupEnv in production, a map in tests).
func LoadGlobalEnv(path string, lookup func(string) (string, bool)) (Global, error) {
	g, _, err := loadGlobal(path, lookup)
	if err != nil {
		return Global{}, err
	}
	return g, nil
}

// Load reads the global file at path (as LoadGlobalEnv) and the tenants it
// names (as LoadTenants), and reports the problems of every file in one
// pass: a global file with problems does not hide those of the tenant
// files. What a tenant file inherits from a global key that has a problem
// is reported once, under the global file. It is what `recall
// check-config` and `recall serve` use.
func Load(path string, lookup func(string) (string, bool)) (Global, *Set, error) {
	g, d, gerr := loadGlobal(path, lookup)
	if gerr != nil && (!d.decoded || g.TenantsDir == "") {
		// Nothing to read tenants from, or only the implicit tenant, whose
		// policy is the global defaults already reported.
		return Global{}, nil, gerr
	}
	var inherited func(string) bool
	if gerr != nil {
		reported := make(map[string]bool)
		for _, e := range flatten(gerr) {
			var p problem
			if errors.As(e, &p) && p.file == g.File {
				if key, ok := strings.CutPrefix(p.key, "defaults."); ok {
					reported[key] = true
				}
			}
		}
		inherited = func(key string) bool {
			for k := range reported {
				if under(key, k) {
					return true
				}
			}
			return false
		}
	}
	s, terr := loadTenants(g, lookup, inherited)
	if err := errors.Join(gerr, terr); err != nil {
		return Global{}, nil, err
	}
	return g, s, nil
}

// loadGlobal is LoadGlobalEnv returning the configuration even when it has
// problems, and what decoding the file learnt (d.decoded is true when
// there is no file): Load reads the tenants of a global file with problems.
func loadGlobal(path string, lookup func(string) (string, bool)) (Global, decoding, error) {
	g := DefaultGlobal()
	d := decoding{decoded: true}
	var decodeErr error // reported with the validation's problems
	if path != "" {
		data, err := readConfigFile(path)
		if err != nil {
			return Global{}, decoding{}, err
		}
		if d, decodeErr = decodeInto(path, data, &g, lookup, true); decodeErr != nil && !d.decoded {
			return Global{}, d, decodeErr
		}
		d.decoded = true // an empty file decodes to the defaults
		g.File = path
		if g.TenantsDir != "" && !filepath.IsAbs(g.TenantsDir) {
			g.TenantsDir = filepath.Join(filepath.Dir(path), g.TenantsDir)
		}
	}
	if g.SyncWrites == nil {
		sync := true
		g.SyncWrites = &sync
	}
	envErr := g.ApplyEnv(lookup)
	err := errors.Join(envErr, joinProblems(decodeErr, g.Validate(), d.failed, nil))
	return g, d, err
}

// ApplyEnv overrides g from RECALL_LISTEN (Listen), RECALL_UPSTREAM_URL
// (Defaults.Upstream.BaseURL), RECALL_UPSTREAM_PROTOCOL
// (Defaults.Upstream.Protocol), RECALL_DATA_DIR (DataDir),
// RECALL_STORE_URL (StoreURL) and RECALL_REPLICA_URL (ReplicaURL). Variables that are unset or empty change
// nothing. Tenants that set their own base_url keep it. A value that is
// not valid is not applied: it is reported under the variable's name,
// with any password masked.
func (g *Global) ApplyEnv(lookup func(string) (string, bool)) error {
	var ps problems
	if v, ok := lookup(EnvListen); ok && v != "" {
		if err := validateHostPort(v); err != nil {
			ps.addf(EnvListen, "%q: %v", v, err)
		} else {
			g.Listen = v
		}
	}
	if v, ok := lookup(EnvUpstreamURL); ok && v != "" {
		if err := validateBaseURL(v); err != nil {
			ps.addf(EnvUpstreamURL, "%q: %v", RedactURL(v), err)
		} else {
			g.Defaults.Upstream.BaseURL, g.baseURLFromEnv = v, true
		}
	}
	if v, ok := lookup(EnvUpstreamProtocol); ok && v != "" {
		if _, known := wire.UpstreamFor(v, wire.ChatCompletions); !known {
			ps.addf(EnvUpstreamProtocol, "%q: must be one of %s", v, strings.Join(wire.UpstreamKinds, ", "))
		} else {
			g.Defaults.Upstream.Protocol = v
		}
	}
	if v, ok := lookup(EnvDataDir); ok && v != "" {
		g.DataDir = v
	}
	if v, ok := lookup(EnvStoreURL); ok && v != "" {
		if err := validateStoreURL(v); err != nil {
			ps.addf(EnvStoreURL, "%q: %v", StoreURL(v).String(), err)
		} else {
			g.StoreURL = StoreURL(v)
		}
	}
	if v, ok := lookup(EnvReplicaURL); ok && v != "" {
		if err := validateReplicaURL(v); err != nil {
			ps.addf(EnvReplicaURL, "%q: %v", RedactURL(v), err)
		} else {
			g.ReplicaURL, g.replicaURLFromEnv = v, true
		}
	}
	return ps.err()
}

// clone returns a deep copy of p, so that decoding a tenant file over it
// never writes into the defaults' maps.
func (p Policy) clone() Policy {
	c := p
	if p.Upstream.Headers != nil {
		c.Upstream.Headers = make(map[string]string, len(p.Upstream.Headers))
		for k, v := range p.Upstream.Headers {
			c.Upstream.Headers[k] = v
		}
	}
	if p.History.ModelWindows != nil {
		c.History.ModelWindows = make(map[string]int, len(p.History.ModelWindows))
		for k, v := range p.History.ModelWindows {
			c.History.ModelWindows[k] = v
		}
	}
	if p.History.Strategies != nil {
		c.History.Strategies = append([]string(nil), p.History.Strategies...)
	}
	return c
}

// maxFileBytes bounds a configuration file; anything larger is a mistake.
const maxFileBytes = 1 << 20

// readConfigFile reads a configuration file of at most maxFileBytes.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, problem{file: path, msg: fmt.Sprintf("file is larger than %d bytes", maxFileBytes)}
	}
	return data, nil
}

// memoryHeadroomMB is what a derived memory limit allows beyond the
// window cache: Badger's memtables (two of 16 MiB, with their arenas'
// slack), its 16 MiB block cache and table indexes, requests in flight
// and the collector's working room. At 192 the load script's
// recall-sync rows ran with the heap pinned at the limit: a collection
// a second and the scavenger returning pages that the next memtable
// faulted back in, and the non-streamed open row's p99 at 82-114 ms in
// five runs; at 512 it was 11-52 ms in five runs alternated with them,
// for 200-300 MiB more peak RSS (docs/performance.md, "The memory
// limit's headroom").
const memoryHeadroomMB = 512

// MemoryLimit returns the soft memory limit memory_limit_mb asks for, in
// bytes, or 0 for none.
func (g Global) MemoryLimit() int64 {
	switch {
	case g.MemoryLimitMB < 0:
		return 0
	case g.MemoryLimitMB > 0:
		return int64(g.MemoryLimitMB) << 20
	default:
		return int64(g.CacheMB+memoryHeadroomMB) << 20
	}
}
