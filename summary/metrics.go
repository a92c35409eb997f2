package summary

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the summary metrics, per tenant (ids from configuration).
type metrics struct {
	made, failed, stale            *prometheus.CounterVec
	latency                        *prometheus.HistogramVec
	promptTokens, completionTokens *prometheus.CounterVec
	// jobCalls and jobPromptTokens are per job attempt: a job's cost is
	// linear in what it covers, and these show it.
	jobCalls, jobPromptTokens *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		made: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_summaries_total",
			Help: "Summaries that landed."}, []string{"tenant"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_summary_failures_total",
			Help: "Summary job attempts that failed (each is retried with backoff)."}, []string{"tenant"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_summaries_stale_total",
			Help: "Summaries discarded because another landed first."}, []string{"tenant"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "recall_summary_job_duration_seconds",
			Help:    "Time of a summary job that landed, from its start.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, []string{"tenant"}),
		promptTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_summary_prompt_tokens_total",
			Help: "Prompt tokens the summariser's upstream reported."}, []string{"tenant"}),
		completionTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_summary_completion_tokens_total",
			Help: "Completion tokens the summariser's upstream reported."}, []string{"tenant"}),
		jobCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "recall_summary_job_calls",
			Help:    "Summariser calls of one summary job attempt (bounded by summary.max_calls_per_job).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}, []string{"tenant"}),
		jobPromptTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "recall_summary_job_prompt_tokens",
			Help:    "Prompt tokens the summariser's upstream reported for one summary job attempt.",
			Buckets: prometheus.ExponentialBuckets(1000, 4, 10)}, []string{"tenant"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.made, m.failed, m.stale, m.latency, m.promptTokens, m.completionTokens, m.jobCalls, m.jobPromptTokens} {
			if err := reg.Register(c); err != nil {
				return nil, errors.Join(errors.New("summary: register metrics"), err)
			}
		}
	}
	return m, nil
}
