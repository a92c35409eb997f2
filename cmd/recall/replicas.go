package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/fleet"
	"github.com/recallproxy/recall/proxy"
)

// replicaFleet is this replica's membership in the fleet of replicas on
// its PostgreSQL store (replica_url), nil without one.
type replicaFleet struct{ *fleet.Fleet }

// joinFleet joins the replicas on st's database when replica_url is set
// (config checks that store_url is), and says so in the log; it returns
// nil when it is not.
func joinFleet(ctx context.Context, g config.Global, st *openedStore, log *slog.Logger) (*replicaFleet, error) {
	if g.ReplicaURL == "" || st.pool == nil {
		return nil, nil
	}
	f, err := fleet.Join(ctx, st.pool, fleet.Member{URL: strings.TrimSuffix(g.ReplicaURL, "/")}, fleet.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("replica forwarding: a conversation's requests go to its owner replica",
		"replica_id", f.ID(), "replica_url", g.ReplicaURL, "replicas", len(f.Members()))
	return &replicaFleet{f}, nil
}

// proxyFleet is r as the proxy's Config.Fleet: nil (no forwarding)
// without a fleet.
func (r *replicaFleet) proxyFleet() proxy.Fleet {
	if r == nil {
		return nil
	}
	return r.Fleet
}

// register exports the live replicas r sees, itself included, as the
// gauge recall_replicas (none without a fleet).
func (r *replicaFleet) register(reg prometheus.Registerer) {
	if r == nil {
		return
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "recall_replicas",
		Help: "Live replicas on the PostgreSQL store that this one forwards conversations' requests among, itself included (replica_url)."},
		func() float64 { return float64(len(r.Members())) }))
}

// leaveFleet leaves the fleet (once: later calls wait for the first).
func leaveFleet(r *replicaFleet, log *slog.Logger) {
	if err := r.Close(); err != nil {
		log.Warn("replica forwarding: this replica's row was not deleted: the others drop it within seconds", "error", err.Error())
	}
}
