package responses

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
)

// inputItemTypes are the item types a request's input may carry, as
// OpenAI's Responses API documents them (item_reference aside: Recall
// keeps the state an id would name, and refuses it elsewhere).
var inputItemTypes = []string{
	typeMessage, typeFunctionCall, typeFunctionCallOutput, typeReasoning,
	"custom_tool_call", "custom_tool_call_output",
	"file_search_call", "web_search_call", "computer_call", "computer_call_output",
	"image_generation_call", "code_interpreter_call", "local_shell_call", "local_shell_call_output",
	"mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call", "compaction",
}

// messagePartTypes are the content part types a message item may carry.
var messagePartTypes = []string{partInputText, partOutputText, partInputImage, partInputFile, partRefusal}

// CheckStorable refuses an item (already checked as a request's input
// item, at param) that no later request could send, so that storing it
// through the Conversations API would fail every later request on the
// conversation: an item or content part of a type the Responses API does
// not take as input, or a reasoning item without its encrypted_content
// (Recall's upstream keeps no state: an id alone names nothing there).
// The error is in OpenAI's shape.
func CheckStorable(param string, raw []byte) error {
	item := parse(raw)
	typ := itemType(item)
	if !slices.Contains(inputItemTypes, typ) {
		return apierr.InvalidValue(param+".type", "Invalid value: '"+typ+"'. Supported values are: "+quoteList(inputItemTypes)+".")
	}
	switch typ {
	case typeReasoning:
		if e := item.Get("encrypted_content"); e.Type != gjson.String || e.Str == "" {
			return apierr.InvalidValue(param+".encrypted_content", "Invalid '"+param+"': a reasoning item is stored only with its encrypted_content, which every later request sends back (the upstream keeps no state of its own).")
		}
	case typeMessage:
		c := item.Get("content")
		if !c.IsArray() {
			return nil // a string
		}
		var err error
		j := 0
		c.ForEach(func(_, p gjson.Result) bool {
			pp := param + ".content[" + strconv.Itoa(j) + "]"
			j++
			if t := p.Get("type").Str; !slices.Contains(messagePartTypes, t) {
				err = apierr.InvalidValue(pp+".type", "Invalid value: '"+t+"'. Supported values are: "+quoteList(messagePartTypes)+".")
			}
			return err == nil
		})
		return err
	}
	return nil
}

// quoteList writes vals as 'a', 'b' and 'c'.
func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
