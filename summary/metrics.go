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
		made: perTenantCounter("recall_summaries_total",
			"Summaries that landed."),
		failed: perTenantCounter("recall_summary_failures_total",
			"Summary job attempts that failed (each is retried with backoff)."),
		stale: perTenantCounter("recall_summaries_stale_total",
			"Summaries discarded because another landed first."),
		latency: perTenantHistogram("recall_summary_job_duration_seconds",
			"Time of a summary job that landed, from its start.",
			[]float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}),
		promptTokens: perTenantCounter("recall_summary_prompt_tokens_total",
			"Prompt tokens the summariser's upstream reported."),
		completionTokens: perTenantCounter("recall_summary_completion_tokens_total",
			"Completion tokens the summariser's upstream reported."),
		jobCalls: perTenantHistogram("recall_summary_job_calls",
			"Summariser calls of one summary job attempt (bounded by summary.max_calls_per_job).",
			[]float64{1, 2, 4, 8, 16, 32, 64, 128}),
		jobPromptTokens: perTenantHistogram("recall_summary_job_prompt_tokens",
			"Prompt tokens the summariser's upstream reported for one summary job attempt.",
			prometheus.ExponentialBuckets(1000, 4, 10)),
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

func perTenantCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"tenant"})
}

func perTenantHistogram(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"tenant"})
}
