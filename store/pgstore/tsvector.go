package pgstore

import (
	"encoding/binary"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/recallproxy/recall/search"
)

// A message row carries its search terms as a tsvector: each lexeme a
// term as search.Analyze splits it, its one position the term's
// frequency (see migrations/0005_fts.sql). A commit sends them as
// postings values, which the store's connections encode straight from
// the analysis: in PostgreSQL's binary format, so that the server reads
// them without parsing text (the tsvector text input cost the server
// 13-16 µs a message, 0.05 ms of its CPU a turn against the binary input),
// and as a literal where a connection asks for
// text (the simple protocol).

// postings is one message's search terms, as a tsvector parameter.
// Analyze's terms are distinct and hold only letters and digits, so a
// lexeme needs no escaping and no NUL ends one early.
type postings struct{ terms []search.Posting }

// maxTF is the largest term frequency a tsvector holds: a lexeme's
// position, where the frequency is kept, is at most 16383.
const maxTF = 16383

// tf is a term's frequency as a position: at least 1, at most maxTF.
func tf(p search.Posting) uint16 { return uint16(max(1, min(p.TF, maxTF))) }

// postingsCodec is pgx's tsvector codec that also encodes postings.
type postingsCodec struct{ pgtype.TSVectorCodec }

func (c postingsCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(postings); !ok {
		return c.TSVectorCodec.PlanEncode(m, oid, format, value)
	}
	switch format {
	case pgtype.BinaryFormatCode:
		return encodePostingsBinary{}
	case pgtype.TextFormatCode:
		return encodePostingsText{}
	}
	return nil
}

// encodePostingsBinary writes tsvector's binary format (tsvectorrecv):
// the lexeme count, then each lexeme NUL-terminated, its position count
// and its positions (weight D: the top two bits clear).
type encodePostingsBinary struct{}

func (encodePostingsBinary) Encode(value any, buf []byte) ([]byte, error) {
	p := value.(postings)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(p.terms)))
	for _, t := range p.terms {
		buf = append(buf, t.Term...)
		buf = append(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, 1)
		buf = binary.BigEndian.AppendUint16(buf, tf(t))
	}
	return buf, nil
}

// encodePostingsText writes the tsvector literal: 'term':tf ...
type encodePostingsText struct{}

func (encodePostingsText) Encode(value any, buf []byte) ([]byte, error) {
	p := value.(postings)
	if len(p.terms) == 0 && buf == nil {
		return []byte{}, nil // the empty tsvector: a nil buffer is NULL
	}
	for i, t := range p.terms {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = append(buf, '\'')
		buf = append(buf, t.Term...)
		buf = append(buf, '\'', ':')
		buf = strconv.AppendUint(buf, uint64(tf(t)), 10)
	}
	return buf, nil
}

// registerPostings makes a connection's tsvector and tsvector[]
// parameters accept postings, and a parameter of unknown type (the
// simple protocol does not ask the server) that holds them a tsvector.
func registerPostings(m *pgtype.Map) {
	t := &pgtype.Type{Name: "tsvector", OID: pgtype.TSVectorOID, Codec: postingsCodec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_tsvector", OID: pgtype.TSVectorArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
	m.RegisterDefaultPgType(postings{}, "tsvector")
	m.RegisterDefaultPgType([]postings{}, "_tsvector")
}
