package tracing

// Operation names (gen_ai.operation.name) and the spans' names. An
// exchange's span is named "chat {gen_ai.request.model}" ("chat" when
// the model is not known), a memory operation's "{operation}
// {recall.memory.kind}".
const (
	OperationChat         = "chat"
	OperationUpdateMemory = "update_memory"
	OperationDeleteMemory = "delete_memory"

	// SpanLoad is the exchange's plan: the conversation loaded and
	// curated to its budget.
	SpanLoad = "recall.load"
	// SpanUpstream is one upstream call of the exchange.
	SpanUpstream = "recall.upstream"
	// SpanCommit is the commit of the exchange's turn.
	SpanCommit = "recall.commit"
)

// Attributes of the OpenTelemetry semantic conventions (GenAI, HTTP,
// errors).
const (
	AttrOperationName   = "gen_ai.operation.name"
	AttrProviderName    = "gen_ai.provider.name"
	AttrRequestModel    = "gen_ai.request.model"
	AttrResponseModel   = "gen_ai.response.model"
	AttrFinishReasons   = "gen_ai.response.finish_reasons"
	AttrConversationID  = "gen_ai.conversation.id"
	AttrInputTokens     = "gen_ai.usage.input_tokens"
	AttrOutputTokens    = "gen_ai.usage.output_tokens"
	AttrCacheReadTokens = "gen_ai.usage.cache_read.input_tokens"
	AttrCompacted       = "gen_ai.conversation.compacted"
	AttrHTTPStatus      = "http.response.status_code"
	AttrErrorType       = "error.type"
)

// Recall's own attributes (history.ExchangeRecord's figures).
const (
	AttrTenant            = "recall.tenant"
	AttrExchangeID        = "recall.exchange.id"
	AttrExchangeKind      = "recall.exchange.kind"
	AttrExchangeStatus    = "recall.exchange.status"
	AttrIngress           = "recall.ingress"
	AttrStream            = "recall.stream"
	AttrThread            = "recall.thread"
	AttrThreadReason      = "recall.thread.reason"
	AttrBudget            = "recall.budget"
	AttrCalibration       = "recall.calibration"
	AttrEstimatedInput    = "recall.tokens.estimated_input"
	AttrCalibratedInput   = "recall.tokens.calibrated_input"
	AttrIncludedMessages  = "recall.messages.included"
	AttrNewMessages       = "recall.messages.new"
	AttrCommittedMessages = "recall.messages.committed"
	AttrDroppedTurns      = "recall.turns.dropped"
	AttrCutResults        = "recall.tool_results.cut"
	AttrRepairedCalls     = "recall.calls.repaired"
	AttrSummaryThrough    = "recall.summary.through"
	AttrSummaryTokens     = "recall.summary.tokens"
	AttrFirstByteMS       = "recall.upstream.first_byte_ms"
	AttrCommitFailed      = "recall.commit.failed"
	AttrMemoryKind        = "recall.memory.kind"
	AttrJobOutcome        = "recall.summary.outcome"
	AttrJobAttempt        = "recall.summary.attempt"
	AttrJobCalls          = "recall.summary.calls"
)
