-- Recall's PostgreSQL store, version 1. Every table is keyed by tenant
-- first, then conversation, so that it distributes by tenant on Citus
-- (or by its leading primary-key columns on a scale-out engine).

-- One row per conversation: the metadata record (history.MarshalMeta),
-- with the columns the store queries by, and the search statistics of
-- its message records (how many, and their length in terms).
CREATE TABLE recall_conversations (
    tenant       text   COLLATE "C" NOT NULL,
    conversation text   COLLATE "C" NOT NULL,
    version      bigint NOT NULL,
    summaries    int    NOT NULL, -- Meta.Summaries: with version, the head (history.Head)
    updated_at   bigint NOT NULL, -- Meta.UpdatedAt, Unix nanoseconds
    meta         bytea  NOT NULL,
    docs         bigint NOT NULL DEFAULT 0,
    terms        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, conversation)
);

-- List: a tenant's conversations by last activity.
CREATE INDEX recall_conversations_activity ON recall_conversations (tenant, updated_at, conversation);

-- Messages: append-only records by sequence number (the history codec,
-- as Badger keeps them). dl is the message's length in search terms.
CREATE TABLE recall_messages (
    tenant       text   COLLATE "C" NOT NULL,
    conversation text   COLLATE "C" NOT NULL,
    seq          bigint NOT NULL,
    dl           int    NOT NULL,
    body         bytea  NOT NULL,
    PRIMARY KEY (tenant, conversation, seq)
);

-- Search postings: which message holds a term, how often, with what the
-- ranking needs from the message (its length and time) alongside.
CREATE TABLE recall_postings (
    tenant       text   COLLATE "C" NOT NULL,
    conversation text   COLLATE "C" NOT NULL,
    seq          bigint NOT NULL,
    term         text   COLLATE "C" NOT NULL,
    tf           int    NOT NULL,
    dl           int    NOT NULL,
    created_at   bigint NOT NULL,
    PRIMARY KEY (tenant, conversation, seq, term)
);
CREATE INDEX recall_postings_term ON recall_postings (tenant, term);

-- Leases serialise work on a name across replicas; a row lives while it
-- is held and is taken over once expired. UNLOGGED: taking and releasing
-- a lease writes no WAL and waits for no flush (two of a chat request's
-- round trips); a database crash empties the table, which frees every
-- lease early, and what a lease protects stays safe: commits still check
-- the conversation's Version.
CREATE UNLOGGED TABLE recall_leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);
