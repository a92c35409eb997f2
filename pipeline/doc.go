// Package pipeline holds the stages of Recall's exchange that need
// neither HTTP nor the server: what every recorded exchange of every
// protocol pair, and every round of the history tools, does between the
// admitted request and the answer written.
//
//	branch  a request that records nothing, to an upstream of (AsSent)
//	        its own protocol, goes as it came
//	decode  a decoded request's turn in its stored form    (TurnOf)
//	plan    the lock, plan.Make, the decision              (Deps.Plan, Decision)
//	        whether the plan found a side call             (SideOf)
//	encode  the planned context in the upstream's protocol (EncodePlan, InPlace)
//	pump    an upstream's event stream, event by event     (Pump, UpstreamEvent)
//	        or its whole answer, read and parsed           (ParseAnswer, Decode, ReadLimited)
//	relay   a stream's goroutine: the pump's work under    (Relay, Bound)
//	        the idle timer and the deadline, flushed,
//	        written to the connection, the upstream's
//	        body drained, how it ended reported
//	commit  the answer's messages, the store's write       (AnswerMessages, Deps.Commit,
//	        within the commit timeout, rebased              Decision.Commit, Deps.Seal)
//	render  the answer stamped (its id, times, stored form) (Stamp)
//	        and written to the client, the finishing event (Whole, Stream, EndStream)
//	        held until the commit: one rule for every      (CommitStream, CommitWhole,
//	        stream and whole answer, the tools' rounds'     Committer)
//	        too
//	        an upstream's error status as the client's     (UpstreamStatus)
//	rounds  the history tools' rounds: their state, what   (Rounds, Rounds.Step)
//	        a round's answer leads to (Recall's calls run,
//	        the next round, the client's calls, the limit)
//	        one round's answer read and shown              (ReadRound)
//	        what is stored, what the client sees           (StoredRound, ToolTurn.Finish,
//	                                                        RoundFilter, AnswerDeltas)
//	        each round's times and record                  (Round, RoundRecords)
//
// An exchange's state is in three parts (state.go): what the plan
// decided (Decision: made once, the one part another goroutine reads;
// the commit, which may outlive its handler past its deadline, reads the
// decision and writes only the change it was given), what its record
// reports (Record) and what it owns until it ends (Owned).
//
// Package proxy admits the request (reads the body, authenticates the
// caller, finds the conversation), decodes it with the client's
// protocol, makes the upstream calls (exchange.call, the one send of an
// exchange and of each tool round), starts a stream's relay goroutine
// (which runs Relay) and calls these stages in order (proxy/pipeline.go
// names each); it implements what the render stage writes to (Client,
// Writer) and the relay writes and reads (Body, Upstream) over fasthttp,
// and the Exchange the stage stamps and commits through. What the stages need of the server (store,
// lock, clock, commit timeout, metrics, log) comes in Deps, which proxy
// fills once; it knows nothing of fasthttp or tenants.
package pipeline
