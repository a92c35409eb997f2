package responses

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestScanMembersReadsAsGJSON: of every event scanMembers reads in its
// pass, it reads the members readMembers reads (gjson's reading): the
// type and where it ends, and each member's Raw, Index, Type and, of a
// number, its value (Num, and Int as Event reads it); numbers of every spelling JSON allows included.
func TestScanMembersReadsAsGJSON(t *testing.T) {
	numbers := []string{"0", "7", "42", "999999999", "1000000000", "12345678901234567890", "-1", "-0", "1.0", "1.5", "1e0", "2E+1", "0.5e-3", "3.000"}
	var events []string
	for _, n := range numbers {
		events = append(events,
			`{"type":"response.output_text.delta","sequence_number":`+n+`,"item_id":"msg_1","output_index":`+n+`,"content_index":0,"delta":"Hi"}`,
			`{"output_index": `+n+` ,"type":"response.output_item.done","item":{"id":"msg_1","type":"message"},"sequence_number":`+n+`}`,
		)
	}
	events = append(events,
		`{"type":"response.output_text.delta","output_index":1,"output_index":2,"item_id":"a","item_id":"b"}`,
		`{"type":"response.output_item.added","output_index":"3","item":[1,{"a":[]}],"sequence_number":null}`,
		`{"type":"response.custom","output_index":true,"item_id":false,"item":"x"}`,
	)
	read := 0
	for _, ev := range events {
		got, ok := scanMembers([]byte(ev))
		if !ok {
			continue
		}
		read++
		want := readMembers([]byte(ev))
		if got.typ != want.typ || got.typEnd != want.typEnd {
			t.Errorf("%s: type %q ending %d, gjson %q ending %d", ev, got.typ, got.typEnd, want.typ, want.typEnd)
		}
		for name, pair := range map[string][2]gjson.Result{
			"sequence_number": {got.seq, want.seq},
			"output_index":    {got.index, want.index},
			"item_id":         {got.itemRef, want.itemRef},
			"item":            {got.item, want.item},
		} {
			g, w := pair[0], pair[1]
			// A string's Str is not read: Event reads a string's Raw.
			if g.Raw != w.Raw || g.Index != w.Index || g.Type != w.Type || g.Num != w.Num || g.Type == gjson.Number && g.Int() != w.Int() {
				t.Errorf("%s: %s is %q at %d (type %v, %v, %d), gjson %q at %d (type %v, %v, %d)",
					ev, name, g.Raw, g.Index, g.Type, g.Num, g.Int(), w.Raw, w.Index, w.Type, w.Num, w.Int())
			}
		}
	}
	if read < len(events)-1 {
		t.Errorf("scanMembers read %d of %d events in its pass", read, len(events))
	}
}
