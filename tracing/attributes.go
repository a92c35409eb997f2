package tracing

// Operation names (gen_ai.operation.name) and the spans' names. An
// exchange's span is named "chat {gen_ai.request.model}" ("chat" when
// the model is not known), a memory operation's "{operation}
// {recall.memory.kind}".
const (
	OperationChat         = "chat"
	OperationUpdateMemory = "update_memory"
	OperationDeleteMemory = "delete_memory"
	OperationSearchMemory = "search_memory"
	OperationExecuteTool  = "execute_tool"

	// SpanLoad is the conversation's load for the exchange's plan (the
	// whole plan when it failed before the conversation was read).
	SpanLoad = "recall.load"
	// SpanCurate is the plan's curation: the merge, the summary, what
	// fitted the budget.
	SpanCurate = "recall.curate"
	// SpanToolRound is one round of an exchange with history tools
	// offered: its upstream call, then the tools Recall ran on its
	// answer (execute_tool spans, a search's search_memory span).
	SpanToolRound = "recall.tool_round"
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
	// AttrCacheCreationTokens are the input tokens written to the
	// provider's prompt cache (AttrInputTokens counts them, as it counts
	// the cache reads).
	AttrCacheCreationTokens = "gen_ai.usage.cache_creation.input_tokens"
	AttrCompacted           = "gen_ai.conversation.compacted"
	AttrHTTPStatus          = "http.response.status_code"
	AttrErrorType           = "error.type"

	AttrToolName   = "gen_ai.tool.name"
	AttrToolType   = "gen_ai.tool.type"
	AttrToolCallID = "gen_ai.tool.call.id"

	AttrMemoryNamespace     = "gen_ai.memory.namespace"
	AttrMemoryScope         = "gen_ai.memory.scope"
	AttrMemorySearchResults = "gen_ai.memory.search.result.count"

	// The opt-in content attributes (CaptureContent): the messages sent
	// upstream and the answer, as JSON in the conventions' shape.
	AttrInputMessages  = "gen_ai.input.messages"
	AttrOutputMessages = "gen_ai.output.messages"
)

// MemoryProvider is the gen_ai.provider.name of Recall's memory
// operations: Recall is the memory's provider.
const MemoryProvider = "recall"

// An exchange's thread (recall.thread, DESIGN.md section 15): the
// conversation's main thread, an agent's side call (recall.thread.reason
// says which rule made it one) or a subagent's thread
// (recall.thread.name names it).
const (
	ThreadMain     = "main"
	ThreadSide     = "side"
	ThreadSubagent = "subagent"
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
	AttrThreadName        = "recall.thread.name"
	AttrKeptTurns         = "recall.turns.kept"
	AttrToolRound         = "recall.tool_round.index"
	AttrToolRuns          = "recall.tool_round.runs"
	AttrToolOutcome       = "recall.tool.outcome"
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
