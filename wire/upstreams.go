package wire

import (
	"fmt"
	"slices"
)

// UpstreamKind is a kind of upstream a tenant names (upstream.protocol):
// which protocol a request is sent upstream in, by the protocol it came
// in. A protocol package registers the kinds that speak it
// (RegisterUpstream).
type UpstreamKind struct {
	// Name is the value of upstream.protocol ("anthropic").
	Name string
	// AsCame are the protocols a request goes upstream in as it came;
	// every other request goes as Sends.
	AsCame []Protocol
	Sends  Protocol
}

// The kinds Recall's own protocol packages register, named here for
// their callers and tests. A new protocol's kind needs no name here: its
// package registers it.
const (
	// UpstreamOpenAI is OpenAI's API, the default: chat completions and
	// Responses requests go as they came, every other as chat
	// completions.
	UpstreamOpenAI = "openai"
	// UpstreamChat speaks only chat completions (most self-hosted and
	// third-party servers): every request goes as chat completions.
	UpstreamChat = "chat"
	// UpstreamAnthropic is Anthropic's Messages API: every request goes
	// as Messages.
	UpstreamAnthropic = "anthropic"
	// UpstreamGemini is Google's Gemini API (generativelanguage v1beta):
	// every request goes as Gemini generateContent.
	UpstreamGemini = "gemini"
)

// UpstreamKinds are the values of upstream.protocol, the Names of the
// registered kinds: in the wire order of the protocols that register
// them, and in the order each package lists its own (openai, chat,
// anthropic, gemini for Recall's). RegisterUpstream fills it, from init
// functions; nothing else may modify it.
var UpstreamKinds []string

// The registry RegisterUpstream fills, from init functions, which run
// before anything reads it: no lock on the hot path. kinds and
// keyHeaders are sorted by the protocol that registered each entry
// (kindsBy, keyHeadsBy), as UpstreamKinds is.
var (
	upstreams           [256]Upstream
	kinds               []UpstreamKind
	keyHeaders          []string
	kindsBy, keyHeadsBy []Protocol
)

// RegisterUpstream makes up the upstream side of protocol p, and
// registers the kinds of upstream that p's package serves (none for a
// protocol that is only sent to another's kind, as Responses is sent to
// openai's). Protocol packages call it from their init function and
// nowhere else; registering two upstreams for one protocol, or two kinds
// of one name, panics.
func RegisterUpstream(p Protocol, up Upstream, served ...UpstreamKind) {
	if upstreams[p] != nil {
		panic(fmt.Sprintf("wire: upstream of protocol %d registered twice", p))
	}
	upstreams[p] = up
	if kh, ok := up.(KeyHeader); ok {
		at := after(keyHeadsBy, p)
		keyHeadsBy = slices.Insert(keyHeadsBy, at, p)
		keyHeaders = slices.Insert(keyHeaders, at, kh.KeyHeader())
	}
	for _, k := range served {
		if slices.Contains(UpstreamKinds, k.Name) {
			panic(fmt.Sprintf("wire: upstream kind %q registered twice", k.Name))
		}
		at := after(kindsBy, p)
		kindsBy = slices.Insert(kindsBy, at, p)
		kinds = slices.Insert(kinds, at, k)
		UpstreamKinds = slices.Insert(UpstreamKinds, at, k.Name)
	}
}

// after is where an entry registered by p goes in a registry sorted by
// the protocols in by: after those of p and below.
func after(by []Protocol, p Protocol) int {
	if i := slices.IndexFunc(by, func(q Protocol) bool { return q > p }); i >= 0 {
		return i
	}
	return len(by)
}

// UpstreamOf returns the upstream side of p, nil if none is registered.
func UpstreamOf(p Protocol) Upstream { return upstreams[p] }

// UpstreamFor returns the protocol a request that came in ingress is sent
// upstream in, for an upstream of kind ("": UpstreamOpenAI). It reports
// false for a kind no linked package registered.
func UpstreamFor(kind string, ingress Protocol) (Protocol, bool) {
	if kind == "" {
		kind = UpstreamOpenAI
	}
	for i := range kinds {
		if k := &kinds[i]; k.Name == kind {
			if slices.Contains(k.AsCame, ingress) {
				return ingress, true
			}
			return k.Sends, true
		}
	}
	return 0, false
}

// KeyHeaders are the headers, after "Authorization: Bearer", that carry
// a key in the registered protocols (their Upstream's KeyHeader: Messages'
// x-api-key, Gemini's x-goog-api-key), in their wire order: the order a
// client's key is looked for in. The slice is the registry's own: it
// must not be modified.
func KeyHeaders() []string { return keyHeaders }
