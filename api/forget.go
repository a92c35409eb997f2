package api

import (
	"encoding/json"
	"errors"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
)

// ForgetRequest is the body of POST /conversations/{id}/forget.
type ForgetRequest struct {
	// Instruction is "oldest", "before:turn_N", "speaker:user|assistant|tool"
	// or "position:N" (see history.Forget).
	Instruction string `json:"instruction"`
	// Mode is "soft" (the default: kept, flagged forgotten, never sent) or
	// "hard" (erased).
	Mode string `json:"mode"`
}

// Forgotten is the answer to a forget: the sequence numbers it made
// inactive and the conversation after it.
type Forgotten struct {
	Object       string  `json:"object"`
	Mode         string  `json:"mode"`
	Forgotten    []int64 `json:"forgotten"`
	Conversation Detail  `json:"conversation"`
}

// forget serves POST /conversations/{id}/forget. The selection closes
// tool groups (a call goes with its results), so what is left stays a
// valid context; the change lands only on the version it was computed
// from.
func (c *call) forget() error {
	body, err := c.body()
	if err != nil {
		return err
	}
	if chat.CheckDepth(body) != nil {
		return apierr.BadJSON
	}
	var req ForgetRequest
	dec := json.NewDecoder(bytesReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return apierr.InvalidValue("", "Invalid body: expected {\"instruction\": \"oldest\" | \"before:turn_N\" | \"speaker:user|assistant|tool\" | \"position:N\", \"mode\": \"soft\" | \"hard\"}.")
	}
	switch req.Mode {
	case "":
		req.Mode = "soft"
	case "soft", "hard":
	default:
		return apierr.InvalidValue("mode", "Invalid 'mode': expected soft or hard.")
	}
	if _, err := history.Forget(nil, req.Instruction); err != nil {
		return apierr.InvalidValue("instruction", "Invalid 'instruction': expected oldest, before:turn_N, speaker:user|assistant|tool or position:N.")
	}

	release, err := c.lock()
	if err != nil {
		return err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		m, err := c.meta()
		if err != nil {
			return err
		}
		var active []history.Message
		err = c.h.cfg.Store.Messages(c.ctx, c.key, 0, false, func(msg history.Message) bool {
			active = append(active, copyMessage(msg))
			return true
		})
		if err != nil {
			return err
		}
		seqs, _ := history.Forget(active, req.Instruction) // checked above
		out := Forgotten{Object: "conversation.forget", Mode: req.Mode, Forgotten: make([]int64, len(seqs))}
		for i, s := range seqs {
			out.Forgotten[i] = int64(s)
		}
		plan := history.PlanForget(active, seqs, req.Mode == "hard")
		if plan != nil {
			m, err = c.h.cfg.Store.Commit(c.ctx, c.key, history.Change{Version: m.Version, Forget: plan, Now: c.now()})
			if errors.Is(err, history.ErrConflict) && attempt < 2 {
				continue // another process wrote between the read and the commit
			}
			if err != nil {
				return err
			}
		}
		out.Conversation = c.detail(&m)
		return c.reply(200, out)
	}
}
