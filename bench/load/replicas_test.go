package main

import "testing"

// TestRequestsAlternateReplicas: with two URLs, each conversation's
// requests alternate between them, and the requests of one pass over
// the conversations are shared evenly.
func TestRequestsAlternateReplicas(t *testing.T) {
	for _, k := range []int{0, 1, 3, 4, 1000} {
		d := &driver{o: options{conversations: k}, urls: []string{"a", "b"}}
		last := map[string]string{}
		count := map[string]int{}
		const n = 4000
		for i := uint64(1); i <= n; i++ {
			u, c := d.url(i), d.conv(i)
			count[u]++
			if c != "" && last[c] == u {
				t.Fatalf("conversations %d: request %d (%s) went to %s again, want the other replica", k, i, c, u)
			}
			last[c] = u
		}
		if count["a"] < n/2-k || count["b"] < n/2-k {
			t.Errorf("conversations %d: got %v, want about %d each", k, count, n/2)
		}
	}
}

// TestAffinityKeepsAConversationOnOneReplica: with -affinity, every
// request of a conversation goes to the same URL, and the conversations
// are shared evenly.
func TestAffinityKeepsAConversationOnOneReplica(t *testing.T) {
	for _, k := range []int{2, 3, 1000} {
		d := &driver{o: options{conversations: k, affinity: true}, urls: []string{"a", "b"}}
		first := map[string]string{}
		count := map[string]int{}
		for i := uint64(1); i <= 4000; i++ {
			u, c := d.url(i), d.conv(i)
			if f, ok := first[c]; ok && f != u {
				t.Fatalf("conversations %d: request %d (%s) went to %s, its first to %s", k, i, c, u, f)
			}
			if _, ok := first[c]; !ok {
				first[c] = u
				count[u]++
			}
		}
		if count["a"] < k/2 || count["b"] < k/2 {
			t.Errorf("conversations %d: %v conversations on each replica, want about %d", k, count, k/2)
		}
	}
}
