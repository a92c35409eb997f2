package proxy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
)

// fakeSummarizer records its calls and answers the stored metadata.
type fakeSummarizer struct {
	store history.Store
	calls []string
}

func (f *fakeSummarizer) End(ctx context.Context, k history.Key) (history.Meta, error) {
	f.calls = append(f.calls, "end "+k.Conversation)
	snap, err := f.store.Load(ctx, k, history.Query{})
	return snap.Meta, err
}

func (f *fakeSummarizer) Summarize(ctx context.Context, k history.Key) (history.Meta, error) {
	f.calls = append(f.calls, "summarize "+k.Conversation)
	if k.Conversation == "fails" {
		return history.Meta{}, errors.New("summary: upstream down")
	}
	snap, err := f.store.Load(ctx, k, history.Query{})
	return snap.Meta, err
}

func TestAPIEndSummarizeAndContextGoThroughWhatIsInjected(t *testing.T) {
	fs := &fakeSummarizer{}
	var asked []api.ContextQuery
	h := newHarness(t, harnessOptions{api: func(ac *api.Config) {
		fs.store = ac.Store
		ac.Summarizer = fs
		ac.Context = func(ctx context.Context, _ auth.Caller, k history.Key, q api.ContextQuery) (*api.Context, error) {
			asked = append(asked, q)
			return &api.Context{Model: q.Model, Tokens: 7, Budget: q.Budget,
				Messages: []api.ContextMessage{{Seq: 1, Tokens: 7, Message: []byte(`{"role":"user","content":"hi"}`)}}}, nil
		}
	}})
	for _, conv := range []string{"s-1", "fails"} {
		if a := h.api(key, "", "POST", convBase+conv+"/messages", memorizeBody(userJSON("hi"))); a.status != 201 {
			t.Fatalf("memorize: %d %s", a.status, a.body)
		}
	}
	for _, v := range []string{"end", "summarize"} {
		if a := h.api(key, "", "POST", convBase+"s-1/"+v, ""); a.status != 200 {
			t.Errorf("%s: %d %s", v, a.status, a.body)
		}
		if a := h.api(key, "", "POST", convBase+"unknown/"+v, ""); a.status != 404 {
			t.Errorf("%s of an unknown conversation: %d %s", v, a.status, a.body)
		}
	}
	if a := h.api(key, "", "POST", convBase+"fails/summarize", ""); a.status != 500 || a.errCode() != "internal_error" {
		t.Errorf("a failed summary: %d %s", a.status, a.body)
	}
	if got, want := fs.calls, []string{"end s-1", "summarize s-1", "summarize fails"}; !equalStrings(got, want) {
		t.Errorf("summarizer calls %q, want %q", got, want)
	}
	a := h.api(key, "", "GET", convBase+"s-1/context?model=gpt-4o&budget=500", "")
	var x api.Context
	a.json(t, &x)
	if a.status != 200 || x.Object != "context" || len(x.Messages) != 1 || len(asked) != 1 || asked[0] != (api.ContextQuery{Model: "gpt-4o", Budget: 500}) {
		t.Errorf("context: %d %s (asked %+v)", a.status, a.body, asked)
	}
	if a := h.api(key, "", "GET", convBase+"s-1/context?budget=-1", ""); a.status != 400 {
		t.Errorf("context with a bad budget: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "GET", convBase+"unknown/context", ""); a.status != 404 {
		t.Errorf("context of an unknown conversation: %d %s", a.status, a.body)
	}
}
