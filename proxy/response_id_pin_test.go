package proxy_test

import (
	"testing"

	"github.com/tidwall/gjson"
)

// A Responses answer's id names the sequence numbers its commit gives
// it. When another writer appends to the conversation between the load
// and the commit, the commit fails (the client retries) rather than land
// elsewhere and leave the id naming other messages; the retry's id
// names its answer.
func TestResponseIDPinsItsCommit(t *testing.T) {
	h := newHarnessWithOneRacingWriter(t, "pin-1")
	body := `{"model":"gpt-4.1","input":"one"}`
	r := h.Post("/v1/responses", key, "pin-1", body)
	if r.Status != 500 || gjson.Get(r.Body, "error.code").Str != "history_write_failed" {
		t.Fatalf("commit moved by another writer: got %d %s, want 500 history_write_failed", r.Status, r.Body)
	}
	h.WaitDone("pin-1")
	r = h.Post("/v1/responses", key, "pin-1", body)
	if r.Status != 200 {
		t.Fatalf("retry: got %d %s", r.Status, r.Body)
	}
	h.WaitDone("pin-1")
	id := gjson.Get(r.Body, "id").Str
	if g := h.Get("/v1/responses/"+id, key); g.Status != 200 || gjson.Get(g.Body, "output.0.content.0.text").Str != "echo: one" {
		t.Errorf("GET %s: got %d %s, want the answer echo: one", id, g.Status, g.Body)
	}
}
