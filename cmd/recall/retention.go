package main

import (
	"time"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/retention"
)

// policies are the retention rules of the tenants in set. A pass-through
// tenant's conversations live in one namespace per credential: its rules
// apply to each of them (max_conversations per credential).
func policies(set *config.Set) []retention.Policy {
	var out []retention.Policy
	for _, t := range set.Tenants() {
		h := t.History
		if h.RetentionTTL <= 0 && h.MaxConversations <= 0 {
			continue
		}
		p := retention.Policy{Tenant: t.ID, Namespace: t.ID, TTL: time.Duration(h.RetentionTTL), Max: h.MaxConversations}
		if t.PassThrough {
			p.Namespace, p.NamespacePrefix = "", auth.NamespacePrefix(t.ID)
		}
		out = append(out, p)
	}
	return out
}
