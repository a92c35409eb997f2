-- Version 5: search on PostgreSQL's full-text index, in place of a
-- posting row per term (recall_postings, about 60 rows and 120 index
-- entries a message, written in the turn's transaction).
--
-- A message row carries its search terms as a tsvector, written with the
-- row (one column, no other row): each lexeme is a term as search.Analyze
-- splits it (any language; no stemming, no stop words, as the Badger
-- store), and its single position holds the term's frequency in the
-- message (capped at 16383), which BM25 needs and to_tsvector's positions
-- would not give exactly (it keeps 256 positions a lexeme and clamps them
-- past 16383). created_at is the message's time, the ranking's tie-break.
-- Search finds candidates through the GIN index (tsv @@ query), reads the
-- query's lexemes and their frequencies out of each candidate's tsvector,
-- and ranks with search's BM25 over the conversations' docs and terms
-- counters, as before, so both stores rank alike.
--
-- The GIN index keeps fastupdate (PostgreSQL's default): an insert
-- appends its entries to the index's pending list (a turn of prose writes
-- 8 KB of WAL in all, against 98 KB with fastupdate off and 33 KB with
-- the postings). The list is merged into the index by the Store's merger,
-- off the commits (see merge.go), else by autovacuum or by the insert
-- that finds it past gin_pending_list_limit.
--
-- Citus: every table is keyed by tenant first and distributes on it
-- (create_distributed_table('recall_conversations', 'tenant'), then
-- recall_messages and recall_exchanges colocated with it); every statement
-- of a request names one tenant, so a turn's transaction stays on one
-- shard. With btree_gin the index leads with tenant, so a search reads
-- only its tenant's entries; without the extension (a server where it
-- cannot be created) the index is on tsv alone and a search's matches in
-- other tenants are filtered out by the heap.
ALTER TABLE recall_messages ADD COLUMN created_at bigint NOT NULL DEFAULT 0;
ALTER TABLE recall_messages ADD COLUMN tsv tsvector NOT NULL DEFAULT ''::tsvector;

UPDATE recall_messages m SET created_at = p.created_at, tsv = p.tsv
FROM (SELECT tenant, conversation, seq, min(created_at) AS created_at,
        string_agg(quote_literal(term) || ':' || least(tf, 16383), ' ')::tsvector AS tsv
      FROM recall_postings GROUP BY tenant, conversation, seq) p
WHERE m.tenant = p.tenant AND m.conversation = p.conversation AND m.seq = p.seq;

DROP TABLE recall_postings;

DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS btree_gin;
    CREATE INDEX recall_messages_search ON recall_messages USING gin (tenant, tsv);
EXCEPTION WHEN OTHERS THEN
    CREATE INDEX recall_messages_search ON recall_messages USING gin (tsv);
END
$$;
