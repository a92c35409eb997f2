package main

import (
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/retention"
)

// policies are the retention rules of the tenants in set. A pass-through
// tenant's conversations live in one namespace per credential, which no
// index lists: its rules are not applied (see README).
func policies(set *config.Set) []retention.Policy {
	var out []retention.Policy
	for _, t := range set.Tenants() {
		h := t.History
		if t.PassThrough || (h.RetentionTTL <= 0 && h.MaxConversations <= 0) {
			continue
		}
		out = append(out, retention.Policy{Tenant: t.ID, Namespace: t.ID, TTL: time.Duration(h.RetentionTTL), Max: h.MaxConversations})
	}
	return out
}
