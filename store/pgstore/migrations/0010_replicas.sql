-- Version 10: the replicas sharing the database (package fleet), one row
-- a running replica: its id, the base URL at which the others reach it
-- (replica_url) and when it last said it was alive, by the database's
-- clock, so that the replicas' clocks need not agree. A replica upserts
-- its row every second and reads those seen within the last few; its
-- row goes when it stops, and a row an hour old (a replica killed) is
-- deleted by whichever replica's heartbeat finds it. UNLOGGED: a
-- heartbeat writes no WAL and waits for no flush; a database crash
-- empties the table, and the next heartbeats fill it again.
CREATE UNLOGGED TABLE recall_replicas (
    id      text        COLLATE "C" PRIMARY KEY,
    url     text        NOT NULL,
    seen_at timestamptz NOT NULL
);
