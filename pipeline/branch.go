package pipeline

import "github.com/recallproxy/recall/wire"

// AsSent reports whether a request takes the pipeline's same-protocol
// branch: it records nothing (record unset: no conversation, or history
// off), its upstream speaks its client's protocol (in, up) and no history
// tools are to run, so its body goes upstream as it came, validated but
// neither decoded nor planned. Every other request takes the stages in
// order.
func AsSent(in, up wire.Protocol, record, tools bool) bool {
	return !record && in == up && !tools
}
