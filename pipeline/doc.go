// Package pipeline holds the stages of Recall's exchange that need
// neither HTTP nor the server: what every recorded exchange of every
// protocol pair, and every round of the history tools, does between the
// decoded request and the committed turn.
//
//	decode  a decoded request's turn in its stored form  (TurnOf)
//	plan    whether the plan found a side call            (SideOf)
//	        and what it decided, read by the commit        (Decision)
//	encode  the planned context in the upstream's protocol (EncodePlan, InPlace)
//	pump    an upstream's event stream, event by event     (Pump, UpstreamEvent)
//	commit  the answer's messages and the store's write    (AnswerMessages, Decision.Commit)
//	        an upstream's error status as the client's     (UpstreamStatus)
//	rounds  the history tools' rounds: what is stored,    (StoredRound, WithLeadingText, HasContent)
//	        what the client sees                          (RoundFilter, AnswerDeltas)
//
// Package proxy admits the request (reads the body, authenticates the
// caller), decodes it with the client's protocol, runs the plan, sends
// the upstream call and writes the client's answer; it calls these stages
// in that order (proxy/pipeline.go names each). A Decision is the one
// part of an exchange another goroutine reads: the commit, which may
// outlive its handler past its deadline, reads the decision and writes
// only the change it was given.
//
// It knows nothing of fasthttp, tenants, metrics or logs: what a stage
// needs of them (the store, the token counter) comes in as arguments.
package pipeline
