package jsonscan

import "strings"

// TypeName names the type of the JSON value raw starts with (white space
// before it skipped) as OpenAI's errors do ("expected a string, but got
// an integer instead"): "a string", "an integer", "a decimal" (a number
// with a fraction or an exponent), "a boolean", "an array", "an object",
// or "null", which also names an absent value (raw empty). raw must be
// valid JSON: it is a gjson.Result's Raw, or a value a Scanner consumed.
func TypeName(raw string) string {
	raw = strings.TrimLeft(raw, " \t\n\r")
	if raw == "" {
		return "null"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if strings.ContainsAny(raw, ".eE") {
		return "a decimal"
	}
	return "an integer"
}
