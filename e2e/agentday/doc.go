// Package agentday runs real coding agents (the npm packages pinned in
// e2e/agents: Claude Code, Codex CLI, opencode, GitHub Copilot CLI, Qwen
// Code, Pi, Kilo, Gemini CLI) offline against the real cmd/recall binary
// in front of the strict fake upstream (bench/fakeupstream): two
// processes per agent (TestAgents), Codex over its WebSocket
// (TestCodexWebSocket), and a working day of processes
// (TestAgentWorkingDay: by default the short day of four agents,
// RECALL_AGENT_DAY=short or long for every agent). It is a package of its
// own so that its minutes under go test -race ./... count against a
// timeout of their own, not the e2e package's. -short skips it all.
package agentday
