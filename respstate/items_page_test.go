package respstate_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

// key is a client's key: the harness's tenant passes any key through.
const key = "sk-client-1"

// countingStore counts the messages the store hands its readers.
type countingStore struct {
	history.Store
	read *atomic.Int64
}

func (s countingStore) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	snap, err := s.Store.Load(ctx, k, q)
	s.read.Add(int64(len(snap.Tail)))
	return snap, err
}

func (s countingStore) Messages(ctx context.Context, k history.Key, after uint64, all bool, fn func(history.Message) bool) error {
	return s.Store.Messages(ctx, k, after, all, func(m history.Message) bool {
		s.read.Add(1)
		return fn(m)
	})
}

// TestItemPagesCostTheirSize: a page of a conversation's items reads
// about its own size from the store, whatever the conversation's length:
// the first page newest first, and pages oldest first from a cursor.
// Pages still hold the right items.
func TestItemPagesCostTheirSize(t *testing.T) {
	var read atomic.Int64
	h := e2etest.New(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.Store = countingStore{c.Store, &read} }})
	const n = 400
	var items []string
	for i := range n {
		items = append(items, `{"role":"user","content":"item `+strconv.Itoa(i+1)+`"}`)
	}
	res := h.PostHeaders("/v1/conversations", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		`{"items":[`+strings.Join(items, ",")+`]}`)
	conv := gjson.Get(res.Body, "id").Str
	if res.Status != 200 || conv == "" {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	tests := []struct {
		query, want string
		more        bool
	}{
		{"?limit=1", "item 400", true},
		{"?limit=2", "item 400|item 399", true},
		{"?limit=2&order=asc", "item 1|item 2", true},
		{"?limit=2&order=asc&after=msg_200", "item 201|item 202", true},
		{"?limit=2&after=msg_300", "item 299|item 298", true},
		{"?limit=3&after=msg_3", "item 2|item 1", false},
		{"?limit=5&order=asc&after=msg_399", "item 400", false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			read.Store(0)
			r := h.Get("/v1/conversations/"+conv+"/items"+tt.query, key)
			var got []string
			gjson.Get(r.Body, "data").ForEach(func(_, it gjson.Result) bool {
				got = append(got, it.Get("content.0.text").Str)
				return true
			})
			if r.Status != 200 || strings.Join(got, "|") != tt.want || gjson.Get(r.Body, "has_more").Bool() != tt.more {
				t.Errorf("got %d %s, want %q has_more %v", r.Status, r.Body, tt.want, tt.more)
			}
			if r := read.Load(); r > 10 {
				t.Errorf("read %d messages for the page, want at most 10 (of %d)", r, n)
			}
		})
	}
}

// blockingStore holds the first read of an armed conversation until
// release closes, saying on entered that it holds one.
type blockingStore struct {
	history.Store
	conv             *atomic.Value
	entered, release chan struct{}
}

func (s blockingStore) Messages(ctx context.Context, k history.Key, after uint64, all bool, fn func(history.Message) bool) error {
	s.hold(k)
	return s.Store.Messages(ctx, k, after, all, fn)
}

func (s blockingStore) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	s.hold(k)
	return s.Store.Load(ctx, k, q)
}

func (s blockingStore) hold(k history.Key) {
	if c, _ := s.conv.Load().(string); c != "" && c == k.Conversation && s.conv.CompareAndSwap(c, "") {
		s.entered <- struct{}{}
		<-s.release
	}
}

// TestItemPagesRunUnderTheHeavyLimiter: pages of the Conversations API's
// items are heavy calls, under the conversation API's limiter: with one
// heavy call a tenant, a second page while the first is in flight is a
// 429, and the first is answered.
func TestItemPagesRunUnderTheHeavyLimiter(t *testing.T) {
	var conv atomic.Value
	conv.Store("")
	bs := blockingStore{conv: &conv, entered: make(chan struct{}, 1), release: make(chan struct{})}
	h := e2etest.New(t, e2etest.Options{
		Proxy: func(c *proxy.Config) { bs.Store = c.Store; c.Store = bs },
		API:   func(c *api.Config) { c.MaxHeavyPerTenant = 1 },
	})
	res := h.PostHeaders("/v1/conversations", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		`{"items":[{"role":"user","content":"hi"}]}`)
	id := gjson.Get(res.Body, "id").Str
	get := func() (int, string) {
		req, _ := http.NewRequest("GET", h.URL+"/v1/conversations/"+id+"/items?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	conv.Store(id)
	first := make(chan int, 1)
	go func() { st, _ := get(); first <- st }()
	<-bs.entered
	st, body := get()
	close(bs.release)
	if st != 429 || gjson.Get(body, "error.code").Str != "rate_limit_exceeded" {
		t.Errorf("second page while the first is in flight: got %d %s, want 429 rate_limit_exceeded", st, body)
	}
	if st := <-first; st != 200 {
		t.Errorf("first page: got %d, want 200", st)
	}
}
