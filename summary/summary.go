// Package summary compacts conversations: it folds their oldest turns into
// a running summary, off the request path, and seals episodes.
//
// The proxy calls Manager.Trigger after a commit that leaves more than
// summary.trigger_turns unsummarised turns, or that the budget could not
// send whole; Trigger never blocks. A bounded pool of workers runs one job
// per conversation at a time. A job summarises every turn after the stored
// summary but the newest summary.keep_turns, from the previous summary
// plus exactly those turns (incremental), by one chat-completions call to
// the tenant's upstream (several, in chunks, when the material exceeds the
// summary model's window), and lands the result with a compare-and-set on
// the summary's covered-through (history.Change.Summary): a result made
// from a summary that was replaced meanwhile is discarded, and a chat
// commit is never failed by a summary landing. Failures are retried with
// backoff (1s, 2s, 4s, … capped at a minute); until a summary lands the
// proxy's curation falls back to the budget, so nothing is lost.
//
// Sealed episodes (an idle timeout, or End) are folded the same way, and
// the same call titles them.
//
// Jobs are not recorded: Start re-derives them from the stored state (the
// conversations whose unsummarised turns exceed the trigger, or whose
// newest sealed episode has no title yet), so a restart forgets nothing.
// Tenants without an upstream key (pass-through, or a tenant whose
// clients' keys go upstream) are the exception: their credential lives in
// memory only, so their jobs start again with their next request.
package summary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/uplink"
)

// ErrNotFound is returned by End and Summarize for a conversation that was
// never written (the conversation API answers 404).
var ErrNotFound = errors.New("summary: conversation not found")

// ErrDisabled is returned by End's fold and by Summarize when the tenant
// turned summaries off (summary.enabled: false).
var ErrDisabled = errors.New("summary: summaries are disabled for this tenant")

// ErrNoModel is returned by Summarize and End's fold for a conversation
// no model ever answered (its messages were imported) when the tenant sets
// no summary.model.
var ErrNoModel = errors.New("summary: no model to summarise with: set summary.model")

// Tenants supplies the current tenant set; config.Watcher implements it.
type Tenants interface {
	Current() *config.Set
}

// Config configures a Manager. Zero fields take the documented defaults.
type Config struct {
	// Store keeps the conversations (required). If it implements
	// history.Leaser, a job holds its history.LeaseSummary lease so a
	// fleet sharing the store makes each summary once.
	Store history.Store
	// Tenants supplies the tenants (required).
	Tenants Tenants
	// Client sends summariser requests. Default:
	// uplink.BufferingClient(maxAnswerBytes), the upstream link the
	// proxy's own calls take (its pool, idle handling and second
	// attempt on a connection the upstream closed unanswered).
	Client *fasthttp.Client
	// Counter counts tokens. Default: a new Counter.
	Counter *tokens.Counter
	// Logger receives a line per failed or discarded job. Default: discarded.
	Logger *slog.Logger
	// Registerer registers the summary metrics. Default: none registered.
	Registerer prometheus.Registerer
	// Workers is the number of jobs run at once. Default 2.
	Workers int
	// Queue bounds the jobs waiting for a worker; a trigger past it is
	// dropped (the next commit triggers again). Default 10000.
	Queue int
	// MaxAttempts bounds the tries of one job. Default 8.
	MaxAttempts int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// After waits between retries. Default time.After.
	After func(time.Duration) <-chan time.Time
	// OnJobDone, if set, is called after every job attempt, from the
	// worker. It must not block.
	OnJobDone func(JobDone)
	// OnExchange, if set, gets the exchange record (kind "summary") of
	// every summariser call, keyed by the conversation it summarises,
	// from the worker. It must not block. Default: no records.
	OnExchange func(history.Key, history.ExchangeRecord)
}

// Outcome is how a job attempt ended.
type Outcome string

// Job outcomes.
const (
	// Landed: a summary was stored.
	Landed Outcome = "landed"
	// Nothing: there was nothing to summarise.
	Nothing Outcome = "nothing"
	// Stale: the result was discarded, another summary landed meanwhile.
	Stale Outcome = "stale"
	// Failed: the attempt failed; Retry says whether it is retried.
	Failed Outcome = "failed"
	// Skipped: another process holds the job's lease.
	Skipped Outcome = "skipped"
)

// JobDone describes a finished job attempt.
type JobDone struct {
	Key     history.Key
	Outcome Outcome
	// Attempt counts from 1; Retry is the wait before the next attempt
	// (0: none).
	Attempt int
	Retry   time.Duration
	Err     error
	// Calls is the number of summariser calls the attempt made.
	Calls int
	// Start is when the attempt began.
	Start time.Time
}

// Manager runs summary jobs. Its methods are safe for concurrent use.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	client  *fasthttp.Client
	metrics *metrics
	queue   chan *job
	// instr counts instructions (Counter.Text), summaries summary
	// messages (summaryCount), prevs summaries as a transcript carries
	// them (Counter.Text).
	instr, summaries, prevs *textCounts

	mu     sync.Mutex
	jobs   map[history.Key]*job // waiting, queued or running
	closed bool
	// creds are the newest pass-through credentials by namespace, for End
	// and Summarize (which have none of their own): memory only, bounded.
	creds map[string]string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// job is one conversation's pending compaction.
type job struct {
	key    history.Key
	tenant string // the tenant id (Key.Tenant is a namespace)
	model  string // the triggering request's model
	// cred is the triggering request's credential for a pass-through
	// tenant: in memory only, never stored or logged.
	cred    string
	force   bool // the budget could not send the unsummarised turns
	attempt int
	running bool
	again   bool          // triggered while running: run once more
	done    chan struct{} // closed when the job leaves the map
}

// New returns a Manager for cfg; Start runs its workers.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Tenants == nil {
		return nil, errors.New("summary: config needs Store and Tenants")
	}
	if cfg.Client == nil {
		cfg.Client = uplink.BufferingClient(maxAnswerBytes)
	}
	if cfg.Counter == nil {
		cfg.Counter = &tokens.Counter{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 10000
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		cfg:       cfg,
		log:       cfg.Logger,
		client:    cfg.Client,
		metrics:   met,
		queue:     make(chan *job, cfg.Queue),
		instr:     newTextCounts(cfg.Counter.Text, maxInstructionCounts),
		summaries: newTextCounts(summaryCount(cfg.Counter), maxSummaryCounts),
		prevs:     newTextCounts(cfg.Counter.Text, maxSummaryCounts),
		jobs:      make(map[history.Key]*job),
		creds:     make(map[string]string),
		ctx:       ctx,
		cancel:    cancel,
	}, nil
}

// Start runs the workers and queues the jobs the stored state calls for
// (see the package doc). It returns once they are queued; the workers run
// until Close.
func (m *Manager) Start(ctx context.Context) error {
	for range m.cfg.Workers {
		m.wg.Add(1)
		go m.worker()
	}
	return m.rederive(ctx)
}

// Close stops the workers, abandoning queued jobs (Start re-derives them),
// and waits for running ones to return.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Trigger queues a compaction of key for tenant (an id of the current set),
// unless one is already waiting or running (a running one then runs once
// more). model is the triggering request's model; cred its credential,
// kept in memory for a pass-through tenant; force says the budget could
// not send every unsummarised turn (summarise even under the trigger).
// It never blocks.
func (m *Manager) Trigger(tenant string, key history.Key, model, cred string, force bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if cred != "" {
		if len(m.creds) >= maxCreds {
			clear(m.creds)
		}
		m.creds[key.Tenant] = cred
	}
	if j := m.jobs[key]; j != nil {
		j.force = j.force || force
		if model != "" {
			j.model = model
		}
		if cred != "" {
			j.cred = cred
		}
		if j.running {
			j.again = true
		}
		return
	}
	j := &job{key: key, tenant: tenant, model: model, cred: cred, force: force, done: make(chan struct{})}
	select {
	case m.queue <- j:
		m.jobs[key] = j
	default:
		m.log.Warn("summary queue full, job dropped", "tenant", tenant, "conversation", key.Conversation)
	}
}

// Pending returns the number of jobs waiting or running.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.jobs)
}

// worker runs queued jobs until Close.
func (m *Manager) worker() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case j := <-m.queue:
			m.mu.Lock()
			if m.jobs[j.key] != j || j.running {
				m.mu.Unlock()
				continue // taken over by a synchronous call
			}
			j.running = true
			j.attempt++
			md := mode{force: j.force, model: j.model, cred: j.cred}
			j.force = false
			m.mu.Unlock()
			m.runQueued(j, md)
		}
	}
}

// runQueued runs one attempt of a queued job and decides what follows: a
// retry after a backoff, a rerun, or the end.
func (m *Manager) runQueued(j *job, md mode) {
	start := m.cfg.Now()
	_, out, calls, err := m.run(m.ctx, j, md)
	var wait time.Duration
	m.mu.Lock()
	attempt := j.attempt // j may run again on another worker once unlocked
	j.running = false
	switch {
	case out == Failed && j.attempt < m.cfg.MaxAttempts && m.ctx.Err() == nil:
		wait = backoff(j.attempt)
		j.force = j.force || md.force
	case j.again && m.ctx.Err() == nil:
		j.again, j.attempt = false, 0
		m.requeueLocked(j)
	default:
		delete(m.jobs, j.key)
		close(j.done)
	}
	m.mu.Unlock()
	if out == Failed && m.ctx.Err() == nil { // not a job cut short by Close
		m.log.Error("summary failed", "tenant", j.tenant, "conversation", j.key.Conversation,
			"attempt", attempt, "retry_in", wait.String(), "error", err)
	}
	if m.cfg.OnJobDone != nil {
		m.cfg.OnJobDone(JobDone{Key: j.key, Outcome: out, Attempt: attempt, Retry: wait, Err: err, Calls: calls, Start: start})
	}
	if wait > 0 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			select {
			case <-m.cfg.After(wait):
			case <-m.ctx.Done():
				return
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.jobs[j.key] == j && !j.running {
				m.requeueLocked(j)
			}
		}()
	}
}

// requeueLocked puts j back on the queue; m.mu is held.
func (m *Manager) requeueLocked(j *job) {
	select {
	case m.queue <- j:
	default:
		delete(m.jobs, j.key)
		close(j.done)
	}
}

// backoff is the wait after the attempt-th failure: 1s, 2s, 4s, … capped
// at a minute.
func backoff(attempt int) time.Duration {
	d := time.Second << min(attempt-1, 6)
	return min(d, time.Minute)
}

// Summarize compacts key now, whatever the trigger (all turns after the
// summary but the newest summary.keep_turns), and waits for it, bounded by
// ctx; a job already running for key is waited for first. For a
// pass-through tenant without an upstream key it uses the credential of
// the conversation's namespace last seen by Trigger (memory only): after a
// restart, until the next chat request, the call fails. It answers the
// conversation's metadata as it stands afterwards (Meta.Summary is the
// summary state). ErrNotFound for a conversation never written;
// ErrDisabled when the tenant turned summaries off.
func (m *Manager) Summarize(ctx context.Context, key history.Key) (history.Meta, error) {
	return m.now(ctx, key, mode{force: true, explicit: true})
}

// Compact compacts every turn of key now, the newest keep_turns too, and
// waits for it, bounded by ctx: the Responses API's
// POST /v1/responses/compact, whose answer stands in for the client's
// whole window. turn is the request's change, planned but not committed
// (its new messages with their Seq, its Version; zero: none): its
// messages are summarised with the stored ones, and it is committed with
// the summary in one change, so that a failed compaction commits
// nothing. model and cred are the request's (cred the client's key when
// the tenant passes it upstream, held in memory only); they stand for
// the job's, as Trigger's do. It answers the metadata afterwards:
// Meta.Summary covers every turn but one ending on tool calls still
// waiting for their results, or is nil when there was nothing to
// summarise. A turn planned from another version than the stored one
// fails with history.ErrConflict (wrapped); other errors as Summarize's.
func (m *Manager) Compact(ctx context.Context, key history.Key, model, cred string, turn history.Change) (history.Meta, error) {
	md := mode{force: true, explicit: true, all: true, model: model, cred: cred}
	if len(turn.Append) > 0 || turn.Supersede != nil {
		md.turn = &turn
	}
	return m.now(ctx, key, md)
}

// End seals key's open episode now, folds it into the summary with a title
// and answers the resulting metadata (Status ended, the episode in
// Meta.Episodes). ErrNotFound for a conversation never written. If the fold
// fails (the upstream is down), End still answers the sealed state with no
// error and the fold is retried in the background; with summaries off it
// only seals.
func (m *Manager) End(ctx context.Context, key history.Key) (history.Meta, error) {
	meta, err := m.seal(ctx, key)
	if err != nil {
		return meta, err
	}
	t, ok := m.tenant(key)
	if !ok || !t.Summary.Enabled {
		return meta, nil
	}
	after, err := m.now(ctx, key, mode{explicit: true})
	if err != nil {
		m.Trigger(t.ID, key, "", "", false)
		return meta, nil
	}
	return after, nil
}

// seal commits a seal of key's open episode.
func (m *Manager) seal(ctx context.Context, key history.Key) (history.Meta, error) {
	for range 4 {
		snap, err := m.cfg.Store.Load(ctx, key, metaOnly)
		if err != nil {
			return history.Meta{}, err
		}
		if snap.Meta.Version == 0 {
			return history.Meta{}, ErrNotFound
		}
		meta, err := m.cfg.Store.Commit(ctx, key, history.Change{Version: snap.Meta.Version, Seal: true, Now: m.cfg.Now().UnixNano()})
		if errors.Is(err, history.ErrConflict) {
			continue
		}
		return meta, err
	}
	return history.Meta{}, history.ErrConflict
}

// now runs a compaction of key synchronously, taking the conversation's
// job slot.
func (m *Manager) now(ctx context.Context, key history.Key, md mode) (history.Meta, error) {
	t, ok := m.tenant(key)
	if !ok {
		return history.Meta{}, ErrNotFound
	}
	if !t.Summary.Enabled {
		return history.Meta{}, ErrDisabled
	}
	j := &job{key: key, tenant: t.ID, running: true, done: make(chan struct{})}
	for {
		m.mu.Lock()
		prev := m.jobs[key]
		if prev == nil || !prev.running {
			if prev != nil {
				// Take over a waiting job: its settings, and its place.
				j.model, j.cred = prev.model, prev.cred
				close(prev.done)
			}
			if j.cred == "" {
				j.cred = m.creds[key.Tenant]
			}
			m.jobs[key] = j
			if md.model == "" {
				md.model = j.model
			}
			if md.cred == "" {
				md.cred = j.cred
			}
			m.mu.Unlock()
			break
		}
		m.mu.Unlock()
		select {
		case <-prev.done:
		case <-ctx.Done():
			return history.Meta{}, ctx.Err()
		}
	}
	defer func() {
		m.mu.Lock()
		delete(m.jobs, key)
		close(j.done)
		if j.again && !m.closed {
			// Turns committed meanwhile may call for another compaction.
			next := &job{key: key, tenant: j.tenant, model: j.model, cred: j.cred, done: make(chan struct{})}
			select {
			case m.queue <- next:
				m.jobs[key] = next
			default:
			}
		}
		m.mu.Unlock()
	}()
	meta, out, calls, err := m.run(ctx, j, md)
	if m.cfg.OnJobDone != nil {
		m.cfg.OnJobDone(JobDone{Key: key, Outcome: out, Attempt: 1, Err: err, Calls: calls})
	}
	return meta, err
}

// tenant returns the configured tenant a key's namespace belongs to: the
// tenant of that id, or the pass-through tenant.
func (m *Manager) tenant(key history.Key) (*config.Tenant, bool) {
	set := m.cfg.Tenants.Current()
	if t, ok := set.Tenant(key.Tenant); ok && !t.PassThrough {
		return t, true
	}
	if set.PassThrough() {
		return set.Tenant(config.DefaultTenantID)
	}
	return nil, false
}

// rederive queues the jobs the stored state calls for, tenant by tenant,
// page by page.
func (m *Manager) rederive(ctx context.Context) error {
	var errs []error
	for _, t := range m.cfg.Tenants.Current().Tenants() {
		if t.PassThrough || !t.Summary.Enabled || t.Upstream.PassesClientKey() {
			continue // no credential until a client's request brings one
		}
		keep := func(meta *history.Meta) bool { return needsJob(meta, t.Summary.TriggerTurns) }
		after := ""
		for {
			page, more, err := m.cfg.Store.List(ctx, t.ID, history.ListQuery{Limit: 100, After: after, Keep: keep})
			if err != nil {
				errs = append(errs, fmt.Errorf("summary: list %s: %w", t.ID, err))
				break
			}
			for _, e := range page {
				if needsJob(&e.Meta, t.Summary.TriggerTurns) {
					m.Trigger(t.ID, history.Key{Tenant: t.ID, Conversation: e.Conversation}, e.Meta.Model, "", false)
				}
			}
			if !more || len(page) == 0 {
				break
			}
			after = page[len(page)-1].Conversation
		}
	}
	return errors.Join(errs...)
}

// needsJob reports whether a conversation's stored state calls for a job:
// more unsummarised turns than trigger, or a sealed episode not yet
// folded.
func needsJob(meta *history.Meta, trigger int) bool {
	summarised := 0
	var through uint64
	if s := meta.Summary; s != nil {
		summarised, through = s.Turns, s.Through
	}
	if meta.Turns-summarised > trigger {
		return true
	}
	if n := len(meta.Episodes); n > 0 {
		ep := meta.Episodes[n-1]
		return ep.Title == "" && ep.To > through
	}
	return false
}

// maxCreds bounds the remembered pass-through credentials.
const maxCreds = 10000

// metaOnly loads the metadata and no message.
var metaOnly = history.Query{After: ^uint64(0)}
