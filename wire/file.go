package wire

import (
	"path"
	"strings"
)

// FileData returns the media type and base64 data of a File part carried
// in a data: URL, the media type read from the URL or, when it names
// none, from the filename's extension. ok is false for a file carried by
// URL or id.
func (p Part) FileData() (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(p.URL, "data:")
	if !ok {
		return "", "", false
	}
	mediaType, data, ok = strings.Cut(rest, ";base64,")
	if !ok {
		return "", "", false
	}
	if mediaType == "" {
		mediaType = MediaTypeOf(p.Name)
	}
	return mediaType, data, true
}

// DataURL is a data: URL holding base64 data of mediaType.
func DataURL(mediaType, data string) string {
	return "data:" + mediaType + ";base64," + data
}

// MediaTypeOf is the media type of a filename by its extension, for the
// documents models read; "" when the extension names none of them.
func MediaTypeOf(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".pdf":
		return "application/pdf"
	case ".txt":
		return "text/plain"
	case ".md":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	case ".html", ".htm":
		return "text/html"
	case ".json":
		return "application/json"
	}
	return ""
}

// FileError is a File part an upstream's protocol cannot carry, which
// Encode returns rather than leave the user's file out: the request is
// refused (a 400) before anything is stored or sent.
type FileError struct {
	// Target is the protocol that cannot carry the file.
	Target Protocol
	// Reason says what it cannot carry, as the client reads it.
	Reason string
}

func (e *FileError) Error() string { return "wire: " + e.Target.String() + ": " + e.Reason }

// OpenAIFile reports whether p's FileID names a file OpenAI holds: one
// that came in over chat completions or the Responses API, whose ids name
// the same files.
func OpenAIFile(p Part) bool {
	return p.Origin == ChatCompletions || p.Origin == Responses
}
