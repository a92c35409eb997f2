// Package retention expires conversations in the background: a tenant's
// retention_ttl removes conversations untouched that long, and its
// max_conversations removes the least recently used beyond the cap. Each
// pass is bounded in work (at most Batch removals per tenant and rule),
// reads the store's activity index rather than scanning, and runs once
// per fleet when the store is shared (history.Leaser).
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallproxy/recall/history"
)

// Policy is one namespace's retention rules.
type Policy struct {
	// Tenant labels the metrics (a configured tenant id).
	Tenant string
	// Namespace is the history namespace the rules apply to
	// (history.Key.Tenant).
	Namespace string
	// NamespacePrefix, if set instead of Namespace, applies the rules to
	// every namespace that starts with it, each on its own (a
	// pass-through tenant keeps one namespace per client credential),
	// found through Store.Namespaces.
	NamespacePrefix string
	// TTL removes conversations not updated for this long; 0: never.
	TTL time.Duration
	// Max removes the least recently used conversations beyond this
	// many; 0: unlimited.
	Max int
}

// Config configures a Retention. Zero fields take the documented defaults.
type Config struct {
	// Store keeps the conversations (required).
	Store history.Store
	// Policies returns the current rules (required); it is called once per
	// pass, so a configuration reload applies at the next pass.
	Policies func() []Policy
	// Leaser, if set, makes a pass on a namespace run in one process of a
	// fleet at a time (its history.LeaseRetention lease). Default: the
	// Store, if it implements history.Leaser.
	Leaser history.Leaser
	// Lock serialises a removal with chat requests on the same
	// conversation. Default: no locking.
	Lock func(ctx context.Context, k history.Key) (release func(), err error)
	// Batch bounds the removals per namespace and rule in one pass.
	// Default 100.
	Batch int
	// Every is the time between passes of Run. Default 1m.
	Every time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives failures and a line per pass that removed anything.
	// Default: discarded.
	Logger *slog.Logger
	// Registerer, if set, receives the metrics.
	Registerer prometheus.Registerer
}

// Retention removes expired conversations.
type Retention struct {
	cfg     Config
	removed *prometheus.CounterVec
	passes  prometheus.Counter
	failed  prometheus.Counter
}

// New returns a Retention for cfg.
func New(cfg Config) (*Retention, error) {
	if cfg.Store == nil || cfg.Policies == nil {
		return nil, errors.New("retention: config needs Store and Policies")
	}
	if cfg.Leaser == nil {
		cfg.Leaser, _ = cfg.Store.(history.Leaser)
	}
	if cfg.Lock == nil {
		cfg.Lock = func(context.Context, history.Key) (func(), error) { return func() {}, nil }
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Retention{
		cfg: cfg,
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_retention_removed_total",
			Help: "Conversations removed by retention, by tenant and reason (ttl, max_conversations)."}, []string{"tenant", "reason"}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "recall_retention_passes_total",
			Help: "Retention passes run."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "recall_retention_failures_total",
			Help: "Retention passes that failed on a namespace (retried at the next pass)."}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{r.removed, r.passes, r.failed} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// Removed is the counter of conversations removed for tenant by reason
// ("ttl", "max_conversations").
func (r *Retention) Removed(tenant, reason string) prometheus.Counter {
	return r.removed.WithLabelValues(tenant, reason)
}

// Result is what one pass removed.
type Result struct {
	// Expired were untouched longer than their TTL; Capped were beyond
	// their namespace's cap.
	Expired, Capped int
}

// Run runs a pass every Every until ctx ends.
func (r *Retention) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Every)
	defer t.Stop()
	for {
		r.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass runs one bounded pass over every policy and returns what it
// removed. A failure on one namespace is logged and counted, and does not
// stop the others.
func (r *Retention) Pass(ctx context.Context) Result {
	r.passes.Inc()
	var total Result
	for _, p := range r.cfg.Policies() {
		if p.TTL <= 0 && p.Max <= 0 {
			continue
		}
		res, err := r.policy(ctx, p)
		total.Expired += res.Expired
		total.Capped += res.Capped
		if err != nil {
			r.failed.Inc()
			r.cfg.Logger.Error("retention failed", "tenant", p.Tenant, "error", err)
		}
		if res.Expired+res.Capped > 0 {
			r.cfg.Logger.Info("retention removed conversations", "tenant", p.Tenant, "expired", res.Expired, "capped", res.Capped)
		}
	}
	return total
}

// policy applies p to its namespace, or to each namespace under its
// prefix, a page of them at a time; a failed namespace does not stop the
// others.
func (r *Retention) policy(ctx context.Context, p Policy) (Result, error) {
	if p.NamespacePrefix == "" {
		return r.namespace(ctx, p)
	}
	var total Result
	var errs []error
	after := ""
	for {
		page, err := r.cfg.Store.Namespaces(ctx, p.NamespacePrefix, after, r.cfg.Batch)
		if err != nil {
			return total, errors.Join(append(errs, err)...)
		}
		for _, ns := range page {
			one := p
			one.Namespace, one.NamespacePrefix = ns, ""
			res, err := r.namespace(ctx, one)
			total.Expired += res.Expired
			total.Capped += res.Capped
			if err != nil {
				errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
			}
		}
		if len(page) < r.cfg.Batch {
			return total, errors.Join(errs...)
		}
		after = page[len(page)-1]
	}
}

func (r *Retention) namespace(ctx context.Context, p Policy) (Result, error) {
	var res Result
	if r.cfg.Leaser != nil {
		release, ok, err := r.cfg.Leaser.TryAcquire(ctx, history.LeaseName(history.LeaseRetention, history.Key{Tenant: p.Namespace}))
		if err != nil || !ok {
			return res, err // another process is on it
		}
		defer release()
	}
	if p.TTL > 0 {
		before := r.cfg.Now().Add(-p.TTL).UnixNano()
		page, _, err := r.cfg.Store.List(ctx, p.Namespace, history.ListQuery{Limit: r.cfg.Batch, Oldest: true, UpdatedBefore: before})
		if err != nil {
			return res, err
		}
		for _, e := range page {
			ok, err := r.remove(ctx, history.Key{Tenant: p.Namespace, Conversation: e.Conversation},
				func(m *history.Meta) bool { return m.UpdatedAt < before })
			if err != nil {
				return res, err
			}
			if ok {
				res.Expired++
				r.removed.WithLabelValues(p.Tenant, "ttl").Inc()
			}
		}
	}
	if p.Max > 0 {
		// Newest first, past the newest Max: those beyond the cap. If
		// there are more than a batch of them, the batch to remove now is
		// the least recently used, read from the other end.
		page, more, err := r.cfg.Store.List(ctx, p.Namespace, history.ListQuery{Limit: r.cfg.Batch, Skip: p.Max})
		if err != nil {
			return res, err
		}
		if more {
			if page, _, err = r.cfg.Store.List(ctx, p.Namespace, history.ListQuery{Limit: r.cfg.Batch, Oldest: true}); err != nil {
				return res, err
			}
		}
		for _, e := range page {
			// Still the conversation listed: not written since, nor
			// deleted and made again under the same id.
			updated, inc := e.Meta.UpdatedAt, e.Meta.Incarnation
			ok, err := r.remove(ctx, history.Key{Tenant: p.Namespace, Conversation: e.Conversation},
				func(m *history.Meta) bool { return m.UpdatedAt <= updated && m.Incarnation == inc })
			if err != nil {
				return res, err
			}
			if ok {
				res.Capped++
				r.removed.WithLabelValues(p.Tenant, "max_conversations").Inc()
			}
		}
	}
	return res, nil
}

// remove deletes k under its lock if it still qualifies: a conversation
// written since it was listed is kept.
func (r *Retention) remove(ctx context.Context, k history.Key, still func(*history.Meta) bool) (bool, error) {
	release, err := r.cfg.Lock(ctx, k)
	if err != nil {
		return false, err
	}
	defer release()
	snap, err := r.cfg.Store.Load(ctx, k, history.Query{})
	if err != nil {
		return false, err
	}
	if snap.Meta.Version == 0 || !still(&snap.Meta) {
		return false, nil
	}
	return true, r.cfg.Store.Delete(ctx, k)
}
