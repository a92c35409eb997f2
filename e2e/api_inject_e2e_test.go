package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
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
	h := e2etest.New(t, e2etest.Options{API: func(ac *api.Config) {
		fs.store = ac.Store
		ac.Summarizer = fs
		ac.Context = func(ctx context.Context, _ auth.Caller, k history.Key, q api.ContextQuery) (*api.Context, error) {
			asked = append(asked, q)
			return &api.Context{Model: q.Model, Tokens: 7, Budget: q.Budget,
				Messages: []api.ContextMessage{{Seq: 1, Tokens: 7, Protocol: "chat.completions", Role: "user", Text: "hi", Message: []byte(`{"role":"user","content":"hi"}`)}}}, nil
		}
	}})
	for _, conv := range []string{"s-1", "fails"} {
		if a := h.API(key, "", "POST", convBase+conv+"/messages", memorizeBody(e2etest.UserJSON("hi"))); a.Status != 201 {
			t.Fatalf("memorize: %d %s", a.Status, a.Body)
		}
	}
	for _, v := range []string{"end", "summarize"} {
		if a := h.API(key, "", "POST", convBase+"s-1/"+v, ""); a.Status != 200 {
			t.Errorf("%s: %d %s", v, a.Status, a.Body)
		}
		if a := h.API(key, "", "POST", convBase+"unknown/"+v, ""); a.Status != 404 {
			t.Errorf("%s of an unknown conversation: %d %s", v, a.Status, a.Body)
		}
	}
	if a := h.API(key, "", "POST", convBase+"fails/summarize", ""); a.Status != 500 || a.ErrCode() != "internal_error" {
		t.Errorf("a failed summary: %d %s", a.Status, a.Body)
	}
	if got, want := fs.calls, []string{"end s-1", "summarize s-1", "summarize fails"}; !slices.Equal(got, want) {
		t.Errorf("summarizer calls %q, want %q", got, want)
	}
	a := h.API(key, "", "GET", convBase+"s-1/context?model=gpt-4o&budget=500", "")
	var x api.Context
	a.JSON(t, &x)
	if a.Status != 200 || x.Object != "context" || len(x.Messages) != 1 || len(asked) != 1 || asked[0] != (api.ContextQuery{Model: "gpt-4o", Budget: 500}) {
		t.Errorf("context: %d %s (asked %+v)", a.Status, a.Body, asked)
	}
	if a := h.API(key, "", "GET", convBase+"s-1/context?budget=-1", ""); a.Status != 400 {
		t.Errorf("context with a bad budget: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "GET", convBase+"unknown/context", ""); a.Status != 404 {
		t.Errorf("context of an unknown conversation: %d %s", a.Status, a.Body)
	}
}
