package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apitest"
	"github.com/recallproxy/recall/proxy"
)

// listingStore adds List and Search to a store whose own are not built
// yet (Badger's land with the store's index work): it remembers the
// conversations committed through it and answers from their metadata and
// messages, by the Store contract. Everything else is the real store's.
type listingStore struct {
	history.Store
	mu    sync.Mutex
	convs map[string]map[string]bool // tenant -> conversation ids
}

func withListing(o harnessOptions) harnessOptions {
	prev := o.proxy
	o.proxy = func(c *proxy.Config) {
		if prev != nil {
			prev(c)
		}
		c.Store = &listingStore{Store: c.Store, convs: map[string]map[string]bool{}}
	}
	return o
}

func (s *listingStore) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	m, err := s.Store.Commit(ctx, k, c)
	if err == nil {
		s.mu.Lock()
		if s.convs[k.Tenant] == nil {
			s.convs[k.Tenant] = map[string]bool{}
		}
		s.convs[k.Tenant][k.Conversation] = true
		s.mu.Unlock()
	}
	return m, err
}

func (s *listingStore) Delete(ctx context.Context, k history.Key) error {
	err := s.Store.Delete(ctx, k)
	s.mu.Lock()
	delete(s.convs[k.Tenant], k.Conversation)
	s.mu.Unlock()
	return err
}

func (s *listingStore) ids(tenant string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.convs[tenant] {
		out = append(out, id)
	}
	return out
}

func (s *listingStore) List(ctx context.Context, tenant string, q history.ListQuery) ([]history.Entry, bool, error) {
	var all []history.Entry
	for _, id := range s.ids(tenant) {
		snap, err := s.Store.Load(ctx, history.Key{Tenant: tenant, Conversation: id}, history.Query{})
		if err != nil {
			return nil, false, err
		}
		all = append(all, history.Entry{Conversation: id, Meta: snap.Meta})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].Meta.UpdatedAt, all[j].Meta.UpdatedAt
		if a != b {
			return (a > b) != q.Oldest
		}
		return all[i].Conversation > all[j].Conversation
	})
	if q.After != "" {
		i := slices.IndexFunc(all, func(e history.Entry) bool { return e.Conversation == q.After })
		all = all[i+1:]
	}
	var page []history.Entry
	for _, e := range all {
		if q.UpdatedBefore > 0 && e.Meta.UpdatedAt >= q.UpdatedBefore || q.Keep != nil && !q.Keep(&e.Meta) {
			continue
		}
		if len(page) == q.Limit {
			return page, true, nil
		}
		page = append(page, e)
	}
	return page, false, nil
}

// Search counts query words in each active message: enough to test the
// routes, not the ranking (history/search has that).
func (s *listingStore) Search(ctx context.Context, tenant string, q history.SearchQuery) ([]history.Hit, error) {
	words := strings.Fields(strings.ToLower(q.Text))
	var hits []history.Hit
	for _, id := range s.ids(tenant) {
		if q.Conversation != "" && id != q.Conversation {
			continue
		}
		err := s.Store.Messages(ctx, history.Key{Tenant: tenant, Conversation: id}, 0, false, func(m history.Message) bool {
			score := 0.0
			for _, w := range words {
				score += float64(strings.Count(strings.ToLower(string(m.Raw)), w))
			}
			if score > 0 {
				m.Raw = bytes.Clone(m.Raw)
				hits = append(hits, history.Hit{Conversation: id, Message: m, Score: score})
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	return hits[:min(len(hits), q.Limit)], nil
}

// apiAnswer is one answer of the conversation API.
type apiAnswer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body into v.
func (a apiAnswer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// errCode is the answer's OpenAI error code.
func (a apiAnswer) errCode() string {
	var e struct {
		Error struct {
			Code  *string `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	json.Unmarshal(a.body, &e)
	if e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

// api calls the conversation API as key (with header X-Recall-Tenant set
// to tenant, if not "") and checks the answer against the OpenAPI
// document.
func (h *harness) api(key, tenant, method, path string, body string, contentType ...string) apiAnswer {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if tenant != "" {
		req.Header.Set("X-Recall-Tenant", tenant)
	}
	switch {
	case len(contentType) > 0:
		req.Header.Set("Content-Type", contentType[0])
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := apitest.Check(method, path, resp.StatusCode, resp.Header, b); err != nil {
		h.t.Errorf("%v", err)
	}
	return apiAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}
